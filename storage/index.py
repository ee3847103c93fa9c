"""Offset and time indexes (`.index`, `.timeindex`), Kafka's AbstractIndex/OffsetIndex/TimeIndex.

Theory of operation. Both are sparse, sorted, fixed-width files relative to the segment's base offset:
`.index` entries are (relative offset int32, file position int32) where the offset is the *last* offset of
a batch and the position is where that batch starts; `.timeindex` entries are (timestamp int64, relative
offset int32), strictly increasing in timestamp, pointing at the last offset of the batch holding that
timestamp. Entries are kept in memory as two parallel `array`s (looked up with bisect); the file is
written with pwrite at `entries * entry_size`. The active segment's files are preallocated (sparse,
ftruncate) to `segment.index.bytes` rounded down to the entry size, and trimmed to the valid size on roll
and close, so that Kafka, which takes an existing file's length as its entry count, reads them correctly.
Files are opened and loaded lazily on first use, as Kafka's LazyIndex does. The file is a
`kafkalite_storage.handles.FileHandle`: a descriptor only while it sits in the process-wide LRU of open files (every
write pins it for its syscall); the entries themselves live in arrays or a read-only mmap, which stays
valid after its descriptor is closed, so an index being looked up holds no descriptor. An index that
becomes inactive (roll) drops its entries and unmaps; it is mapped again on its next lookup.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import struct
import sys
from array import array
from collections.abc import Iterator

from kafkalite_storage import fs
from kafkalite_storage.errors import CorruptRecordError, RollbackFailedError
from kafkalite_storage.handles import FileHandle, TooManyOpenFilesError

_OFF = struct.Struct(">ii")
_TIME = struct.Struct(">qi")
MMAP_MIN_ENTRIES = 512  # smaller indexes are simply decoded into arrays


class _Col:
    """One column of a memory-mapped index file as a read-only int sequence (bisect works on it).

    Inactive indexes of any size then cost page cache, not Python heap, and open in O(1), like Kafka's
    mmap'ed indexes."""

    __slots__ = ("_es", "_mm", "_n", "_off", "_st")

    def __init__(self, mm: mmap.mmap, fmt: str, off: int, entry_size: int, n: int) -> None:
        self._mm = mm
        self._st = struct.Struct(fmt)
        self._off = off
        self._es = entry_size
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[int]:
        for i in range(self._n):
            yield int(self._st.unpack_from(self._mm, i * self._es + self._off)[0])

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return int(self._st.unpack_from(self._mm, i * self._es + self._off)[0])


