"""One log segment: `<base>.log` plus its `.index` and `.timeindex` (Kafka's LogSegment).

Theory of operation. The `.log` file is a `kafkalite_storage.handles.FileHandle`: it holds a descriptor only while it
sits in the process-wide LRU of open files (an inactive segment that nobody reads holds none); reads hand
out the handle itself in file regions, pinned while os.sendfile runs. Appends go to the page cache with
pwrite at the current size, fsync happens only in flush() (and only if something was written).
Index entries follow Kafka's rule exactly: before counting the current append, if more than
`index.interval.bytes` were appended since the last entry, the offset index gets (last offset of this append
-> its start position) and the time index gets (max timestamp so far in the segment -> offset of the batch
holding it). The running max timestamp and byte counter live in memory: after a restart the max timestamp is
taken from the time index's last entry and the counter starts at 0, which is why segments that lived through
restarts carry index entries their `.log` alone does not explain. On roll and close the time index gets a
final entry for the max timestamp and both indexes are trimmed to their valid size.

Offset -> position: the offset index gives the largest entry <= target (whose position starts a batch), then a
short forward scan of batch headers finds the first batch whose last offset >= target.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
from collections.abc import Callable, Iterator

from kafkalite_storage import fs
from kafkalite_storage.batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE,
    INT32_MAX,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    batch_records,
    crc32c,
    iter_file_batches,
    parse_header,
)
from kafkalite_storage.errors import (
    CorruptRecordError,
    KafkaStorageError,
    RecordTooLargeError,
    RollbackFailedError,
    StorageError,
)
from kafkalite_storage.handles import FileHandle, TooManyOpenFilesError
from kafkalite_storage.index import OffsetIndex, TimeIndex
from kafkalite_storage.txn_index import TxnIndex

RECENT_APPENDS = 256  # appends remembered per segment for tail reads (halved when full)

log = logging.getLogger(__name__)


def segment_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """A `.log` file with its offset and time indexes."""

    def __init__(
        self,
        directory: str,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        now_ms: int,
        create: bool = False,
    ) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        log_path = os.path.join(directory, segment_name(base_offset, ".log"))
        if create:
            # O_TRUNC applies to the handle's first open only, made now through fs.open (a write step)
            self.file = FileHandle(log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
            with self.file.pinned():
                pass
            self.size = 0
        else:
            self.file = FileHandle(log_path)
            self.size = os.stat(log_path).st_size   # no descriptor until the segment is used
        idx_path = os.path.join(directory, segment_name(base_offset, ".index"))
        tidx_path = os.path.join(directory, segment_name(base_offset, ".timeindex"))
        self.offset_index = OffsetIndex(idx_path, base_offset, max_index_size)
        self.time_index = TimeIndex(tidx_path, base_offset, max_index_size)
        self.txn_index = TxnIndex(os.path.join(directory, segment_name(base_offset, ".txnindex")))
        if create:
            try:
                for p in (idx_path, tidx_path, self.txn_index.path):
                    if os.path.exists(p):
                        fs.unlink(p)
            except OSError:
                self.file.close()   # the caller sees the error; no descriptor stays behind in the cache
                raise
        self.bytes_since_last_index_entry = 0
        self.created_ms = now_ms
        self._rolling_ts: int | None = None  # max timestamp of the first batch (segment.ms basis)
        self._max_ts: tuple[int, int] | None = None  # (max timestamp so far, offset of its batch)
        self._next_offset: int | None = base_offset if create else None
        # The latest appends (at most RECENT_APPENDS): first offset each can hold, and its position. A Fetch
        # near the tail (a consumer a few appends behind) finds its batch here with one bisect and reads one
        # header, instead of scanning from the last offset-index entry (up to ~4 KiB of small batches, one
        # pread each). Valid only while the segment still ends where the latest append ended (_recent_end):
        # a truncation makes the positions stale, and they are dropped at the next append.
        self._recent_off: list[int] = []
        self._recent_pos: list[int] = []
        self._recent_end = -1
        self._inactive = False  # rolled: final time-index entry written, indexes trimmed
        self.closed = False
        # memory state before the latest append, for undo_append (see append)
        self._undo: tuple[int, int, tuple[int, int] | None, int | None, int, int, int] | None = None

    @property
    def log_path(self) -> str:
        return self.file.path

    @property
    def fd(self) -> FileHandle:
        """The `.log` file (a handle: descriptor on demand); kept under its old name for callers."""
        return self.file

    # ---- bookkeeping -----------------------------------------------------------------------------
    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(max timestamp so far, last offset of the batch holding it); Kafka reads it from the time index."""
        if self._max_ts is None:
            self._max_ts = self.time_index.last_entry
        return self._max_ts

    @property
    def max_timestamp(self) -> int:
        return self.max_timestamp_and_offset[0]

    @property
    def next_offset(self) -> int:
        """Offset after the last batch of this segment (its base offset when empty)."""
        if self._next_offset is None:
            _off, pos = self.offset_index.lookup(2**63 - 1)
            nxt = self.base_offset
            for _p, hdr in iter_file_batches(self.file, pos, self.size):
                nxt = hdr.next_offset
            self._next_offset = nxt
        return self._next_offset

    def batches(self, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        return iter_file_batches(self.file, start, self.size)

    # ---- append ----------------------------------------------------------------------------------
    def append(
        self,
        chunks: list[bytes | bytearray | memoryview] | None,
        size: int,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
    ) -> int:
        """Write one append (a batch, possibly split in header + body chunks) at the end; update indexes.
        `chunks=None`: the batch is in the file already (`adopt_file`).

        Returns the position the append starts at.
        """
        pos = self.size
        prev_next = self.next_offset   # before the write: nothing before this append holds it or later
        old_max = self.max_timestamp_and_offset   # may load the time index (a descriptor): before any write
        # Transactional: every fallible write (log bytes, then the index entries) happens before any memory
        # state changes; a failed one is undone on disk (the .log cut back to `pos`, index entries dropped)
        # and raised as KafkaStorageError, so memory and files never disagree and no orphan bytes remain.
        written = size if chunks is None else 0
        try:
            if chunks is not None:
                written = self.file.pwritev(chunks, pos)
            while written < size:  # short write: finish from a joined copy
                rest = b"".join(bytes(c) for c in chunks or ())[written:]
                n = self.file.pwrite(rest, pos + written)
                if n <= 0:
                    raise OSError(28, "no progress writing the log")
                written += n
        except OSError as exc:  # includes TooManyOpenFilesError (out of descriptors): rolled back alike
            if written or not isinstance(exc, TooManyOpenFilesError):   # (a file that did not open is intact)
                self._cut_log(pos, exc)
            raise KafkaStorageError(f"write to {self.log_path} failed: {exc}") from exc
        new_max = (max_timestamp, offset_of_max_timestamp) if max_timestamp > old_max[0] else old_max
        n_off = n_time = -1
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            n_off = self.offset_index.entries
            n_time = self.time_index.entries
            try:
                self.offset_index.append(last_offset, pos)
                self.time_index.maybe_append(*new_max)
            except OSError as exc:
                self.offset_index.remove_last_entries(n_off)
                self._cut_log(pos, exc)
                raise KafkaStorageError(f"index write of {self.log_path} failed: {exc}") from exc
        self._undo = (pos, prev_next, self._max_ts, self._rolling_ts, self.bytes_since_last_index_entry,
                      n_off, n_time)
        if pos == 0:
            self._rolling_ts = max_timestamp
        self.size = pos + size
        if self._recent_end != pos:
            self._recent_off.clear()
            self._recent_pos.clear()
        elif len(self._recent_off) >= RECENT_APPENDS:
            del self._recent_off[: RECENT_APPENDS // 2]
            del self._recent_pos[: RECENT_APPENDS // 2]
        self._recent_off.append(prev_next)
        self._recent_pos.append(pos)
        self._recent_end = self.size
        self._next_offset = last_offset + 1
        self._max_ts = new_max
        if n_off >= 0:
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += size
        return pos

    def adopt_file(self, file: FileHandle, size: int, last_offset: int, max_timestamp: int) -> None:
        """Make `file`, which holds exactly one batch of `size` bytes ending at `last_offset`, this empty
        segment's `.log` (kafkalite_storage.staging): it is renamed over the empty one (OSError: nothing
        changed), then the indexes and memory are as after `append` of that batch."""
        if self.size != 0:
            raise ValueError(f"{self.log_path}: only an empty segment adopts a file")
        _ = self.next_offset, self.max_timestamp_and_offset   # (cached now: their reads may fail, the rename not undone)
        file.rename(self.log_path)
        old, self.file = self.file, file
        old.close()
        self.append(None, size, last_offset, max_timestamp, last_offset)

    def _cut_log(self, pos: int, cause: OSError) -> None:
        """Undo a failed write: the .log back to `pos` bytes (RollbackFailedError if even that fails)."""
        try:
            self.file.ftruncate(pos)
        except OSError as exc:
            raise RollbackFailedError(f"{self.log_path}: cannot cut back to {pos} after {cause}: {exc}") from exc

    def undo_append(self) -> None:
        """Undo the latest append completely (a later step of the log's append failed): files and memory go
        back to the state before it. RollbackFailedError if the files cannot be restored."""
        if self._undo is None:
            return
        pos, prev_next, max_ts, rolling_ts, since, n_off, n_time = self._undo
        self._undo = None
        if n_off >= 0:
            self.time_index.remove_last_entries(n_time)
            self.offset_index.remove_last_entries(n_off)
        self._cut_log(pos, OSError("undo"))
        self.size = pos
        self._next_offset = prev_next
        self._max_ts = max_ts
        self._rolling_ts = rolling_ts
        self.bytes_since_last_index_entry = since
        if self._recent_pos and self._recent_pos[-1] == pos:
            self._recent_off.pop()
            self._recent_pos.pop()
        self._recent_end = pos

    def should_roll(
        self,
        batch_size: int,
        max_timestamp: int,
        last_offset: int,
        now_ms: int,
        segment_bytes: int,
        roll_ms: int,
    ) -> bool:
        """Kafka's LogSegment.shouldRoll for an incoming append."""
        if self.size > segment_bytes - batch_size:
            return True
        if self.size > 0 and self._time_waited_for_roll(now_ms, max_timestamp) > roll_ms:
            return True
        if self.offset_index.is_full or self.time_index.is_full:
            return True
        return last_offset - self.base_offset > INT32_MAX

    def _time_waited_for_roll(self, now_ms: int, message_ts: int) -> int:
        if self._rolling_ts is None and self.size > 0:
            for _p, hdr in self.batches():
                self._rolling_ts = hdr.max_timestamp
                break
        if self._rolling_ts is not None and self._rolling_ts >= 0:
            return message_ts - self._rolling_ts
        return now_ms - self.created_ms

    # ---- lookups ---------------------------------------------------------------------------------
    def translate_offset(self, offset: int, start_pos: int = 0) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset >= `offset`, or None."""
        recent = self._recent_off
        if recent and offset >= recent[0] and self._recent_end == self.size:
            # in one of the latest appends (or past them): the batch holding it starts at that append
            pos = self._recent_pos[bisect.bisect_right(recent, offset) - 1]
        else:
            _o, pos = self.offset_index.lookup(offset)
        for p, hdr in iter_file_batches(self.file, max(pos, start_pos), self.size):
            if hdr.last_offset >= offset:
                return p, hdr
        return None

    def read(self, offset: int, max_bytes: int, min_one: bool) -> tuple[int, int, int] | None:
        """(position, length, next offset) of whole batches from the batch holding `offset`, or None."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        start, first = found
        if first.size > max_bytes:
            if not min_one:
                return start, 0, first.base_offset
            return start, first.size, first.next_offset
        if self.size - start <= max_bytes:
            # everything from here to the end of the segment fits (a consumer at the tail): no header scan
            return start, self.size - start, self.next_offset
        limit = start + max_bytes
        end = start + first.size
        nxt = first.next_offset
        if end < limit:
            # jump close to the limit with the offset index (its positions start batches), then scan
            scan_from = max(end, self._indexed_position_at_or_before(limit))
            if scan_from > end:
                end = scan_from
                nxt = -1
            for p, hdr in iter_file_batches(self.file, end, self.size):
                if p + hdr.size > limit:
                    break
                end = p + hdr.size
                nxt = hdr.next_offset
            if nxt == -1:
                nxt = self._next_offset_ending_at(end)
        return start, end - start, nxt

    def _indexed_position_at_or_before(self, limit: int) -> int:
        idx = self.offset_index
        n = idx.entries
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if idx.entry(mid)[1] <= limit:
                lo = mid + 1
            else:
                hi = mid
        return idx.entry(lo - 1)[1] if lo > 0 else 0

    def _next_offset_ending_at(self, end: int) -> int:
        if end >= self.size:
            return self.next_offset
        hdr = parse_header(self.file.pread(HEADER_SIZE, end))
        return hdr.base_offset

    def read_batch(self, pos: int, hdr: BatchHeader) -> bytes:
        return self.file.pread(hdr.size, pos)

    def find_offset_by_timestamp(self, timestamp: int, start_offset: int) -> tuple[int, int] | None:
        """First record with timestamp >= target and offset >= start: (offset, timestamp), or None."""
        _ts, idx_off = self.time_index.lookup(timestamp)
        _o, pos = self.offset_index.lookup(max(idx_off, start_offset))
        for p, hdr in iter_file_batches(self.file, pos, self.size):
            if hdr.max_timestamp < timestamp or hdr.last_offset < start_offset:
                continue
            try:
                for rec in self._records(p, hdr):
                    if rec.timestamp >= timestamp and rec.offset >= start_offset:
                        return rec.offset, rec.timestamp
            except (CorruptRecordError, RecordTooLargeError) as exc:
                # unreadable within the inflate bound: answer at batch granularity (the consumer starts at
                # the batch that holds the timestamp, as if every record carried its MaxTimestamp)
                log.warning("timestamp lookup in %s: batch at offset %d read as a whole: %s", self.log_path,
                            hdr.base_offset, exc)
                return max(hdr.base_offset, start_offset), hdr.max_timestamp
        return None

    def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset of the first record carrying the segment's max timestamp, timestamp) (KAFKA-16310)."""
        ts, off = self.max_timestamp_and_offset
        if ts < 0 and self.size == 0:
            return None
        _o, pos = self.offset_index.lookup(off)
        for p, hdr in iter_file_batches(self.file, pos, self.size):
            if hdr.max_timestamp == ts:
                if hdr.is_log_append_time:
                    return hdr.base_offset, ts
                try:
                    for rec in self._records(p, hdr):
                        if rec.timestamp == ts:
                            return rec.offset, ts
                except (CorruptRecordError, RecordTooLargeError) as exc:
                    log.warning("max-timestamp lookup in %s: batch at offset %d read as a whole: %s",
                                self.log_path, hdr.base_offset, exc)
                    return hdr.base_offset, ts
                return hdr.last_offset, ts
        return None

    def _records(self, pos: int, hdr: BatchHeader) -> Iterator[Record]:
        """The records actually in the batch (bounded streaming decompression; LogAppendTime records carry
        the batch timestamp). Work follows the bytes present, never the RecordsCount a client claimed."""
        return batch_records(self.read_batch(pos, hdr))

    # ---- truncation / recovery ------------------------------------------------------------------
    def truncate_to(self, offset: int, now_ms: int, max_index_size: int) -> int:
        """Remove every batch that holds an offset >= `offset` (whole batches); returns bytes removed."""
        found = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.offset_index.resize(max_index_size)
        self.time_index.resize(max_index_size)
        self.txn_index.truncate_to(offset)
        if found is None:
            return 0
        pos, hdr = found
        removed = self.size - pos
        self.file.ftruncate(pos)
        self.size = pos
        self._next_offset = hdr.base_offset if pos > 0 else self.base_offset
        if pos == 0:
            self.created_ms = now_ms
            self._rolling_ts = None
        self.bytes_since_last_index_entry = 0
        last_ts, last_off = self.time_index.last_entry
        best = (last_ts, last_off)
        _o, p0 = self.offset_index.lookup(last_off)
        for _p, h in iter_file_batches(self.file, p0, self.size):
            if h.max_timestamp > best[0]:
                best = (h.max_timestamp, h.last_offset)
        self._max_ts = best
        return removed

    def recover(
        self, max_index_size: int, chunk: int = 1 << 20, *, reset_txn_index: bool = False
    ) -> tuple[int, list[tuple[int, BatchHeader]]]:
        """Validate every batch, rebuild both indexes, truncate at the first invalid or torn batch.

        With `reset_txn_index` the `.txnindex` is emptied too (the caller rebuilds it from producer state).
        Returns (bytes truncated, [(position, header)] of the valid batches).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.offset_index.resize(max_index_size)
        self.time_index.resize(max_index_size)
        self._max_ts = (-1, self.base_offset)
        valid = 0
        last_index_entry = 0
        prev_next = self.base_offset
        headers: list[tuple[int, BatchHeader]] = []
        buf = b""
        buf_pos = 0
        reason = ""
        while valid < self.size:
            rel = valid - buf_pos
            if rel + HEADER_SIZE > len(buf):
                buf = self.file.pread(max(chunk, HEADER_SIZE), valid)
                buf_pos, rel = valid, 0
            if len(buf) - rel < HEADER_SIZE:
                reason = "torn batch header"
                break
            try:
                hdr = parse_header(buf, rel)
            except CorruptRecordError as exc:
                reason = str(exc)
                break
            if hdr.length < HEADER_SIZE - LOG_OVERHEAD or valid + hdr.size > self.size:
                reason = f"torn batch at position {valid} (size {hdr.size})"
                break
            if rel + hdr.size > len(buf):
                buf = self.file.pread(max(chunk, hdr.size), valid)
                buf_pos, rel = valid, 0
            if crc32c(memoryview(buf)[rel + ATTRIBUTES_OFFSET : rel + hdr.size]) != hdr.crc:
                reason = f"CRC mismatch at position {valid}"
                break
            if hdr.base_offset < prev_next or hdr.base_offset < self.base_offset:
                reason = f"offset {hdr.base_offset} does not follow {prev_next - 1}"
                break
            if hdr.max_timestamp > self._max_ts[0]:
                self._max_ts = (hdr.max_timestamp, hdr.last_offset)
            if valid - last_index_entry > self.index_interval_bytes:
                self.offset_index.append(hdr.last_offset, valid)
                self.time_index.maybe_append(*self._max_ts)
                last_index_entry = valid
            headers.append((valid, hdr))
            prev_next = hdr.next_offset
            valid += hdr.size
        truncated = self.size - valid
        if truncated:
            log.warning(
                "%s: truncating %d bytes at position %d (%s)", self.log_path, truncated, valid, reason
            )
            self.file.ftruncate(valid)
            self.size = valid
        self._next_offset = prev_next
        if reset_txn_index:
            self.txn_index.reset()
        else:
            self.txn_index.truncate_to(prev_next)
        self.bytes_since_last_index_entry = 0
        # as Kafka: a recovered segment gets the final time-index entry a clean close would write
        self.offset_index.trim()
        self.time_index.maybe_append(*self._max_ts, skip_full_check=True)
        self.time_index.trim()
        return truncated, headers

    # ---- lifecycle -------------------------------------------------------------------------------
    def on_become_inactive(self) -> None:
        """Roll: final time-index entry, then trim both indexes."""
        ts, off = self.max_timestamp_and_offset
        self.time_index.maybe_append(ts, off, skip_full_check=True)
        self.offset_index.trim()
        self.time_index.trim()
        self._inactive = True
        # drop the in-memory entries of the now inactive indexes (a later lookup reloads them lazily); their
        # fsync is left to the next flush, off the appending thread
        self.offset_index.close(sync=False)
        self.time_index.close(sync=False)

    def flush(self) -> None:
        if not self.closed:
            self.file.fsync()
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()

    def mark_synced(self) -> None:
        """Count pending writes as durable (the caller syncs the whole file system next)."""
        self.file.dirty = False
        self.offset_index.mark_synced()
        self.time_index.mark_synced()

    def mark_unsynced(self) -> None:
        """Undo `mark_synced` (the file-system sync failed): the next flush fsyncs every file again."""
        self.file.dirty = True
        self.offset_index.mark_unsynced()
        self.time_index.mark_unsynced()

    def close(self, sync: bool = True) -> None:
        """Final time-index entry (if the max timestamp is known), trim indexes, close files (fsync unless
        `sync` is False: then the caller syncs the file system)."""
        if self.closed:
            return
        failed: list[BaseException] = []

        def attempt(step: Callable[[], None]) -> None:
            try:
                step()
            except (OSError, StorageError) as exc:  # a full or failing disk: close the rest all the same
                failed.append(exc)

        if self._max_ts is not None and not self._inactive:
            max_ts = self._max_ts
            attempt(lambda: self.time_index.maybe_append(*max_ts, skip_full_check=True))
        attempt(self.offset_index.trim)
        attempt(self.time_index.trim)
        attempt(lambda: self.offset_index.close(sync=sync))
        attempt(lambda: self.time_index.close(sync=sync))
        if sync:
            attempt(self.offset_index.flush)  # writes made before an unload (roll) are synced by name
            attempt(self.time_index.flush)
        attempt(self.file.close)
        self.closed = True
        if failed:
            raise KafkaStorageError(f"closing {self.log_path}: {failed[0]}") from failed[0]

    def close_without_final_entry(self) -> None:
        """Close descriptors without touching the files (crash simulation, deletion)."""
        if self.closed:
            return
        self.offset_index.close(sync=False)
        self.time_index.close(sync=False)
        self.file.close()
        self.closed = True

    def mark_deleted(self) -> None:
        """Rename every file to `<name>.deleted` (Kafka's async delete); descriptors stay valid for readers."""
        for idx in (self.offset_index, self.time_index):
            if os.path.exists(idx.path):
                idx.rename(idx.path + ".deleted")
            else:
                idx.path += ".deleted"
        if os.path.exists(self.txn_index.path):
            fs.rename(self.txn_index.path, self.txn_index.path + ".deleted")
        self.txn_index.path += ".deleted"
        if os.path.exists(self.log_path):
            self.file.rename(self.log_path + ".deleted")   # through fs.rename
        else:
            self.file.path += ".deleted"

    def hold_descriptors(self) -> None:
        """The `.log` descriptor, if open now, stays open until close (its file is about to be unlinked)."""
        self.file.hold()

    def unlink_files(self) -> None:
        """Remove the files but keep the descriptors open (they keep serving reads). The `.log` is opened
        if it is not open now (one segment's retention or compaction, not a whole topic: a read that took the
        segment just before must still find its bytes; its index answers from no entries if unloaded)."""
        self.file.hold(open_now=True)
        for p in (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            with contextlib.suppress(FileNotFoundError):
                fs.unlink(p)

    def delete(self) -> None:
        self.close_without_final_entry()
        for p in (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            with contextlib.suppress(FileNotFoundError):
                fs.unlink(p)
