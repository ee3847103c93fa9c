"""Removing data from a log: from the front (retention.ms, retention.bytes, DeleteRecords) or the end
(truncation).

Kafka's rules: the active segment is never deleted by retention; a segment goes when every record in it is
older than retention.ms (judged by its largest timestamp, or the file's mtime when it has none), or while the
log exceeds retention.bytes by at least the segment's size; DeleteRecords moves the log start offset (up to
the high watermark) and drops segments wholly below it. Deleted segments are renamed `.deleted` and their
descriptors stay open for file.delete.delay.ms (reads may still be sending them).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalite_storage.errors import OffsetOutOfRangeError
from kafkalite_storage.segment import LogSegment

if TYPE_CHECKING:
    from kafkalite_storage.log import PartitionLog


def delete_records_before(plog: PartitionLog, offset: int) -> int:
    leo = plog.log_end_offset
    if offset > leo or offset < 0:
        raise OffsetOutOfRangeError(f"cannot delete records before {offset}",
                                    log_start_offset=plog.log_start_offset, log_end_offset=leo)
    if offset > plog.log_start_offset:
        plog.log_start_offset = offset
        delete_leading_segments(plog, lambda seg, nxt: nxt is not None and nxt.base_offset <= offset)
    return plog.log_start_offset


def delete_old_segments(plog: PartitionLog, now_ms: int) -> int:
    cfg = plog.config
    deleted = 0
    if cfg.retention_ms >= 0:
        deleted += delete_leading_segments(
            plog, lambda seg, nxt: nxt is not None and seg.size > 0 and now_ms - _seg_ts(seg) > cfg.retention_ms)
    if cfg.retention_bytes >= 0:
        excess = plog.size_bytes - cfg.retention_bytes

        def over(seg: LogSegment, nxt: LogSegment | None) -> bool:
            nonlocal excess
            if nxt is None or excess - seg.size < 0:
                return False
            excess -= seg.size
            return True

        deleted += delete_leading_segments(plog, over)
    return deleted


def delete_leading_segments(plog: PartitionLog, pred: Callable[[LogSegment, LogSegment | None], bool]) -> int:
    """Drop leading segments while `pred(segment, next segment)` holds (never the active one)."""
    segs = plog.segments
    n = 0
    while n + 1 < len(segs) and pred(segs[n], segs[n + 1]):
        n += 1
    if n:
        plog._remove_segments(segs[:n], defer=True)
        plog.log_start_offset = max(plog.log_start_offset, segs[n].base_offset)
    return n


def _seg_ts(seg: LogSegment) -> int:
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
