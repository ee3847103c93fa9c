"""Opening a partition directory (Kafka's LogLoader): leftovers, sanity checks, recovery, producer state.

1. Leftover files: `*.cleaned`, `*.deleted` and `*.tmp` are deleted; a `<base>.log.swap` (a compaction or
   split that finished writing but not swapping) replaces the segments whose offsets it covers, its indexes
   are rebuilt; index files without a `.log` are deleted.
2. Each segment: if its indexes are missing or fail the sanity check (size not a multiple of the entry size,
   last entry offset below the base, last position past the end of the log), or the previous stop was unclean
   and the segment may hold data after the recovery point, every batch is validated and the indexes are
   rebuilt (LogSegment.recover). A recovery that truncates deletes every later segment.
3. The active segment's indexes are preallocated again; the producer state is loaded from the newest
   snapshot <= log end offset and the log is replayed from there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
import time
import uuid
from typing import TYPE_CHECKING

from kafkalite_storage import fs
from kafkalite_storage.batch import CONTROL_ABORT, iter_file_batches, parse_control_marker
from kafkalite_storage.config import LogConfig
from kafkalite_storage.segment import LogSegment, segment_name
from kafkalite_storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from kafkalite_storage.log import PartitionLog

log = logging.getLogger(__name__)

_LOG_RE = re.compile(r"^(\d{20})\.log$")
_SWAP_RE = re.compile(r"^(\d{20})\.log\.swap$")
_IDX_RE = re.compile(r"^(\d{20})\.(index|timeindex|txnindex)$")


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        fs.unlink(path)


def cleanup_leftovers(directory: str) -> None:
    names = os.listdir(directory)
    for name in names:
        if name.endswith((".cleaned", ".deleted", ".tmp")) or (
            name.endswith(".swap") and not name.endswith(".log.swap")
        ):
            log.info("%s: deleting leftover %s", directory, name)
            _unlink(os.path.join(directory, name))
    for name in names:
        m = _SWAP_RE.match(name)
        if not m:
            continue
        base = int(m.group(1))
        swap = os.path.join(directory, name)
        fd = os.open(swap, os.O_RDONLY)
        try:
            nxt = base
            for _p, hdr in iter_file_batches(fd):
                nxt = hdr.next_offset
        finally:
            os.close(fd)
        for other in os.listdir(directory):
            mo = _LOG_RE.match(other)
            if mo and base <= int(mo.group(1)) < max(nxt, base + 1):
                ob = int(mo.group(1))
                log.info("%s: swap %s replaces segment %d", directory, name, ob)
                for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                    _unlink(os.path.join(directory, segment_name(ob, suffix)))
        for suffix in (".index", ".timeindex"):
            _unlink(os.path.join(directory, segment_name(base, suffix)))
        fs.rename(swap, os.path.join(directory, segment_name(base, ".log")))
    bases = {int(m.group(1)) for m in map(_LOG_RE.match, os.listdir(directory)) if m}
    for name in os.listdir(directory):
        m = _IDX_RE.match(name)
        if m and int(m.group(1)) not in bases:
            log.info("%s: deleting orphan index %s", directory, name)
            _unlink(os.path.join(directory, name))


def _index_sane(seg: LogSegment) -> bool:
    """Kafka's sanityCheck, reading only sizes and last entries (indexes stay lazily loaded)."""
    for path, size in ((seg.offset_index.path, 8), (seg.time_index.path, 12)):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return False
        if st.st_size % size:
            return False
        if st.st_size == 0:
            continue
        with open(path, "rb") as f:
            f.seek(st.st_size - size)
            last = f.read(size)
        if size == 8:
            rel, pos = struct.unpack(">ii", last)
            if rel < 0 or pos < 0 or pos >= seg.size or (rel == 0 and st.st_size > 8):
                return False
        else:
            ts, rel = struct.unpack(">qi", last)
            if rel < 0 or (rel == 0 and ts == 0 and st.st_size > 12):
                return False
    return True


