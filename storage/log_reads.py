"""Reads of a partition log: batches as file regions, offset and timestamp lookups, aborted transactions
(a mixin of kafkalite_storage.log.PartitionLog).

Theory of operation. Reads take one snapshot of the segment list (`_view`, replaced whole under the log's
lock, copy-on-write) and never lock: retention may drop segments meanwhile, whose descriptors stay open for
a grace period. A read returns whole batches as `(handle, position, length)` regions, from the batch that
holds the requested offset (the client skips the earlier records), at most `max_bytes` unless `min_one`.
Timestamp lookups use the time index, then the records' own timestamps (bounded streaming for compressed
batches). READ_COMMITTED fetches list the aborted transactions from the segments' transaction indexes.
"""

from __future__ import annotations

import bisect

from kafkalite_storage.batch import BatchHeader
from kafkalite_storage.errors import LogClosedError, LogOfflineError, OffsetOutOfRangeError
from kafkalite_storage.handles import FileHandle
from kafkalite_storage.segment import LogSegment
from kafkalite_storage.txn_index import AbortedTxn

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class LogReads:
    """The read side of a PartitionLog (which provides the attributes below)."""

    topic: str
    partition: int
    closed: bool
    offline: str | None
    log_start_offset: int
    _view: tuple[tuple[LogSegment, ...], tuple[int, ...]]
    _leo: int

    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound) (READ_COMMITTED Fetch)."""
        out: list[AbortedTxn] = []
        segs, bases = self._view
        i = max(bisect.bisect_right(bases, fetch_offset) - 1, 0)
        for seg in segs[i:]:
            found, complete = seg.txn_index.collect(fetch_offset, upper_bound)
            out.extend(found)
            if complete:
                break
        return out

    def _refuse(self) -> None:
        if self.closed:
            raise LogClosedError(f"{self.topic}-{self.partition} is closed")
        raise LogOfflineError(f"{self.topic}-{self.partition} is offline: {self.offline}")

    # ---- read --------------------------------------------------------------------------------------
    def _check_range(self, offset: int) -> None:
        if offset < self.log_start_offset or offset > self._leo:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {self._leo}] of "
                f"{self.topic}-{self.partition}",
                log_start_offset=self.log_start_offset,
                log_end_offset=self._leo,
            )

    def read(self, offset: int, max_bytes: int, min_one: bool = True) -> list[tuple[FileHandle, int, int]]:
        """Whole batches from the one holding `offset`, as (file handle, position, length) regions; [] at LEO.

        Send a region with `with handle.pinned() as fd: os.sendfile(sock, fd, position, length)`, or read it
        with `handle.pread(length, position)`."""
        if self.closed or self.offline is not None:
            self._refuse()
        self._check_range(offset)
        leo = self._leo
        out: list[tuple[FileHandle, int, int]] = []
        segs, bases = self._view
        i = max(bisect.bisect_right(bases, offset) - 1, 0)
        remaining = max_bytes
        cur = offset
        while i < len(segs) and cur < leo:
            seg = segs[i]
            r = seg.read(cur, remaining, min_one and not out)
            i += 1
            if r is None:
                continue
            pos, length, nxt = r
            if length == 0:
                break
            out.append((seg.file, pos, length))
            remaining -= length
            cur = nxt
            if remaining <= 0 or nxt < seg.next_offset:
                break
        return out

    def read_bytes(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        return b"".join(f.pread(n, pos) for f, pos, n in self.read(offset, max_bytes, min_one))

    def batches(self, start_offset: int = 0) -> list[tuple[LogSegment, int, BatchHeader]]:
        """(segment, position, header) of every batch with last offset >= start_offset (tools, tests)."""
        out = []
        for seg in self._view[0]:
            if seg.next_offset <= start_offset:
                continue
            for pos, hdr in seg.batches():
                if hdr.last_offset >= start_offset:
                    out.append((seg, pos, hdr))
        return out

    # ---- timestamp lookups ------------------------------------------------------------------------
    def offset_for_timestamp(self, ts_ms: int) -> tuple[int, int] | None:
        """ListOffsets: -2 earliest, -1 latest, -3 max timestamp, else first record with timestamp >= ts."""
        if ts_ms == EARLIEST_TIMESTAMP or ts_ms == -4:
            return self.log_start_offset, -1
        if ts_ms == LATEST_TIMESTAMP:
            return self._leo, -1
        if ts_ms == MAX_TIMESTAMP:
            return self.max_timestamp_offset()
        for seg in self._view[0]:
            if seg.max_timestamp >= ts_ms:
                r = seg.find_offset_by_timestamp(ts_ms, self.log_start_offset)
                if r is not None:
                    return r
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """Offset and timestamp of the first record carrying the largest timestamp (ListOffsets -3)."""
        best: LogSegment | None = None
        for seg in self._view[0]:
            if seg.size and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        return best.offset_of_max_timestamp()
