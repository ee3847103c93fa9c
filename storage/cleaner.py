"""Log compaction for `cleanup.policy=compact` (a simplified Kafka LogCleaner).

Theory of operation. The cleanable range is every segment before the active one that lies wholly below the
first uncleanable offset (the active segment's base, the last stable offset, and the first segment younger
than min.compaction.lag.ms). A pass runs only when the bytes written since the last pass (the cleaner
checkpoint, kept in `cleaner-offset-checkpoint`) make up at least min.cleanable.dirty.ratio of that range.

1. Offset map: for every keyed record in the range, its key -> the largest offset holding it.
2. Consecutive segments are grouped so a group's original size fits segment.bytes; each group is rewritten to
   `<first base>.log.cleaned`: a batch whose records all survive (and that needs no new delete horizon) is
   copied verbatim; otherwise it is rebuilt as Kafka's MemoryRecords.filterTo does: same BaseOffset,
   LastOffsetDelta (so the batch keeps its offset range and last sequence), producer fields and codec, the
   surviving records re-encoded against a new BaseTimestamp, a new count, MaxTimestamp and CRC; a batch that
   loses all is dropped. A record survives if it has a key and is the latest for that key; a tombstone (null
   value) also needs its batch's delete horizon not to have passed (KIP-534). The first pass that keeps a
   tombstone in a batch without a horizon writes one: attribute bit 6 (0x40) set and BaseTimestamp = the
   cleaning time + delete.retention.ms (record timestamps stay, their deltas now count from the horizon); a
   later pass removes the tombstone once its time >= that horizon, whatever delete.retention.ms says by then.
   Transactions go as in Kafka's cleaner (CleanedTransactionMetadata): records of aborted transactions are
   removed (and never enter the offset map); committed transactional records are compacted by key like any
   other; a transaction marker whose transaction has no batch left gets a delete horizon like a tombstone and
   goes once it has passed; an ABORT marker keeps its `.txnindex` entry only while its transaction still has
   batches. A batch emptied this way that holds the last write of a still active producer stays as an empty
   batch header (Kafka's RETAIN_EMPTY), so the producer's epoch and sequence survive in the log. kafkalite keeps
   one transaction state for the whole pass where Kafka keeps one per rewritten group: a COMMIT marker whose
   data sits in an earlier group of the same pass stays until that data is gone (a later pass), so a log
   replayed from the start never shows committed data without its marker.
   Records are read by bounded streaming decompression (kafkalite_storage.batch.stream_records): a batch that inflates
   beyond kafkalite_storage.compression.MAX_INFLATED_BYTES or cannot be decoded is kept verbatim and its keys are not
   mapped (logged), so a decompression bomb on disk costs the cleaner one bounded attempt, never the memory.
3. The file is fsynced, takes the last source segment's modification time (Kafka's cleaner keeps it, and
   retention judges a segment the cleaner emptied by it), and is renamed `.swap`; then, under the log's lock, the old segments are renamed
   `.deleted` (their descriptors stay open for in-flight reads and are closed after file.delete.delay.ms),
   the swap file takes the final `<base>.log` name and its indexes are built. A crash before the swap leaves
   a `.cleaned` file (deleted at open); after it, a `.swap` file (completed at open).

Offsets never change, so consumers and the group coordinator see the same offsets, only fewer records.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalite_storage import fs
from kafkalite_storage.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    crc32c,
    stream_records,
)
from kafkalite_storage.compression import compress
from kafkalite_storage.errors import CorruptRecordError, RecordTooLargeError
from kafkalite_storage.segment import LogSegment, segment_name
from kafkalite_storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from kafkalite_storage.log import PartitionLog

log = logging.getLogger(__name__)

_I = struct.Struct(">i")
_Q = struct.Struct(">q")
_H = struct.Struct(">h")
_CONTROL_KEY = struct.Struct(">hh")   # control record key: version, type (0 ABORT, 1 COMMIT)
_UI = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class CleanResult:
    segments_before: int
    segments_after: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    first_uncleanable_offset: int


class _TxnMarkers:
    """The transaction state of one pass (Kafka's CleanedTransactionMetadata): fed every batch in offset order,
    it says which data batches belong to an aborted transaction (their records go) and which markers may go (a
    COMMIT marker when no batch of its transaction was read before it, an ABORT marker when none of its batches
    was). Such a marker batch gets a delete horizon like a tombstone and is removed once it has passed - kept as
    an empty batch header if it is the last word of a still active producer (its epoch fences)."""

    def __init__(self, aborted: list[AbortedTxn], last_records: dict[int, tuple[int | None, int]]) -> None:
        self.aborted = sorted(aborted, key=lambda t: t.first_offset)
        self.next = 0
        self.ongoing_aborted: dict[int, tuple[AbortedTxn, bool]] = {}   # pid -> (entry, a batch of it was read)
        self.ongoing_committed: set[int] = set()
        self.last_records = last_records              # active pid -> (last data offset or None, epoch)
        self.kept_index: set[tuple[int, int]] = set()  # (pid, last offset) of aborted txns whose entry stays

    def _consume_up_to(self, offset: int) -> None:
        while self.next < len(self.aborted) and self.aborted[self.next].first_offset <= offset:
            t = self.aborted[self.next]
            self.ongoing_aborted.setdefault(t.producer_id, (t, False))
            self.next += 1

    def on_data(self, hdr: BatchHeader) -> bool:
        """True if the batch belongs to an aborted transaction (its records go)."""
        self._consume_up_to(hdr.last_offset)
        if not hdr.is_transactional:
            return False
        ongoing = self.ongoing_aborted.get(hdr.producer_id)
        if ongoing is not None:
            self.ongoing_aborted[hdr.producer_id] = (ongoing[0], True)
            return True
        self.ongoing_committed.add(hdr.producer_id)
        return False

    def on_control(self, hdr: BatchHeader, marker_type: int | None) -> bool:
        """True if the marker's transaction has no batch left (the marker may go)."""
        self._consume_up_to(hdr.last_offset)
        pid = hdr.producer_id
        if marker_type is None:   # an empty control batch: already cleaned
            return True
        if marker_type == 0:   # ABORT: stays (with its index entry) until its batches are gone
            ongoing = self.ongoing_aborted.pop(pid, None)
            if ongoing is not None and ongoing[1]:
                self.kept_index.add((pid, ongoing[0].last_offset))
                return False
            return True
        if marker_type == 1:   # COMMIT
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def last_of_producer(self, hdr: BatchHeader) -> bool:
        if hdr.producer_id < 0:
            return False
        last = self.last_records.get(hdr.producer_id)
        if last is None:
            return False
        if last[0] is not None:
            return hdr.last_offset == last[0]
        return hdr.is_control and hdr.producer_epoch == last[1]


def _marker_type(data: bytes | memoryview, hdr: BatchHeader) -> int | None:
    """The control type of a marker batch (0 ABORT, 1 COMMIT, ...), None for an empty or unreadable one."""
    try:
        for _raw, rec in stream_records(data, hdr):
            key = rec.key
            return _CONTROL_KEY.unpack_from(key)[1] if key is not None and len(key) >= 4 else -1
    except (CorruptRecordError, RecordTooLargeError):
        return -1
    return None


def first_uncleanable_offset(plog: PartitionLog, now_ms: int) -> int:
    segs = plog.segments
    bound = min(segs[-1].base_offset, plog.last_stable_offset)
    lag = plog.config.min_compaction_lag_ms
    if lag > 0:
        for seg in segs[:-1]:
            if seg.max_timestamp > now_ms - lag:
                bound = min(bound, seg.base_offset)
                break
    return bound


def clean_log(plog: PartitionLog, now_ms: int | None = None, *, force: bool = False) -> CleanResult | None:
    """One compaction pass over `plog` (call from a worker thread); None when there is nothing to do. It
    waits for a retention pass on the same log to finish (`plog.housekeeping`), as Kafka's cleaner and
    retention take turns on a compact,delete log."""
    with plog.housekeeping:
        return _clean_log(plog, now_ms, force)


def _clean_log(plog: PartitionLog, now_ms: int | None, force: bool) -> CleanResult | None:
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    segs = plog.segments
    if len(segs) < 2 or plog.closed:
        return None
    bound = first_uncleanable_offset(plog, now)
    # empty segments (emptied by an earlier pass) stay in: groups must be runs of adjacent segments, and
    # merging them away is what Kafka does too
    cleanable = [s for i, s in enumerate(segs[:-1]) if segs[i + 1].base_offset <= bound]
    if not cleanable or not any(s.size for s in cleanable):
        return None
    total = sum(s.size for s in cleanable)
    dirty = sum(s.size for s in cleanable if s.next_offset > plog.cleaner_checkpoint)
    if not force and (dirty == 0 or dirty / total < plog.config.min_cleanable_dirty_ratio) and not _overdue(
            plog, cleanable, now):
        return None
    aborted = plog.aborted_transactions(cleanable[0].base_offset, cleanable[-1].next_offset)
    latest: dict[bytes, int] = {}
    map_txns = _TxnMarkers(aborted, {})   # records of aborted transactions never enter the map
    for seg in cleanable:
        for pos, hdr in seg.batches():
            if hdr.is_control:
                map_txns.on_control(hdr, _marker_type(seg.read_batch(pos, hdr), hdr))
                continue
            if map_txns.on_data(hdr):
                continue
            try:
                for _raw, rec in stream_records(seg.read_batch(pos, hdr), hdr):
                    if rec.key is not None:
                        latest[rec.key] = rec.offset
            except (CorruptRecordError, RecordTooLargeError) as exc:   # filter_batch keeps it verbatim
                log.warning("%s-%d: batch at offset %d is kept as it is by the cleaner: %s", plog.topic,
                            plog.partition, hdr.base_offset, exc)
    groups: list[list[LogSegment]] = []
    for seg in cleanable:
        if groups and sum(s.size for s in groups[-1]) + seg.size <= plog.config.segment_bytes and (
            seg.next_offset - groups[-1][0].base_offset <= 2**31 - 1
        ):
            groups[-1].append(seg)
        else:
            groups.append([seg])
    removed = 0
    after = 0
    # one transaction state for the whole pass (see the module's docstring); the producers' last records are
    # Kafka's activeProducers, copied as appends go on meanwhile
    last_records = {pid: (e.batches[-1].last_offset if e.batches else None, e.epoch)
                    for pid, e in list(plog.producer_state.producers.items())}
    txn_state = _TxnMarkers(aborted, last_records)
    for group in groups:
        r = _clean_group(plog, group, latest, now, txn_state)
        if r is None:
            return None  # the log changed under us (retention, truncation): try again next time
        removed += r[0]
        after += r[1]
    plog.cleaner_checkpoint = max(plog.cleaner_checkpoint, cleanable[-1].next_offset)
    log.info("%s-%d: compacted %d segments into %d, %d -> %d bytes, %d records removed", plog.topic,
             plog.partition, len(cleanable), len(groups), total, after, removed)
    return CleanResult(len(cleanable), len(groups), total, after, removed, bound)


def _overdue(plog: PartitionLog, cleanable: list[LogSegment], now: int) -> bool:
    """max.compaction.lag.ms: the first dirty segment's first batch has waited too long; clean it whatever
    min.cleanable.dirty.ratio says (Kafka's LogCleanerManager judges by that batch's max timestamp)."""
    lag = plog.config.max_compaction_lag_ms
    if lag >= 2**63 - 1:
        return False
    for seg in cleanable:
        if seg.next_offset > plog.cleaner_checkpoint and seg.size:
            for _pos, hdr in seg.batches():
                return hdr.max_timestamp >= 0 and now - hdr.max_timestamp > lag
    return False


def filter_batch(data: bytes, hdr: BatchHeader, latest: dict[bytes, int], now: int,
                 delete_retention_ms: int, txns: _TxnMarkers | None = None) -> tuple[bytes | None, int]:
    """(the batch with only surviving records or None, number of records removed), as Kafka's
    MemoryRecords.filterTo with the LogCleaner's filter (KIP-534): a tombstone stays until the batch's delete
    horizon has passed; a batch that keeps a tombstone and has no horizon yet gets one (`now` +
    delete.retention.ms), so a later change of delete.retention.ms does not move it. Transaction markers go the
    same way when `txns` (the group's transaction state, fed every batch in order) says theirs is done."""
    if hdr.is_control:
        return _filter_marker(data, hdr, now, delete_retention_ms, txns)
    if txns is not None and txns.on_data(hdr):   # an aborted transaction's batch: its records go
        if txns.last_of_producer(hdr):
            return _empty_header(data, hdr), hdr.records_count
        return None, hdr.records_count
    kept: list[tuple[bytes, int]] = []
    tombstones = False
    try:
        for raw, rec in stream_records(data, hdr):   # bounded streaming decompression
            if rec.key is None or latest.get(rec.key) != rec.offset:
                continue
            if rec.value is None:
                if hdr.has_delete_horizon and now >= hdr.base_timestamp:
                    continue
                tombstones = True
            kept.append((raw, rec.timestamp))
    except (CorruptRecordError, RecordTooLargeError):
        return data, 0   # unreadable within the bound: kept as it is (logged by the offset-map pass)
    n = len(kept)
    if n == 0:
        if txns is not None and txns.last_of_producer(hdr):   # Kafka's RETAIN_EMPTY
            return (data if hdr.records_count == 0 else _empty_header(data, hdr)), hdr.records_count
        return None, hdr.records_count
    set_horizon = tombstones and not hdr.has_delete_horizon
    if n == hdr.records_count and not set_horizon:
        return data, 0
    if set_horizon:
        horizon: int | None = now + delete_retention_ms
    else:
        horizon = hdr.base_timestamp if hdr.has_delete_horizon else None
    return _rebuild(data, hdr, kept, horizon), hdr.records_count - n


def _filter_marker(data: bytes, hdr: BatchHeader, now: int, delete_retention_ms: int,
                   txns: _TxnMarkers | None) -> tuple[bytes | None, int]:
    if txns is None:
        return data, 0
    try:
        recs = list(stream_records(data, hdr))
    except (CorruptRecordError, RecordTooLargeError):
        return data, 0
    kept = [(raw, rec.timestamp) for raw, rec in recs]
    key = recs[0][1].key if recs else None
    marker = _CONTROL_KEY.unpack_from(key)[1] if key is not None and len(key) >= 4 else None
    if not txns.on_control(hdr, marker if recs else None):
        return data, 0
    if not kept or (hdr.has_delete_horizon and now >= hdr.base_timestamp):
        if txns.last_of_producer(hdr):   # Kafka's RETAIN_EMPTY: the producer's epoch stays in the log
            return (data if not kept else _empty_header(data, hdr)), len(kept)
        return None, len(kept)
    if hdr.has_delete_horizon:
        return data, 0
    return _rebuild(data, hdr, kept, now + delete_retention_ms), 0


def _empty_header(data: bytes, hdr: BatchHeader) -> bytes:
    """Kafka's DefaultRecordBatch.writeEmptyHeader: the batch's offsets, producer fields and flags, no records,
    no codec, BaseTimestamp -1 and its MaxTimestamp."""
    head = bytearray(data[:HEADER_SIZE])
    _I.pack_into(head, 8, HEADER_SIZE - LOG_OVERHEAD)
    _H.pack_into(head, ATTRIBUTES_OFFSET, hdr.attributes & (TIMESTAMP_TYPE_FLAG | TRANSACTIONAL_FLAG | CONTROL_FLAG))
    _Q.pack_into(head, 27, -1)
    _I.pack_into(head, 57, 0)
    _UI.pack_into(head, 17, crc32c(memoryview(head)[ATTRIBUTES_OFFSET:]))
    return bytes(head)


def _rebuild(data: bytes, hdr: BatchHeader, kept: list[tuple[bytes, int]], horizon: int | None) -> bytes:
    """The batch as Kafka's MemoryRecordsBuilder writes the retained records: same BaseOffset, LastOffsetDelta,
    producer fields, epoch and codec; BaseTimestamp is the delete horizon (attribute bit 6 set) or else the
    first record's timestamp; each record re-encoded with attributes 0 and its timestamp delta from the new
    BaseTimestamp (offset delta, key, value and headers copied); MaxTimestamp the largest record timestamp
    (LogAppendTime batches keep theirs); a new count, length and CRC."""
    base_ts = horizon if horizon is not None else kept[0][1]
    parts: list[bytes] = []
    max_ts = -1
    for raw, ts in kept:
        pos = _skip_varint(raw, 0) + 1                 # record length, attributes
        rest = memoryview(raw)[_skip_varint(raw, pos):]  # offset delta .. headers, unchanged
        body = b"\x00" + _zigzag(ts - base_ts) + rest
        parts.append(_zigzag(len(body)) + body)
        max_ts = max(max_ts, ts)
    records = b"".join(parts)
    if hdr.compression:
        records = compress(hdr.compression, records)
    head = bytearray(data[:HEADER_SIZE])
    _I.pack_into(head, 8, HEADER_SIZE + len(records) - LOG_OVERHEAD)
    attrs = hdr.attributes & ~DELETE_HORIZON_FLAG
    if horizon is not None:
        attrs |= DELETE_HORIZON_FLAG
    _H.pack_into(head, ATTRIBUTES_OFFSET, attrs)
    _Q.pack_into(head, 27, base_ts)
    _Q.pack_into(head, 35, hdr.max_timestamp if hdr.is_log_append_time else max_ts)
    _I.pack_into(head, 57, len(kept))
    crc = crc32c(records, crc32c(memoryview(head)[ATTRIBUTES_OFFSET:]))
    _UI.pack_into(head, 17, crc)
    return bytes(head) + records


def _skip_varint(buf: bytes, pos: int) -> int:
    while buf[pos] & 0x80:
        pos += 1
    return pos + 1


def _zigzag(n: int) -> bytes:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _clean_group(
    plog: PartitionLog, group: list[LogSegment], latest: dict[bytes, int], now: int, txn_state: _TxnMarkers
) -> tuple[int, int] | None:
    base = group[0].base_offset
    final = os.path.join(plog.dir, segment_name(base, ".log"))
    cleaned = final + ".cleaned"
    swap = final + ".swap"
    removed = 0
    written = 0
    try:
        fd = fs.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for seg in group:
                for pos, hdr in seg.batches():
                    out, gone = filter_batch(seg.read_batch(pos, hdr), hdr, latest, now,
                                             plog.config.delete_retention_ms, txn_state)
                    removed += gone
                    if out is not None:
                        view = memoryview(out)
                        while view:
                            view = view[fs.write(fd, view):]
                        written += len(out)
            fs.fsync(fd)
        finally:
            os.close(fd)
        _keep_mtime(group[-1], cleaned)
        fs.rename(cleaned, swap)
    except OSError:  # a full disk: the log is untouched; drop the partial copy and try again next time
        for leftover in (cleaned, swap):
            with contextlib.suppress(OSError):
                fs.unlink(leftover)
        raise
    # an aborted transaction's entry stays while its ABORT marker waits for the transaction's batches to go
    txns = [t for seg in group for t in seg.txn_index.entries
            if (t.producer_id, t.last_offset) in txn_state.kept_index]
    cfg = plog.config
    with plog._lock:
        if not _contiguous(list(plog._view[0]), group):
            fs.unlink(swap)
            return None
    # old files -> .deleted (open descriptors keep serving reads), swap -> final name, build its indexes;
    # a crash from here on leaves a state the loader completes (.deleted removed, the new .log kept)
    for old in group:
        old.mark_deleted()
    fs.rename(swap, final)
    seg = LogSegment(plog.dir, base, index_interval_bytes=cfg.index_interval_bytes,
                     max_index_size=cfg.segment_index_bytes, now_ms=time.time_ns() // 1_000_000)
    seg.recover(cfg.segment_index_bytes)
    for t in txns:
        seg.txn_index.append(t)
    with plog._lock:
        current = list(plog._view[0])
        if not _contiguous(current, group):  # only a concurrent truncation can do this
            seg.delete()
            return None
        first = [id(s) for s in current].index(id(group[0]))
        current[first : first + len(group)] = [seg]
        plog._view = (tuple(current), tuple(s.base_offset for s in current))
    plog.doom(group)
    return removed, written


def _keep_mtime(last: LogSegment, path: str) -> None:
    """The cleaned file takes the modification time of the group's last segment, as Kafka's cleaner sets it:
    retention judges a segment without timestamps (one the cleaner emptied) by it."""
    with contextlib.suppress(OSError):   # (then judged by the cleaning time: kept a little longer)
        st = os.stat(last.log_path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _contiguous(current: list[LogSegment], group: list[LogSegment]) -> bool:
    ids = [id(s) for s in current]
    if id(group[0]) not in ids:
        return False
    first = ids.index(id(group[0]))
    return ids[first : first + len(group)] == [id(s) for s in group]
