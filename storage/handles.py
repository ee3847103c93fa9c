"""File descriptors as a budget: one process-wide LRU cache of open storage files.

Theory of operation. Every storage file that is read or written repeatedly (a segment's `.log`, its
`.index` and `.timeindex`) is a `FileHandle`: a path plus open flags, and a descriptor only while the handle
sits in the cache. Each I/O call pins the handle for the duration of the syscall (`pread`, `pwritev`,
`fsync`, ...), so a descriptor is never closed under a call that uses it, and its number can never be
reused for another file while a caller still holds it. When opening a file would take the cache past its
capacity, the least recently used *unpinned* handles are closed first (pinned ones are skipped: the cache
goes over its budget rather than fail). A handle closed by eviction reopens by path on its next use; its
path follows renames (`rename`), so a segment renamed `.deleted` reopens under the new name.

Long-lived users pin explicitly: a Fetch response's file region `(handle, position, length)` is sent with
`os.sendfile` under `with handle.pinned() as fd:`; a handle that is closed meanwhile (segment deleted) keeps
its descriptor until the last pin is released.

Closed (inactive) segments therefore hold no descriptor unless they are being read, and the number of
descriptors storage holds is bounded by `capacity` plus what is pinned at that moment (a few per
connection). Running out anyway (EMFILE/ENFILE: sockets took the rest) first closes every unpinned handle and
retries once, then raises `TooManyOpenFilesError`, a KafkaStorageError (KAFKA_STORAGE_ERROR to the request)
and an OSError (EMFILE).

The handle decides *when* a file is open; `kafkalite_storage.fs` is *how* files change: an open that creates or
truncates, and every write, ftruncate, fsync and rename through a handle, calls the `fs.<op>` of that step
with the handle's descriptor, so fault injection (ENOSPC/EIO) sees them, and the callers' rollbacks (which
also go through handles) work the same whether or not the descriptor was evicted in between. Running out of
descriptors is an OSError too (EMFILE), so a write step that cannot open its file rolls back like one that
fails on a full disk.

`fileno()` of an open file takes the cache lock once (no pin and unpin). Reads are pinned for their syscall, never
done under the lock: a read of a cold or failing disk can take milliseconds or hang, and under the lock it would
stall every other thread's reads, opens and evictions (a fast path that did small preads under the lock saved
~0.3 µs per read and was dropped for that reason).

Writes mark a handle dirty; `fsync()` on a clean handle does nothing and never opens the file, so a
checkpoint over 100,000 idle partitions costs no descriptor. Data written through a descriptor that was
closed since is still in the page cache: an fsync through a fresh descriptor of the same file makes it
durable (it syncs the inode).
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kafkalite_storage import fs
from kafkalite_storage.errors import KafkaStorageError, StorageError

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 512
MIN_CAPACITY = 16


class TooManyOpenFilesError(KafkaStorageError, OSError):
    """A storage file could not be opened: the process is out of descriptors (EMFILE/ENFILE).

    Both a KafkaStorageError (KAFKA_STORAGE_ERROR to the request) and an OSError (errno EMFILE/ENFILE), so a
    write step that cannot open its file is rolled back by the same `except OSError` as a failed write."""


def _out_of_fds(exc: OSError) -> bool:
    return exc.errno in (errno.EMFILE, errno.ENFILE)


class HandleCache:
    """The bounded LRU of open `FileHandle`s (one per process: descriptors are a process-wide limit)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = max(capacity, MIN_CAPACITY)
        self.lock = threading.Lock()
        self._open: OrderedDict[FileHandle, None] = OrderedDict()
        self.opens = 0       # files opened (statistics, tests)
        self.evictions = 0   # descriptors closed to stay within capacity

    @property
    def open_count(self) -> int:
        return len(self._open)

    def _open_file(self, h: FileHandle) -> int:
        """Open `h` (lock held), evicting least recently used unpinned handles to make room."""
        self._evict(self.capacity - 1)
        try:
            fd = fs.open(h.path, h.flags, 0o644)
        except OSError as exc:
            if not _out_of_fds(exc):
                raise
            self._evict(0)   # give back everything we can, then try once more
            try:
                fd = fs.open(h.path, h.flags, 0o644)
            except OSError as exc2:
                if _out_of_fds(exc2):
                    raise TooManyOpenFilesError(exc2.errno, f"cannot open {h.path}: {exc2.strerror}") from exc2
                raise
        self.opens += 1
        # later reopens must neither bring back a file that was deleted since nor empty it again
        h.flags &= ~(os.O_CREAT | os.O_TRUNC)
        self._open[h] = None
        return fd

    def _evict(self, keep: int) -> None:
        if len(self._open) <= keep:
            return
        for h in list(self._open):
            if len(self._open) <= keep:
                break
            if h._pins == 0:
                del self._open[h]
                h._close_fd()
                self.evictions += 1

    def close_all(self) -> None:
        """Close every unpinned descriptor (tests, shutdown)."""
        with self.lock:
            self._evict(0)

    def resize(self, capacity: int) -> None:
        with self.lock:
            self.capacity = max(capacity, MIN_CAPACITY)
            self._evict(self.capacity)


CACHE = HandleCache()


def configure(capacity: int | None = None) -> int:
    """Set the cache's capacity (None: half of the soft RLIMIT_NOFILE, leaving the rest for sockets)."""
    if capacity is None or capacity <= 0:
        capacity = default_capacity()
    CACHE.resize(capacity)
    return CACHE.capacity