class _Index:
    entry_size = 8
    _key_type = "q"
    _val_type = "i"
    _key_fmt = ">q"
    _val_fmt = ">i"

    def __init__(self, path: str, base_offset: int, max_index_size: int) -> None:
        self._fh = FileHandle(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size - max_index_size % self.entry_size
        self._loaded = False
        # relative offsets (offset index) or timestamps (time index); positions or relative offsets
        self._keys: array[int] | _Col = array(self._key_type)
        self._vals: array[int] | _Col = array(self._val_type)
        self._mm: mmap.mmap | None = None  # set while the entries are read through a read-only mmap
        self._file_size = 0
        self._dirty = False
        self._preallocated = False

    @property
    def path(self) -> str:
        return self._fh.path

    @path.setter
    def path(self, value: str) -> None:
        self._fh.path = value

    # -- lifecycle -----------------------------------------------------------------------------------
    def _ensure(self) -> None:
        if self._loaded:
            return
        try:
            fd = self._fh.acquire()   # opens (and creates) the file; a mapping outlives the descriptor
        except FileNotFoundError:
            # a deleted segment's index, unlinked before a late reader loaded it: an index only speeds up
            # lookups, so answer from no entries (the reader scans the segment's still-open .log)
            self._keys, self._vals = array(self._key_type), array(self._val_type)
            self._file_size = 0
            self._loaded = True
            return
        try:
            size = os.fstat(fd).st_size
            self._file_size = size
            n = self._valid_entries(size // self.entry_size)
            mm = None
            if n >= MMAP_MIN_ENTRIES and n * self.entry_size == size:
                mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            self._fh.release()
        if mm is not None:
            self._mm = mm
            key_size = struct.calcsize(self._key_fmt)
            self._keys = _Col(mm, self._key_fmt, 0, self.entry_size, n)
            self._vals = _Col(mm, self._val_fmt, key_size, self.entry_size, n)
        else:
            data = self._fh.pread(n * self.entry_size, 0) if n else b""
            self._decode(data, n)
        self._loaded = True

    def _arrays(self) -> tuple[array[int], array[int]]:
        """The entries as mutable arrays (decoding a memory-mapped file first); for every write path."""
        self._ensure()
        if self._mm is not None:
            n = len(self._keys)
            data = self._mm[: n * self.entry_size]
            self._mm.close()
            self._mm = None
            self._decode(data, n)
        assert isinstance(self._keys, array) and isinstance(self._vals, array)
        return self._keys, self._vals

    def _valid_entries(self, n: int) -> int:
        """Entries before the zero padding a preallocated file keeps after a crash (binary search).

        No real entry is all zeros (the first append of a segment never gets one), so the file is a
        non-zero prefix followed by zeros; a trimmed file has no padding and costs one pread.
        """
        zero = bytes(self.entry_size)

        def is_zero(i: int) -> bool:
            return self._fh.pread(self.entry_size, i * self.entry_size) == zero

        if n == 0 or not is_zero(n - 1):
            return n
        lo, hi = 0, n - 1  # the first zero entry is in [lo, hi]
        while lo < hi:
            mid = (lo + hi) // 2
            if is_zero(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _decode(self, data: bytes, n: int) -> None:
        raise NotImplementedError

    @property
    def fd(self) -> int:
        """A descriptor of the file, unpinned (tests and tools; valid for one immediate syscall)."""
        self._ensure()
        return self._fh.fileno()

    @property
    def entries(self) -> int:
        self._ensure()
        return len(self._keys)

    @property
    def max_entries(self) -> int:
        self._ensure()
        return max(self._file_size, self.max_index_size) // self.entry_size

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def resize(self, new_size: int) -> None:
        """Preallocate (sparse) to `new_size` rounded down to whole entries, never below the valid size."""
        self._arrays()
        new_size -= new_size % self.entry_size
        new_size = max(new_size, len(self._keys) * self.entry_size)
        if new_size != self._file_size:
            self._fh.ftruncate(new_size)
            self._file_size = new_size
        self.max_index_size = new_size
        self._preallocated = True

    def trim(self) -> None:
        """Shrink the file to exactly the valid entries (roll/close)."""
        if not self._loaded or self._mm is not None:  # a mapped file is exactly its entries already
            return
        valid = len(self._keys) * self.entry_size
        if self._file_size != valid:
            self._fh.ftruncate(valid)
            self._file_size = valid
            self._dirty = True
        self.max_index_size = valid
        self._preallocated = False

    def flush(self) -> None:
        """fsync pending writes (safe from a worker thread while the owner thread may unload the index: the
        handle reopens the file by name if its descriptor was given back meanwhile)."""
        if not self._dirty:
            return
        self._dirty = False
        try:
            self._fh.fsync()   # through fs.fsync; reopens by name if the descriptor was given back
        except BaseException:
            self._dirty = True
            raise

    def mark_synced(self) -> None:
        """Count pending writes as durable (the caller syncs the whole file system next)."""
        self._dirty = False
        self._fh.dirty = False

    def mark_unsynced(self) -> None:
        """Undo `mark_synced` (the file-system sync failed)."""
        self._dirty = True
        self._fh.dirty = True

    def close(self, sync: bool = True) -> None:
        """Close the file and drop the in-memory entries; unless `sync`, unsynced writes stay pending
        for the next flush()."""
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        try:
            if sync and self._dirty:
                self._fh.fsync()
                self._dirty = False
        finally:  # a failed fsync leaves the write pending (dirty) for a flush by name, never an open fd
            self._fh.evict()
            self._loaded = False
            self._keys = array(self._key_type)
            self._vals = array(self._val_type)

    def delete(self) -> None:
        self.close(sync=False)
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(self.path)

    def rename(self, new_path: str) -> None:
        self._fh.rename(new_path)

    def reset(self) -> None:
        """Drop every entry (before a rebuild) keeping the preallocated size."""
        self._truncate_entries(0)

    def _truncate_entries(self, n: int) -> None:
        keys, vals = self._arrays()
        self._dirty = True
        del keys[n:]
        del vals[n:]
        # cut the file, then preallocate again (zeros) up to the configured size, so that stale entries
        # cannot survive a crash and a trimmed file stays exactly its valid entries
        start = n * self.entry_size
        if start < self._file_size:
            self._fh.ftruncate(start)
            size = max(start, self.max_index_size) if self._preallocated else start
            if size > start:
                self._fh.ftruncate(size)
            self._file_size = size

    def _append_entry(self, key: int, val: int, blob: bytes) -> None:
        """Write one entry after the valid ones, then add it in memory. A failed write is rolled back first
        (the file cut to the valid entries and padded again with zeros, so no torn entry survives) and the
        OSError re-raised; if even that fails, RollbackFailedError."""
        keys, vals = self._arrays()
        n = len(keys)
        pos = n * self.entry_size
        try:
            if self._fh.pwrite(blob, pos) != len(blob):
                raise OSError(28, f"short write to {self.path}")
        except TooManyOpenFilesError:
            raise   # the file did not even open: nothing was written, nothing to undo
        except OSError as exc:
            self._undo_entry(n, exc)
            raise
        keys.append(key)
        vals.append(val)
        self._dirty = True
        if pos + self.entry_size > self._file_size:
            self._file_size = pos + self.entry_size

    def _undo_entry(self, n: int, cause: OSError) -> None:
        valid = n * self.entry_size
        try:
            self._fh.ftruncate(valid)
            if self._file_size > valid:
                self._fh.ftruncate(self._file_size)
        except OSError as exc:
            raise RollbackFailedError(f"{self.path}: cannot undo a failed entry write ({cause}): {exc}") from exc

    def remove_last_entries(self, n: int) -> None:
        """Drop every entry after the first `n` (undo of an append whose later step failed)."""
        if self._loaded and len(self._keys) > n:
            try:
                self._truncate_entries(n)
            except OSError as exc:
                raise RollbackFailedError(f"{self.path}: cannot drop entries after {n}: {exc}") from exc

    def file_bytes(self) -> bytes:
        """The valid entries as they are (or will be, once trimmed) on disk."""
        self._ensure()
        return self._fh.pread(len(self._keys) * self.entry_size, 0)


class OffsetIndex(_Index):
    """`.index`: last offset of a batch -> start position of that batch."""

    entry_size = 8
    _key_type = "i"
    _key_fmt = ">i"

    def _decode(self, data: bytes, n: int) -> None:
        flat = array("i")
        flat.frombytes(data[: n * 8])
        if sys.byteorder == "little":
            flat.byteswap()
        self._keys = flat[0::2]
        self._vals = flat[1::2]

    @property
    def last_offset(self) -> int:
        self._ensure()
        return self.base_offset + self._keys[-1] if self._keys else self.base_offset

    def entry(self, i: int) -> tuple[int, int]:
        self._ensure()
        return self.base_offset + self._keys[i], self._vals[i]

    def all_entries(self) -> list[tuple[int, int]]:
        self._ensure()
        return [(self.base_offset + k, v) for k, v in zip(self._keys, self._vals, strict=True)]

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= target, or (base_offset, 0)."""
        self._ensure()
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._vals[i]

    def append(self, offset: int, position: int) -> None:
        keys, _vals = self._arrays()
        rel = offset - self.base_offset
        if keys and rel <= keys[-1]:
            raise CorruptRecordError(f"offset index entry {offset} is not larger than {self.last_offset}")
        if len(keys) >= self.max_entries:
            raise CorruptRecordError(f"offset index {self.path} is full")
        self._append_entry(rel, position, _OFF.pack(rel, position))

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset >= `offset`."""
        self._ensure()
        self._truncate_entries(bisect.bisect_left(self._keys, offset - self.base_offset))

    def sanity_ok(self, segment_size: int) -> bool:
        self._ensure()
        if self._file_size % self.entry_size:
            return False
        prev = -1
        for k, v in zip(self._keys, self._vals, strict=True):
            if k <= prev or v < 0 or v >= max(segment_size, 1):
                return False
            prev = k
        return True


class TimeIndex(_Index):
    """`.timeindex`: max timestamp so far -> last offset of the batch holding it."""

    entry_size = 12
    _key_fmt = ">q"
    _val_fmt = ">i"

    def _decode(self, data: bytes, n: int) -> None:
        pairs = list(_TIME.iter_unpack(data[: n * 12]))
        self._keys = array("q", [ts for ts, _rel in pairs])
        self._vals = array("i", [rel for _ts, rel in pairs])

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base_offset) when empty (Kafka's lastEntry)."""
        self._ensure()
        if not self._keys:
            return -1, self.base_offset
        return self._keys[-1], self.base_offset + self._vals[-1]

    def entry(self, i: int) -> tuple[int, int]:
        self._ensure()
        return self._keys[i], self.base_offset + self._vals[i]

    def all_entries(self) -> list[tuple[int, int]]:
        self._ensure()
        return [(k, self.base_offset + v) for k, v in zip(self._keys, self._vals, strict=True)]

    @property
    def is_full(self) -> bool:
        # Kafka: a time index is full one entry early, leaving room for the final entry on roll.
        return self.entries >= self.max_entries - 1

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= target, or (-1, base_offset)."""
        self._ensure()
        i = bisect.bisect_right(self._keys, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._keys[i], self.base_offset + self._vals[i]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append only if `timestamp` exceeds the last entry's (TimeIndex.maybeAppend)."""
        self._ensure()
        if not skip_full_check and len(self._keys) >= self.max_entries:
            raise CorruptRecordError(f"time index {self.path} is full")
        last_ts, last_off = self.last_entry
        if self._keys and offset < last_off:
            raise CorruptRecordError(f"time index offset {offset} below last entry offset {last_off}")
        if self._keys and timestamp < last_ts:
            raise CorruptRecordError(f"time index timestamp {timestamp} below last entry {last_ts}")
        if timestamp > last_ts:
            keys, _vals = self._arrays()
            if len(keys) * self.entry_size >= self._file_size:
                # final entry on a trimmed or exactly-full file: grow by one entry
                self._fh.ftruncate((len(keys) + 1) * self.entry_size)
                self._file_size = (len(keys) + 1) * self.entry_size
            rel = offset - self.base_offset
            self._append_entry(timestamp, rel, _TIME.pack(timestamp, rel))

    def truncate_to(self, offset: int) -> None:
        """Remove entries whose offset >= `offset`."""
        self._ensure()
        rel = offset - self.base_offset
        n = len(self._vals)
        while n > 0 and self._vals[n - 1] >= rel:
            n -= 1
        self._truncate_entries(n)

    def sanity_ok(self) -> bool:
        self._ensure()
        if self._file_size % self.entry_size:
            return False
        prev_ts = -(2**63)
        prev_off = -1
        for k, v in zip(self._keys, self._vals, strict=True):
            if k <= prev_ts or v < prev_off or v < 0:
                return False
            prev_ts, prev_off = k, v
        return True
