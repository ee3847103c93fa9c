"""A partition log's metadata files: its topic id (`partition.metadata`) and leader epochs
(`leader-epoch-checkpoint`, Kafka's LeaderEpochFileCache), a mixin of kafkalite_storage.log.PartitionLog.

Theory of operation. Each (epoch, start offset) entry says from which offset on a leader epoch's batches are;
entries grow in both. A new epoch is appended by the append path when a batch carries a higher epoch than
the last; truncation (recovery, truncate_to) drops entries past the new log end, and a log start offset moved
forward (retention, DeleteRecords, at load) drops those before it, keeping the epoch in force there as starting
at the log start offset. A damaged or missing file is rebuilt from the batches' PartitionLeaderEpoch fields at
load. The small files are replaced atomically at
once but made durable by the next flush or checkpoint (`_sync_meta`), off the appending thread, as Kafka
3.7+ defers the leader-epoch checkpoint's fsync.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable

from kafkalite_storage.checkpoints import (
    fsync_dir,
    read_leader_epochs,
    read_partition_metadata,
    sync_file,
    write_leader_epochs,
    write_partition_metadata,
)
from kafkalite_storage.segment import LogSegment

log = logging.getLogger("kafkalite_storage.log")


class LeaderEpochs:
    """Topic id and leader epochs of a PartitionLog (which provides the attributes below)."""

    dir: str
    topic_id: uuid.UUID | None
    leader_epochs: list[tuple[int, int]]
    _view: tuple[tuple[LogSegment, ...], tuple[int, ...]]
    _leo: int
    _meta_dirty: set[str]
    _dir_dirty: bool

    def _read_metadata(self) -> bool:
        """Topic id and leader epochs from their files; False when the leader-epoch checkpoint is damaged or
        missing (the loader rebuilds it from the batches). A damaged `partition.metadata` leaves the topic id unknown
        (whoever knows it rewrites the file with `set_topic_id`)."""
        meta = os.path.join(self.dir, "partition.metadata")
        tid = read_partition_metadata(meta)
        if tid is not None:
            self.topic_id = tid
        elif os.path.exists(meta):
            log.warning("%s: ignoring unreadable partition.metadata", self.dir)
        epoch_file = os.path.join(self.dir, "leader-epoch-checkpoint")
        epochs = read_leader_epochs(epoch_file)
        if epochs is None or not os.path.exists(epoch_file):
            log.warning("%s: leader-epoch-checkpoint is %s; rebuilding it from the batches", self.dir,
                        "damaged" if epochs is None else "missing")
            self.leader_epochs = []
            return False
        # as Kafka's LeaderEpochFileCache.assign: entries must grow in both epoch and start offset
        self.leader_epochs = []
        for e, o in epochs:
            while self.leader_epochs and (self.leader_epochs[-1][0] >= e or self.leader_epochs[-1][1] > o):
                self.leader_epochs.pop()
            self.leader_epochs.append((e, o))
        return True

    def rebuild_leader_epochs(self) -> None:
        """Leader epochs from the batches' PartitionLeaderEpoch fields (a damaged checkpoint)."""
        epochs: list[tuple[int, int]] = []
        for seg in self._view[0]:
            for _pos, hdr in seg.batches():
                if hdr.partition_leader_epoch >= 0 and (not epochs or hdr.partition_leader_epoch > epochs[-1][0]):
                    epochs.append((hdr.partition_leader_epoch, hdr.base_offset))
        self.leader_epochs = epochs
        try:
            self._write_meta("leader-epoch-checkpoint", lambda p: write_leader_epochs(p, epochs, False))
        except OSError as exc:
            log.warning("%s: could not rewrite leader-epoch-checkpoint: %s", self.dir, exc)

    # ---- leader epochs ---------------------------------------------------------------------------
    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        """A new epoch starting at `start_offset`; the checkpoint is written first (OSError: nothing changed)."""
        if self.leader_epochs and epoch <= self.leader_epochs[-1][0]:
            return
        new = [*self.leader_epochs, (epoch, start_offset)]
        self._write_meta("leader-epoch-checkpoint", lambda p: write_leader_epochs(p, new, False))
        self.leader_epochs = new

    def _truncate_epochs(self, end_offset: int, *, keep_at_end: bool = False) -> None:
        """Drop epochs starting at or after `end_offset` (after `end_offset` with `keep_at_end`: at load,
        an epoch that began at the log end offset and has no records yet is still valid)."""
        keep = [(e, o) for e, o in self.leader_epochs if o < end_offset or (keep_at_end and o == end_offset)]
        if keep != self.leader_epochs:
            self.leader_epochs = keep
            try:
                self._write_meta("leader-epoch-checkpoint", lambda p: write_leader_epochs(p, keep, False))
            except OSError as exc:
                # the file keeps epochs past the log end; they are dropped again at the next load
                log.warning("%s: could not rewrite leader-epoch-checkpoint: %s", self.dir, exc)

    def _truncate_epochs_from_start(self, start_offset: int) -> None:
        """The log start offset moved to `start_offset` (retention, DeleteRecords): entries starting at or
        below it go, the last of them kept as starting at `start_offset` (Kafka's truncateFromStart)."""
        below = [e for e in self.leader_epochs if e[1] <= start_offset]
        if not below or below == [(below[-1][0], start_offset)]:
            return
        keep = [(below[-1][0], start_offset)] + [e for e in self.leader_epochs if e[1] > start_offset]
        self.leader_epochs = keep
        try:
            self._write_meta("leader-epoch-checkpoint", lambda p: write_leader_epochs(p, keep, False))
        except OSError as exc:
            # the file keeps the older entries; the next load truncates them again
            log.warning("%s: could not rewrite leader-epoch-checkpoint: %s", self.dir, exc)

    def set_topic_id(self, topic_id: uuid.UUID) -> None:
        """Record the topic id in `partition.metadata` (fsynced with the next flush)."""
        self.topic_id = topic_id
        self._write_meta("partition.metadata", lambda p: write_partition_metadata(p, topic_id, False))

    def _write_meta(self, name: str, write: Callable[[str], None]) -> None:
        """Small metadata files are replaced atomically at once but fsynced by the next flush/checkpoint
        (off the appending thread), as Kafka 3.7+ does for the leader-epoch checkpoint."""
        path = os.path.join(self.dir, name)
        write(path)
        self._meta_dirty.add(path)

    def _sync_meta(self) -> None:
        dirty, self._meta_dirty = self._meta_dirty, set()
        try:
            for path in sorted(dirty):
                sync_file(path)
            if self._dir_dirty:
                fsync_dir(self.dir)
                self._dir_dirty = False
        except OSError:
            self._meta_dirty |= dirty  # still to be made durable by the next flush
            raise

    def latest_epoch(self) -> int:
        return self.leader_epochs[-1][0] if self.leader_epochs else -1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= requested, its end offset) or (-1, -1)."""
        best = -1
        for i, (e, _o) in enumerate(self.leader_epochs):
            if e <= epoch:
                best = i
        if best < 0:
            # older than every known epoch (the log start moved past it): Kafka answers the requested epoch and
            # the first known epoch's start offset
            return (epoch, self.leader_epochs[0][1]) if self.leader_epochs and epoch >= 0 else (-1, -1)
        e = self.leader_epochs[best][0]
        end = self.leader_epochs[best + 1][1] if best + 1 < len(self.leader_epochs) else self._leo
        return e, end
