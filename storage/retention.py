"""Removing data from a log: from the front (retention.ms, retention.bytes, the log start offset that
DeleteRecords moves) or from the end (truncation).

Theory of operation (Kafka's UnifiedLog.deleteOldSegments). A pass applies three rules in Kafka's order, each
walking the segments from the oldest and taking them while the rule holds, stopping at the first it does not:
- log start offset (every cleanup.policy): a segment goes when the next one starts at or below the log start
  offset (DeleteRecords moved it past the whole segment);
- retention.bytes (policies with delete), when the log is at least that large: with `excess` = size - limit,
  a segment goes while `excess - its size >= 0`, and is subtracted;
- retention.ms (policies with delete): a segment goes when now - its largest timestamp > retention.ms (the
  largest record timestamp so far; the `.log` file's mtime when it has none).
A segment goes only if it lies wholly below the high watermark (its end is the next segment's base, or the log
end offset for the active segment), so the log start offset never passes the high watermark; an empty active
segment never goes. Kafka bounds deletion by the high watermark only: an open transaction's first batch may be
deleted, its first unstable offset then counts as the log start offset (`PartitionLog.last_stable_offset`).

When every segment goes, the active one included (records stamped long ago; retention.bytes=0), a new empty
active segment is rolled at the log end offset first (`<log end offset>.log` with its indexes and producer
snapshot), then the old ones are deleted: the log start offset moves to the log end offset, the log is empty
and the next append continues at the same offset. A roll belongs to the thread that appends (the broker's
event loop); retention runs in a worker thread and asks that thread through `run_on_owner`, and the roll
happens only if nothing was appended since the segment was judged (else it waits for the next pass). The
log start offset moves (leader epochs follow it, Kafka's truncateFromStart) before the segments leave the
list; they are renamed `.deleted` and their descriptors stay open for file.delete.delay.ms (reads may still be
sending them), and the producer snapshots at their base offsets are deleted. One retention or compaction pass
runs on a log at a time (`PartitionLog.housekeeping`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalite_storage.errors import OffsetOutOfRangeError
from kafkalite_storage.segment import LogSegment

if TYPE_CHECKING:
    from kafkalite_storage.log import PartitionLog

log = logging.getLogger("kafkalite_storage.log")

# (segment, next segment or None for the active one) -> whether the rule deletes it
Rule = Callable[[LogSegment, "LogSegment | None"], bool]
# runs a function on the thread that appends to the log and returns its result
RunOnOwner = Callable[[Callable[[], Any]], Any]


def _here(fn: Callable[[], Any]) -> Any:
    return fn()


def delete_records_before(plog: PartitionLog, offset: int) -> int:
    leo = plog.log_end_offset
    if offset > leo or offset < 0:
        raise OffsetOutOfRangeError(f"cannot delete records before {offset}",
                                    log_start_offset=plog.log_start_offset, log_end_offset=leo)
    if offset > plog.log_start_offset:
        plog.advance_log_start(offset)
        delete_segments(plog, lambda seg, nxt: nxt is not None and nxt.base_offset <= offset)
    return plog.log_start_offset


def delete_old_segments(plog: PartitionLog, now_ms: int, run_on_owner: RunOnOwner | None = None) -> int:
    """One retention pass (see the module docstring); returns the number of segments deleted."""
    with plog.housekeeping:
        n = delete_segments(plog, lambda seg, nxt: nxt is not None and nxt.base_offset <= plog.log_start_offset)
        cfg = plog.config
        if not cfg.delete:
            return n
        if cfg.retention_bytes >= 0:
            rule = _size_rule(plog, cfg.retention_bytes)
            if rule is not None:
                n += delete_segments(plog, rule, run_on_owner, now_ms)
        if cfg.retention_ms >= 0:
            limit = cfg.retention_ms
            n += delete_segments(plog, lambda seg, nxt: now_ms - largest_timestamp(seg) > limit, run_on_owner,
                                 now_ms)
        return n


def _size_rule(plog: PartitionLog, limit: int) -> Rule | None:
    size = plog.size_bytes
    if size < limit:
        return None
    excess = size - limit

    def over(seg: LogSegment, nxt: LogSegment | None) -> bool:
        nonlocal excess
        if excess - seg.size < 0:
            return False
        excess -= seg.size
        return True

    return over


def delete_segments(plog: PartitionLog, rule: Rule, run_on_owner: RunOnOwner | None = None,
                    now_ms: int | None = None) -> int:
    """Delete the leading segments `rule` takes, below the high watermark, rolling first when that is every
    segment (Kafka's deletableSegments + deleteSegments); returns how many went."""
    owner = run_on_owner or _here
    segs = plog.segments
    leo = plog.log_end_offset
    hw = plog.high_watermark
    doomed: list[LogSegment] = []
    for i, seg in enumerate(segs):
        nxt = segs[i + 1] if i + 1 < len(segs) else None
        end = leo if nxt is None else nxt.base_offset
        if hw < end or not rule(seg, nxt) or (nxt is None and seg.size == 0):
            break
        doomed.append(seg)
    if not doomed:
        return 0
    if len(doomed) == len(segs):
        # the active segment too: a log always has one, so a new (empty) one comes first, at the log end offset
        now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        if owner(functools.partial(plog.roll_for_retention, doomed[-1], leo, now)) is None:
            doomed.pop()   # appended to meanwhile, or the roll failed: it stays until the next pass
            if not doomed:
                return 0
    view = plog.segments
    last = next((i for i, s in enumerate(view) if s is doomed[-1]), None)
    if last is None or last + 1 >= len(view):
        return 0   # the log changed under us (DeleteRecords or a truncation took them): nothing to do
    doomed = view[: last + 1]   # (a DeleteRecords may have taken the first ones meanwhile)
    owner(functools.partial(plog.advance_log_start, view[last + 1].base_offset))
    plog._remove_segments(doomed, defer=True)
    for seg in doomed:   # Kafka's deleteProducerSnapshots: the snapshots taken when these segments were rolled
        with contextlib.suppress(OSError):
            plog.producer_state.delete_snapshot(seg.base_offset)
    log.info("%s-%d: deleted %d segments from offset %d; log start offset %d", plog.topic, plog.partition,
             len(doomed), doomed[0].base_offset, plog.log_start_offset)
    return len(doomed)


def largest_timestamp(seg: LogSegment) -> int:
    """Kafka's LogSegment.largestTimestamp: the largest record timestamp so far, else the file's mtime."""
    ts = seg.max_timestamp
    if ts < 0:
        try:
            ts = int(os.stat(seg.log_path).st_mtime * 1000)
        except OSError:
            ts = time.time_ns() // 1_000_000
    return ts


def truncate_to(plog: PartitionLog, offset: int) -> None:
    """Remove every batch holding an offset >= `offset`: later segments go (renamed `.deleted`), the one
    holding `offset` is cut at that batch and becomes active; producer state and epochs follow."""
    if offset >= plog.log_end_offset:
        return
    segs = plog.segments
    if offset <= segs[0].base_offset:
        truncate_fully_and_start_at(plog, offset)
        return
    plog._remove_segments([s for s in segs if s.base_offset > offset], defer=True)
    seg = plog.active
    seg.truncate_to(offset, time.time_ns() // 1_000_000, plog.config.segment_index_bytes)
    plog._leo = seg.next_offset
    _after_truncation(plog)


def truncate_fully_and_start_at(plog: PartitionLog, offset: int) -> None:
    plog._remove_segments(plog.segments, defer=True)
    plog._add_segment(plog._new_segment(offset, time.time_ns() // 1_000_000))
    plog.log_start_offset = offset
    plog._leo = offset
    _after_truncation(plog)


def _after_truncation(plog: PartitionLog) -> None:
    from kafkalite_storage.loader import rebuild_producer_state  # truncations only: not at start

    plog.recovery_point = min(plog.recovery_point, plog.log_end_offset)
    plog._truncate_epochs(plog.log_end_offset)
    plog.producer_state.delete_snapshots_after(plog.log_end_offset)
    rebuild_producer_state(plog)
