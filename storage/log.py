"""A partition's log: segments, appends, rolls, durability (Kafka's UnifiedLog; reads and lookups in kafkalite_storage.log_reads,
leader epochs and partition.metadata in kafkalite_storage.log_epochs, recovery at open in kafkalite_storage.loader).

Theory of operation. Segments are kept sorted by base offset; the last one is active and takes appends.
`append` validates one record batch (structure, CRC-32C, size, producer sequence) *before* writing anything,
then writes the client's bytes verbatim with BaseOffset and PartitionLeaderEpoch patched (neither is covered
by the CRC); only LogAppendTime topics rewrite MaxTimestamp + the timestamp-type bit and recompute the CRC.
The 61-byte patched header and the untouched body go to the page cache in one pwritev; fsync happens only in
`flush()` (safe from a worker thread) or when flush.messages / flush.ms say so. The log end offset is the last
batch's last offset + 1; on a single node the high watermark equals it.

Reads return whole batches as file regions `(handle, position, length)` for os.sendfile, starting with the
batch that holds the requested offset; the handle (kafkalite_storage.handles.FileHandle) opens its file on demand and
is pinned by the sender while it runs, so no descriptor is held per partition. Timestamp lookups use the time index, then the records' own timestamps.

Opening: leftover `.cleaned`/`.deleted` files are removed and `.swap` files completed (Kafka's LogLoader);
after an unclean stop every segment from the recovery point on is validated batch by batch, truncated at the
first invalid or torn batch (later segments deleted) and its indexes rebuilt. After a clean stop indexes are
trusted after a cheap sanity check. Producer state comes from the newest snapshot plus a replay of the log.

Disk faults. An append is transactional: the fallible writes (a roll's files, the leader-epoch checkpoint,
the segment's log bytes and index entries, a transaction-index entry, an fsync due by flush.messages) run
before the in-memory state (log end offset, producer state) changes, and a failed one is undone on disk
before KafkaStorageError (KAFKA_STORAGE_ERROR) is raised: no orphan bytes stay behind, so the next append,
once space returns, continues at the same offset. If the undo itself fails the partition goes offline
(`offline` holds why; every append and read raises LogOfflineError, logged once) until a restart recovers it
from its recovery point, as Kafka takes a log dir offline.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafkalite_storage import fs, retention
from kafkalite_storage.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_ABORT,
    HEADER_SIZE,
    PARTITION_LEADER_EPOCH_OFFSET,
    BatchHeader,
    crc32c,
    parse_control_marker,
    require_keys,
    validate_batch,
)
from kafkalite_storage.config import LogConfig
from kafkalite_storage.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    LogOfflineError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RollbackFailedError,
    StorageError,
)
from kafkalite_storage.log_epochs import LeaderEpochs
from kafkalite_storage.log_reads import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, LogReads
from kafkalite_storage.producer_state import CompletedTxn, ProducerStateManager
from kafkalite_storage.segment import LogSegment, segment_name
from kafkalite_storage.staging import StagedBatch, stamp_log_append_time
from kafkalite_storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_UI = struct.Struct(">I")

FD_GRACE_S = 1.0  # minimum time a removed segment's descriptors stay open


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Result of one append. `log_append_time_ms` is -1 for CreateTime topics."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    duplicate: bool = False


class PartitionLog(LogReads, LeaderEpochs):
    """One `<topic>-<partition>` directory. Reads and lookups are in kafkalite_storage.log_reads, the topic id and
    leader epochs in kafkalite_storage.log_epochs; recovery at open in kafkalite_storage.loader, retention in kafkalite_storage.retention."""

    def __init__(
        self,
        directory: str,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        config: LogConfig,
    ) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.config = config
        # (segments, base offsets), replaced as a whole under _lock (copy-on-write): readers take one
        # consistent snapshot without locking while retention runs in a worker thread
        self._view: tuple[tuple[LogSegment, ...], tuple[int, ...]] = ((), ())
        self._doomed: list[tuple[float, LogSegment]] = []  # deleted segments whose fds may still be in use
        self._leo = 0
        self.log_start_offset = 0
        self.recovery_point = 0
        self.cleaner_checkpoint = 0  # compaction done below this offset (cleaner-offset-checkpoint)
        self.producer_state = ProducerStateManager(directory)
        self.leader_epochs: list[tuple[int, int]] = []
        self._lock = threading.Lock()  # guards the segment list against a concurrent flush()
        # one retention or compaction pass at a time (both run in worker threads; never taken by the owner)
        self.housekeeping = threading.Lock()
        self._unflushed = 0
        self._last_flush_ms = _now()
        self._meta_dirty: set[str] = set()
        self._dir_dirty = False
        self.closed = False
        self.offline: str | None = None  # why the partition is offline (a failed rollback), or None
        # a replicated partition's high watermark (min log end offset over the in-sync replicas), set by the
        # replication layer above storage; None: a single replica, whose high watermark is its log end offset
        self.hw_limit: int | None = None

    # ---- properties ------------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        hw = self.hw_limit
        return self._leo if hw is None or hw > self._leo else hw

    @property
    def last_stable_offset(self) -> int:
        """min(first unstable offset, high watermark); an open transaction whose first batch retention or
        DeleteRecords removed counts from the log start offset (Kafka's maybeIncrementFirstUnstableOffset)."""
        first = self.producer_state.first_unstable_offset()
        hw = self.high_watermark
        return hw if first is None else min(max(first, self.log_start_offset), hw)

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic settings (AlterConfigs); they take effect from the next append/roll."""
        self.config = config

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._view[0])

    @property
    def active(self) -> LogSegment:
        return self._view[0][-1]

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._view[0])

    # ---- creation / loading ------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        directory: str,
        topic: str,
        partition: int,
        topic_id: uuid.UUID | None,
        config: LogConfig,
        *,
        leader_epoch: int | None = 0,
    ) -> PartitionLog:
        fs.makedirs(directory, exist_ok=True)
        self = cls(directory, topic, partition, topic_id, config)
        if topic_id is not None:
            self.set_topic_id(topic_id)
        self._add_segment(self._new_segment(0, _now()))
        if leader_epoch is not None and leader_epoch >= 0:
            self._assign_epoch(leader_epoch, 0)
        return self

    @classmethod
    def open(
        cls,
        directory: str,
        topic: str,
        partition: int,
        config: LogConfig,
        *,
        clean: bool,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        topic_id: uuid.UUID | None = None,
    ) -> PartitionLog:
        from kafkalite_storage.loader import load_log  # first log load: a clean start defers it

        return load_log(cls, directory, topic, partition, config, clean=clean,
                        recovery_point=recovery_point, log_start_offset=log_start_offset, topic_id=topic_id)

    def _new_segment(self, base: int, now: int) -> LogSegment:
        """A fresh active segment at `base` with preallocated indexes (not yet in the segment list)."""
        cfg = self.config
        seg = LogSegment(self.dir, base, index_interval_bytes=cfg.index_interval_bytes,
                         max_index_size=cfg.segment_index_bytes, now_ms=now, create=True)
        try:
            seg.offset_index.resize(cfg.segment_index_bytes)
            seg.time_index.resize(cfg.segment_index_bytes)
        except OSError:
            seg.delete()  # no half-made segment stays behind
            raise
        self._dir_dirty = True  # the new files' directory entries are made durable by the next flush
        return seg

    def _add_segment(self, seg: LogSegment) -> None:
        with self._lock:
            segs = self._view[0] + (seg,)
            self._view = (segs, tuple(s.base_offset for s in segs))
            self._leo = seg.next_offset

    def _remove_segments(self, dropped: list[LogSegment], *, defer: bool) -> None:
        """Take segments out of the list (by identity, against the list as it is now: a concurrent roll in
        the owner thread is kept); they are renamed `.deleted` and closed later if `defer`. Segments no
        longer in the list (another thread removed them meanwhile) are left alone."""
        gone = {id(s) for s in dropped}
        with self._lock:
            dropped = [s for s in self._view[0] if id(s) in gone]
            keep = tuple(s for s in self._view[0] if id(s) not in gone)
            self._view = (keep, tuple(s.base_offset for s in keep))
        for seg in dropped:
            if defer:
                try:
                    seg.mark_deleted()
                except OSError as exc:  # still doomed: its files go by their current names, fds closed later
                    log.warning("%s: could not rename segment %d to .deleted: %s", self.dir, seg.base_offset, exc)
        if defer:
            self.doom(dropped)
        else:
            for seg in dropped:
                seg.delete()

    def doom(self, segments: list[LogSegment]) -> None:
        """Queue segments (already out of the segment list, files renamed `.deleted`) for deletion after
        file.delete.delay.ms; their descriptors keep serving reads handed out before."""
        deadline = time.monotonic() + self.config.file_delete_delay_ms / 1000
        with self._lock:
            self._doomed += [(deadline, seg) for seg in segments]

    def purge_deleted(self, force: bool = False) -> int:
        """Remove `.deleted` segments whose file.delete.delay.ms has passed (or all if `force`). Their files
        are unlinked then; descriptors are closed at least FD_GRACE_S later, so that a read that picked the
        segment just before it left the list never sees a closed descriptor even with a zero delay."""
        now = time.monotonic()
        gone = 0
        with self._lock:
            doomed, self._doomed = self._doomed, []
        keep = []
        for deadline, seg in doomed:
            if force or deadline + FD_GRACE_S <= now:
                seg.delete()
                gone += 1
            else:
                if deadline <= now:
                    seg.unlink_files()
                keep.append((deadline, seg))
        with self._lock:
            self._doomed = keep + self._doomed
        return gone

    # ---- append ------------------------------------------------------------------------------------
    def append(
        self,
        batch: bytes | bytearray | memoryview,
        leader_epoch: int | None = 0,
        now_ms: int | None = None,
        *,
        validate_producer: bool = True,
        assign_offsets: bool = True,
        records_checked: bool = False,
        staged: StagedBatch | None = None,
    ) -> AppendInfo:
        """Append exactly one record batch.

        `validate_producer=False` is the coordinator path: control batches allowed, no sequence checks.
        `records_checked=True` says the caller has already walked every record the way Kafka's LogValidator
        does (the broker's produce path, kafkalite.validation, which also refuses keyless records on compacted
        topics, in a worker thread for large compressed batches): the log then skips its own walk of the
        records for keys, which would inflate a compressed batch a second time, on the caller's thread.
        `assign_offsets=False` keeps the batch's own BaseOffset (must be >= the log end offset; tools and
        tests that reproduce a log, a follower replica copying its leader) and its timestamps, even under
        LogAppendTime (the leader stamped them), so the stored bytes are the source's.
        `leader_epoch=None` keeps the batch's PartitionLeaderEpoch; otherwise the batch gets
        max(leader_epoch, latest epoch in leader-epoch-checkpoint), so epochs never decrease.
        `staged`: the batch was checked and written by `kafkalite_storage.staging.stage` (call `append_staged`).
        """
        if self.closed or self.offline is not None:
            self._refuse()
        now = _now() if now_ms is None else now_ms
        mv = memoryview(batch)
        hdr = validate_batch(mv, exact_count=assign_offsets) if staged is None else staged.header
        if hdr.size > self.config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {hdr.size} bytes exceeds max.message.bytes {self.config.max_message_bytes}"
            )
        if hdr.is_control and validate_producer:
            raise InvalidRecordError("clients may not send control batches")
        lat = self.config.log_append_time and assign_offsets   # a reproduced batch keeps its own timestamps
        if not lat and hdr.max_timestamp >= 0 and (
            min(hdr.base_timestamp, hdr.max_timestamp) < now - self.config.message_timestamp_before_max_ms
            or hdr.max_timestamp > now + self.config.message_timestamp_after_max_ms
        ):
            # Kafka checks every record; the header bounds them without decoding (first record, max)
            raise InvalidTimestampError(f"timestamps of the batch are outside the accepted range at {now}")
        if validate_producer and self.config.compact and not records_checked:
            require_keys(mv)
        if hdr.size > self.config.segment_bytes:   # Kafka's UnifiedLog.append, after validation
            raise RecordBatchTooLargeError(
                f"Message batch size is {hdr.size} bytes, which exceeds the maximum configured segment size of "
                f"{self.config.segment_bytes}."
            )
        marker: tuple[int, int] | None = None
        if hdr.is_control:
            marker = parse_control_marker(mv)
        if hdr.has_producer_id:
            if marker is not None:
                self.producer_state.check_marker(hdr.producer_id, hdr.producer_epoch, marker[1])
            else:
                dup = self.producer_state.check(hdr, client=validate_producer)
                if dup is not None:
                    return AppendInfo(dup.first_offset, dup.last_offset, dup.timestamp if lat else -1,
                                      self.log_start_offset, duplicate=True)
        base = self._leo if assign_offsets else hdr.base_offset
        if base < self._leo:
            raise InvalidRecordError(f"batch base offset {base} is below the log end offset {self._leo}")
        last = base + hdr.last_offset_delta
        head = bytearray(mv[:HEADER_SIZE] if staged is None else staged.head)
        _Q.pack_into(head, 0, base)
        if leader_epoch is not None:
            # epochs in a log never go down: a directory written by Kafka may already be at epoch N > 0
            leader_epoch = max(leader_epoch, self.latest_epoch())
            _I.pack_into(head, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
        epoch = _I.unpack_from(head, PARTITION_LEADER_EPOCH_OFFSET)[0]
        max_ts = hdr.max_timestamp
        append_time = -1
        if lat:
            append_time = max_ts = now
            if staged is None:   # (a staged batch was stamped, its CRC computed, by stage())
                stamp_log_append_time(head, now)
                crc = crc32c(mv[HEADER_SIZE:], crc32c(memoryview(head)[ATTRIBUTES_OFFSET:]))
                _UI.pack_into(head, 17, crc)
        seg = self.active
        try:
            # fallible steps first; each leaves the log as it was when it fails (see the module docstring)
            if staged is None and seg.should_roll(hdr.size, max_ts, last, now, self.config.segment_bytes,
                                                  self.config.segment_ms - self.config.segment_jitter_ms):
                seg = self._roll(base, now)
            if epoch >= 0:
                self._assign_epoch(epoch, base)  # before the data, as Kafka's UnifiedLog.append
            if staged is None:
                seg.append([head, mv[HEADER_SIZE:]], hdr.size, last, max_ts, last)
            else:
                seg = self._adopt(staged, head, base, last, max_ts, now)
        except RollbackFailedError as exc:
            self._go_offline(str(exc))
            raise
        except OSError as exc:
            raise KafkaStorageError(f"append to {self.topic}-{self.partition} failed: {exc}") from exc
        self._unflushed += hdr.records_count
        if marker is not None or self._unflushed >= self.config.flush_messages or (
                now - self._last_flush_ms >= self.config.flush_ms):
            self._finish_append(seg, hdr, marker, last, now)
        self._leo = last + 1
        if hdr.has_producer_id:
            if marker is not None:
                self.producer_state.complete_marker(hdr.producer_id, hdr.producer_epoch, marker[1],
                                                    last, max_ts, marker[0] == CONTROL_ABORT)
            else:
                self.producer_state.update(hdr, base, max_ts)
        return AppendInfo(base, last, append_time, self.log_start_offset)

    def append_staged(self, staged: StagedBatch, leader_epoch: int | None = 0, now_ms: int | None = None, *,
                      records_checked: bool = False) -> AppendInfo:
        """Append a client batch that `kafkalite_storage.staging.stage` wrote to this log's directory: the
        checks of `append` against the log as it is now, then its file becomes a new segment at the log end
        offset (see kafkalite_storage.staging). The stage is used up either way (adopted, or discarded when the
        batch is refused, a duplicate, or the append fails). If the topic's timestamp type changed since
        the batch was staged, it is appended the ordinary way instead."""
        try:
            if self.closed or self.offline is not None:
                self._refuse()
            stamped = staged.log_append_time
            if self.config.log_append_time != (stamped is not None):
                return self.append(staged.batch, leader_epoch, now_ms, records_checked=records_checked)
            return self.append(staged.batch, leader_epoch, stamped if stamped is not None else now_ms,
                               records_checked=records_checked, staged=staged)
        finally:
            staged.discard()   # (nothing to do once adopted)

    def _adopt(self, staged: StagedBatch, head: bytearray, base: int, last: int, max_ts: int,
               now: int) -> LogSegment:
        """Roll to a new segment at `base` (or keep an empty active one there) whose `.log` becomes the
        staged file, its header patched first."""
        f = staged.file
        if f.pwrite(head, 0) != HEADER_SIZE:
            raise OSError(28, "short write of a staged batch's header")
        seg = self._roll(base, now)   # OSError: the old segment stays active, the stage is discarded
        try:
            seg.adopt_file(f, staged.header.size, last, max_ts)   # OSError: an empty active segment, as after a roll
        finally:
            staged.adopted = seg.file is f   # the segment owns the file from its rename on
        self._dir_dirty = True
        return seg

    def _finish_append(self, seg: LogSegment, hdr: BatchHeader, marker: tuple[int, int] | None, last: int,
                       now: int) -> None:
        """The fallible steps after the data is written (an aborted transaction's `.txnindex` entry, an fsync
        due by flush.messages/flush.ms); a failure undoes the segment append and raises KafkaStorageError."""
        old_leo, txn_entries = self._leo, len(seg.txn_index.entries)
        try:
            if marker is not None and hdr.has_producer_id and marker[0] == CONTROL_ABORT:
                done = self.producer_state.peek_completed(hdr.producer_id, last)
                if done is not None:
                    self._record_abort(seg, done)
            if self._unflushed >= self.config.flush_messages or now - self._last_flush_ms >= self.config.flush_ms:
                self._leo = last + 1
                self.flush()
        except (OSError, StorageError) as exc:
            self._leo = old_leo
            self._unflushed -= hdr.records_count
            try:
                seg.txn_index.truncate_to_entries(txn_entries)
                seg.undo_append()
            except (OSError, RollbackFailedError) as exc2:
                self._go_offline(f"cannot undo a failed append: {exc2}")
                raise LogOfflineError(self.offline or "") from exc
            raise KafkaStorageError(f"append to {self.topic}-{self.partition} failed: {exc}") from exc

    def _go_offline(self, reason: str) -> None:
        if self.offline is None:
            self.offline = reason
            log.error("%s-%d is offline until the next restart: %s", self.topic, self.partition, reason)

    def append_control(
        self,
        control_type: int,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        leader_epoch: int | None = 0,
        now_ms: int | None = None,
    ) -> AppendInfo:
        """Write a transaction marker (ABORT=0, COMMIT=1) for `producer_id` (transaction coordinator)."""
        from kafkalite_storage.testing import encode_control_batch  # first transaction end: not at start

        now = _now() if now_ms is None else now_ms
        b = encode_control_batch(control_type, producer_id=producer_id, producer_epoch=producer_epoch,
                                 coordinator_epoch=coordinator_epoch, timestamp=now)
        return self.append(b, leader_epoch, now, validate_producer=False)

    def _record_abort(self, seg: LogSegment, done: CompletedTxn) -> None:
        lso = self.producer_state.last_stable_offset_after(done)
        seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset, lso))

    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Force a new active segment at the log end offset (no-op if the active one is empty)."""
        if self.active.size == 0:
            return self.active
        return self._roll(self._leo, _now() if now_ms is None else now_ms)

    def _roll(self, base: int, now: int) -> LogSegment:
        old = self.active
        if old.size == 0 and old.base_offset == base:
            # a batch larger than segment.bytes makes shouldRoll true even for an empty segment; Kafka then
            # replaces the empty segment by a new one at the same offset (KAFKA-6388): keep the one we have
            return old
        old.on_become_inactive()  # OSError: the old segment stays active; the next append rolls again
        self._meta_dirty.add(self.producer_state.take_snapshot(base, sync=False))
        seg = self._new_segment(base, now)
        leo = self._leo
        self._add_segment(seg)
        self._leo = leo
        return seg

    # ---- truncation, deletion of records ---------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (whole batches)."""
        retention.truncate_to(self, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start an empty log at `offset`."""
        retention.truncate_fully_and_start_at(self, offset)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset forward (<= high watermark); drop whole segments below."""
        return retention.delete_records_before(self, offset)

    def delete_old_segments(self, now_ms: int | None = None, *,
                            run_on_owner: retention.RunOnOwner | None = None) -> int:
        """One retention pass (log start offset, retention.bytes, retention.ms: kafkalite_storage.retention);
        returns the number of segments deleted. When every segment is expired the active one is rolled first
        and deleted too: from a worker thread, pass `run_on_owner` (runs a function on the thread that
        appends), as the roll belongs to that thread."""
        return retention.delete_old_segments(self, _now() if now_ms is None else now_ms, run_on_owner)

    def roll_for_retention(self, expected: LogSegment, log_end_offset: int, now_ms: int) -> LogSegment | None:
        """(Owner thread.) Kafka's roll before retention deletes every segment: a new empty active segment at
        the log end offset, if `expected` is still the active segment and nothing was appended since it was
        judged (the log end offset is still `log_end_offset`). None when not so, or when the roll failed
        (logged; the next pass tries again)."""
        if (self.closed or self.offline is not None or self.active is not expected or expected.size == 0
                or self._leo != log_end_offset):
            return None
        try:
            seg = self._roll(log_end_offset, now_ms)
        except OSError as exc:
            log.warning("%s-%d: could not roll the expired active segment %d: %s", self.topic, self.partition,
                        expected.base_offset, exc)
            return None
        log.info("%s-%d: rolled the expired active segment %d at %d to delete it", self.topic, self.partition,
                 expected.base_offset, log_end_offset)
        return seg

    def advance_log_start(self, offset: int) -> None:
        """(Owner thread.) Move the log start offset forward to `offset` (never back); the leader epochs
        follow (Kafka's maybeIncrementLogStartOffset)."""
        if offset > self.log_start_offset and not self.closed:
            self.log_start_offset = offset
            self._truncate_epochs_from_start(offset)

    # ---- durability ------------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync every segment that may hold unflushed data; advances the recovery point. Thread-safe."""
        with self._lock:
            leo = self._leo
            all_segs = self._view[0]
            segs = [s for i, s in enumerate(all_segs)
                    if i + 1 == len(all_segs) or all_segs[i + 1].base_offset > self.recovery_point]
        self._fsync_segments(segs)
        self.recovery_point = max(self.recovery_point, leo)
        self._unflushed = 0
        self._last_flush_ms = _now()

    def _fsync_segments(self, segs: list[LogSegment]) -> None:
        """fsync each segment (one closed meanwhile by retention or compaction is skipped), then the metadata."""
        for seg in segs:
            try:
                seg.flush()
            except OSError:
                if not seg.closed:
                    raise
        self._sync_meta()

    def flush_rolled(self, *, sync: bool = True) -> Callable[[], None]:
        """fsync segments that were rolled since the last flush and move the recovery point to the active
        segment's base (Kafka flushes a rolled segment in the background). Call from a worker thread.

        With `sync=False` only the bookkeeping is done (what is pending counts as synced): the caller makes
        the whole file system durable right after, before it persists the recovery point; if that fails it
        calls the returned function, which puts the bookkeeping back (pending again, old recovery point)."""
        with self._lock:
            segs = self._view[0]
            active_base = segs[-1].base_offset
            todo = [s for i, s in enumerate(segs[:-1]) if segs[i + 1].base_offset > self.recovery_point]
        old_rp = self.recovery_point
        if sync:
            self._fsync_segments(todo)
            undo = _nothing
        else:
            meta, dir_dirty = self._meta_dirty, self._dir_dirty
            for seg in todo:
                seg.mark_synced()
            self._meta_dirty = set()
            self._dir_dirty = False

            def undo() -> None:
                for seg in todo:
                    seg.mark_unsynced()
                self._meta_dirty |= meta
                self._dir_dirty = self._dir_dirty or dir_dirty
                self.recovery_point = min(self.recovery_point, old_rp)

        self.recovery_point = max(self.recovery_point, active_base)
        return undo

    @property
    def rolled_unsynced(self) -> bool:
        """Whether `flush_rolled` has anything to fsync (small metadata files, a new directory entry, or
        segments rolled since the recovery point)."""
        segs = self._view[0]
        return bool(self._meta_dirty or self._dir_dirty or segs[-1].base_offset > self.recovery_point)

    def close(self, clean: bool = True, *, sync: bool = True) -> None:
        """Clean close: flush, producer snapshot at the log end offset, final time-index entries, trim.

        Every file is closed even when a step fails (a full or failing disk); the first failure is raised
        afterwards as KafkaStorageError, so the caller leaves out the clean-shutdown marker and the next
        start recovers. An offline partition is closed without touching its files, and raises too.

        With `sync=False` nothing is fsynced: the caller makes the whole file system durable at once
        afterwards (LogManager.close: one syncfs instead of several fsyncs per partition), and writes the
        marker only if that succeeds."""
        if self.closed:
            return
        failed: BaseException | None = None
        if self.offline is not None:
            clean = False
            failed = LogOfflineError(f"{self.topic}-{self.partition} is offline: {self.offline}")
        if clean:
            def flush() -> None:
                if sync:
                    self.flush()
                else:
                    self.recovery_point = max(self.recovery_point, self._leo)

            def snapshot() -> None:
                if not os.path.exists(self.producer_state.snapshot_path(self._leo)):
                    self.producer_state.take_snapshot(self._leo, sync=sync)   # Kafka: only if there is news

            steps: list[Callable[[], object]] = [flush, snapshot]
            steps += [functools.partial(seg.close, sync=sync) for seg in self._view[0]]
            for step in steps:
                try:
                    step()
                except (OSError, StorageError) as exc:
                    failed = failed or exc
        else:
            for seg in self._view[0]:
                seg.close_without_final_entry()
        try:
            self.purge_deleted(force=True)
        except OSError as exc:
            failed = failed or exc
        self.closed = True
        if failed is not None:
            raise KafkaStorageError(f"closing {self.topic}-{self.partition}: {failed}") from failed

    def delete(self, close_files: bool = True) -> list[LogSegment]:
        """Remove the partition directory (renamed to `<dir>.<uuid hex>-delete` first, as Kafka does).

        With `close_files=False` the segments' descriptors stay open (the files are already unlinked) so
        that file regions handed out by `read` remain valid; the caller closes the returned segments later.
        """
        if not self.closed:
            if close_files:
                self.close(clean=False)
            else:
                self.closed = True
        with self._lock:
            segs = list(self._view[0]) + [s for _d, s in self._doomed]
            self._doomed = []
        if not close_files:
            for seg in segs:
                seg.hold_descriptors()
        target = f"{self.dir}.{uuid.uuid4().hex}-delete"
        try:
            os.rename(self.dir, target)
        except FileNotFoundError:
            return segs
        shutil.rmtree(target, ignore_errors=True)
        return segs

    def __repr__(self) -> str:
        return f"PartitionLog({self.topic}-{self.partition}, start={self.log_start_offset}, leo={self._leo})"


def _nothing() -> None:
    return None


def _now() -> int:
    return time.time_ns() // 1_000_000


__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP", "AppendInfo", "PartitionLog", "segment_name"]