def load_log(
    cls: type[PartitionLog],
    directory: str,
    topic: str,
    partition: int,
    config: LogConfig,
    *,
    clean: bool,
    recovery_point: int,
    log_start_offset: int,
    topic_id: uuid.UUID | None,
) -> PartitionLog:
    self = cls(directory, topic, partition, topic_id, config)
    epochs_ok = self._read_metadata()
    if self.topic_id is None and topic_id is not None:
        try:
            self.set_topic_id(topic_id)
        except OSError as exc:
            log.warning("%s: could not write partition.metadata: %s", directory, exc)
    cleanup_leftovers(directory)
    bases = sorted(int(m.group(1)) for m in map(_LOG_RE.match, os.listdir(directory)) if m)
    now = time.time_ns() // 1_000_000   # wall clock in ms, as the log's own
    max_idx = config.segment_index_bytes
    segs = [LogSegment(directory, b, index_interval_bytes=config.index_interval_bytes, max_index_size=max_idx,
                       now_ms=now) for b in bases]
    if not segs:
        segs = [LogSegment(directory, log_start_offset, index_interval_bytes=config.index_interval_bytes,
                           max_index_size=max_idx, now_ms=now, create=True)]
    i = 0
    recovered_from: int | None = None
    while i < len(segs):
        seg = segs[i]
        nxt_base = segs[i + 1].base_offset if i + 1 < len(segs) else None
        unflushed = not clean and (nxt_base is None or nxt_base > recovery_point)
        if unflushed or not _index_sane(seg):
            if not unflushed:
                log.warning("%s: rebuilding indexes of segment %d", directory, seg.base_offset)
            elif recovered_from is None:
                recovered_from = seg.base_offset
            truncated, _hdrs = seg.recover(max_idx, reset_txn_index=unflushed)
            if truncated and i + 1 < len(segs):
                for later in segs[i + 1 :]:
                    log.warning("%s: deleting segment %d after truncated recovery", directory,
                                later.base_offset)
                    later.delete()
                del segs[i + 1 :]
        i += 1
    for seg in segs:
        self._add_segment(seg)
    act = self.active
    act.offset_index.resize(max_idx)
    act.time_index.resize(max_idx)
    self._leo = act.next_offset
    self.log_start_offset = max(log_start_offset, segs[0].base_offset)
    if self.log_start_offset > self._leo:
        self.log_start_offset = segs[0].base_offset
    self.recovery_point = self._leo if clean else min(recovery_point, self._leo)
    if not epochs_ok:
        self.rebuild_leader_epochs()
    self._truncate_epochs(self._leo, keep_at_end=True)
    self._truncate_epochs_from_start(self.log_start_offset)   # as Kafka's LogLoader
    if not clean:
        self.producer_state.delete_snapshots_after(self._leo)
    rebuild_producer_state(self, rebuild_txn_index_from=recovered_from)
    return self


def rebuild_producer_state(plog: PartitionLog, rebuild_txn_index_from: int | None = None) -> None:
    """Newest snapshot <= log end offset, then replay producer batches after it.

    With `rebuild_txn_index_from` (the first recovered segment's base), replay starts from a snapshot at or
    below that offset and every ABORT marker from there on gets its `.txnindex` entry again, as Kafka's
    recovery rebuilds the transaction index from producer state.
    """
    ps = plog.producer_state
    limit = plog.log_end_offset
    if rebuild_txn_index_from is not None:
        limit = min(limit, rebuild_txn_index_from)
    snap = ps.load_latest_snapshot(limit)
    start = snap if snap is not None else plog.log_start_offset
    if start >= plog.log_end_offset:
        return
    for seg, pos, hdr in plog.batches(start):
        if hdr.base_offset < start or not hdr.has_producer_id:
            continue
        if hdr.is_control:
            if hdr.records_count == 0:   # a marker the cleaner emptied (Kafka's RETAIN_EMPTY): nothing to replay
                continue
            try:
                ctype, coord = parse_control_marker(seg.read_batch(pos, hdr))
            except Exception as exc:   # an unreadable marker: the rest of the partition's state still loads
                log.warning("%s: skipping an unreadable control batch at offset %d while rebuilding producer "
                            "state: %s", plog.dir, hdr.base_offset, exc)
                continue
            done = ps.complete_marker(hdr.producer_id, hdr.producer_epoch, coord, hdr.last_offset,
                                      hdr.max_timestamp, ctype == CONTROL_ABORT)
            if (done is not None and done.is_aborted and rebuild_txn_index_from is not None
                    and done.last_offset >= rebuild_txn_index_from):
                lso = ps.last_stable_offset_after(done)
                seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset, lso))
        else:
            ps.update(hdr, hdr.base_offset, hdr.max_timestamp)