def default_capacity() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 4096
    return max(soft // 2, MIN_CAPACITY)


def raise_nofile_limit() -> tuple[int, int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns (old soft, new soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = soft
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            new = hard
        except (ValueError, OSError):
            new = soft
    return soft, new, hard


class FileHandle:
    """A storage file opened on demand through `CACHE`; every I/O call pins it while it runs."""

    __slots__ = ("__weakref__", "_closed", "_fd", "_held", "_pins", "dirty", "flags", "path")

    def __init__(self, path: str, flags: int = os.O_RDWR | os.O_CREAT) -> None:
        self.path = path
        self.flags = flags & ~os.O_EXCL   # O_CREAT / O_TRUNC apply to the first open only
        self._fd = -1
        self._pins = 0
        self._closed = False
        self._held = False
        self.dirty = False

    def __repr__(self) -> str:
        return f"FileHandle({self.path!r}, fd={self._fd})"

    @property
    def is_open(self) -> bool:
        return self._fd >= 0

    # -- pinning -------------------------------------------------------------------------------------
    def acquire(self) -> int:
        """Pin and return the descriptor (opening the file if needed); pair with `release()`."""
        cache = CACHE
        with cache.lock:
            if self._fd < 0:
                if self._closed:
                    raise StorageError(f"{self.path} is closed")
                self._fd = cache._open_file(self)
            else:
                cache._open.move_to_end(self)
            self._pins += 1
            return self._fd

    def release(self) -> None:
        with CACHE.lock:
            self._pins -= 1
            if self._pins == 0 and self._closed and self._fd >= 0:
                CACHE._open.pop(self, None)
                self._close_fd()

    @contextmanager
    def pinned(self) -> Iterator[int]:
        fd = self.acquire()
        try:
            yield fd
        finally:
            self.release()

    def fileno(self) -> int:
        """The descriptor, unpinned (valid for one immediate syscall from this thread only)."""
        cache = CACHE
        with cache.lock:   # open already (the usual case): one lock round trip, as acquire() + release() do
            fd = self._fd
            if fd >= 0:
                cache._open.move_to_end(self)
                return fd
        fd = self.acquire()
        self.release()
        return fd

    # -- I/O -----------------------------------------------------------------------------------------
    def pread(self, n: int, offset: int) -> bytes:
        fd = self.acquire()
        try:
            return os.pread(fd, n, offset)
        finally:
            self.release()

    def pwrite(self, data: bytes | bytearray | memoryview, offset: int) -> int:
        fd = self.acquire()
        try:
            self.dirty = True
            return fs.pwrite(fd, data, offset)
        finally:
            self.release()

    def pwritev(self, bufs: Sequence[bytes | bytearray | memoryview], offset: int) -> int:
        fd = self.acquire()
        try:
            self.dirty = True
            return fs.pwritev(fd, bufs, offset)
        finally:
            self.release()

    def ftruncate(self, size: int) -> None:
        fd = self.acquire()
        try:
            self.dirty = True
            fs.ftruncate(fd, size)
        finally:
            self.release()

    def size(self) -> int:
        if self._fd < 0:
            try:
                return os.stat(self.path).st_size
            except FileNotFoundError:
                pass
        fd = self.acquire()
        try:
            return os.fstat(fd).st_size
        finally:
            self.release()

    def fsync(self) -> None:
        """fsync if anything was written since the last fsync (a clean handle is not even opened)."""
        if not self.dirty:
            return
        try:
            fd = self.acquire()
        except FileNotFoundError:
            self.dirty = False
            return
        self.dirty = False
        try:
            fs.fsync(fd)
        except BaseException:
            self.dirty = True
            raise
        finally:
            self.release()

    # -- lifecycle -----------------------------------------------------------------------------------
    def rename(self, new_path: str) -> None:
        """Rename the file and follow it (under the cache lock: no reopen by the old name in between)."""
        with CACHE.lock:
            fs.rename(self.path, new_path)
            self.path = new_path

    def hold(self, open_now: bool = False) -> None:
        """Keep the descriptor, if the file is open now (or with `open_now` in any case), until `close()`
        (its file is about to be unlinked: regions handed out before, and reads that picked the segment just
        before, keep reading the old bytes, as an open descriptor does)."""
        with CACHE.lock:
            if self._held or self._closed or (self._fd < 0 and not open_now):
                return
            if self._fd < 0:   # open it now: once unlinked it cannot be reopened by name
                try:
                    self._fd = CACHE._open_file(self)
                except OSError as exc:   # gone already, or out of descriptors: later reads of it fail
                    log.warning("cannot keep %s open for late readers: %s", self.path, exc)
                    return
            self._held = True
            self._pins += 1

    def close(self) -> None:
        """Close for good: the descriptor now, or when the last pin is released."""
        with CACHE.lock:
            self._closed = True
            if self._held:
                self._held = False
                self._pins -= 1
            if self._fd >= 0 and self._pins == 0:
                CACHE._open.pop(self, None)
                self._close_fd()

    def evict(self) -> None:
        """Give the descriptor back now if unpinned (the handle reopens on its next use)."""
        with CACHE.lock:
            if self._fd >= 0 and self._pins == 0:
                CACHE._open.pop(self, None)
                self._close_fd()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
