"""The one narrow layer every storage write goes through, and its fault injection for tests.

Theory of operation. Storage modules call `fs.<op>(...)` (module attribute, looked up at call time) for each
step that changes a file: `open` (with a create or write flag), `write`, `pwrite`, `pwritev`, `ftruncate`,
`fsync`, `syncfs` (a whole file system, by a descriptor of a directory on it), `replace`, `rename`, `unlink`,
`makedirs`. By default each name *is* the `os` function, so the hot
path (one `pwritev` per append, one `pwrite` per index entry) pays exactly what a direct `os.` call pays.

Tests replace the layer with `faults()`, which swaps the names for wrappers that classify each call by the
file it touches (the path, or for a descriptor the path behind `/proc/self/fd`) into a *step*, record it, and
raise `OSError(errno)` at the Nth matching call:

    with fs.faults() as f:
        f.fail(step="offset_index", op="write", errno=errno.ENOSPC)   # every index write fails from now on
        ...                                                            # (nth=3: from the third one; times=1: once)
        f.clear()                                                      # space came back
        f.calls                                                        # [(op, step, path), ...] seen so far

An `open` counts only when it creates or truncates a file. Steps (`step_of`): log, offset_index, time_index, txn_index, producer_snapshot, leader_epoch,
partition_metadata, checkpoint (the four offset checkpoints), clean_shutdown, cleaner (`.cleaned`/`.swap`),
meta (meta.properties), dir (directory fsync/creation), other. A `<file>.tmp` or `<file>.deleted` counts
as its file's step. Ops: open, write (write/pwrite/pwritev), truncate, fsync, rename (rename/replace),
unlink, mkdir. `short=True` makes the first failing write store half its bytes and return the short count
(the next one then raises), as a filling disk does.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# the write-path operations: by default the os functions themselves
open = os.open
write = os.write
pwrite = os.pwrite
pwritev = os.pwritev
ftruncate = os.ftruncate
fsync = os.fsync


def syncfs(fd: int) -> None:
    """syncfs(2): make everything written to the file system holding `fd` durable (sync(2) without it)."""
    fn = _libc_syncfs()
    if fn is None:
        os.sync()
        return
    if fn(fd) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"syncfs failed: {os.strerror(err)}")


@functools.cache
def _libc_syncfs() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


replace = os.replace
rename = os.rename
unlink = os.unlink
makedirs = os.makedirs

_OPS = ("open", "write", "pwrite", "pwritev", "ftruncate", "fsync", "syncfs", "replace", "rename", "unlink", "makedirs")
_ORIGINAL: dict[str, Any] = {name: globals()[name] for name in _OPS}
_CHECKPOINTS = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                "replication-offset-checkpoint", "cleaner-offset-checkpoint")


def step_of(path: str) -> str:
    """The named write step a file belongs to (see the module docstring)."""
    name = os.path.basename(path)
    for suffix in (".tmp", ".deleted"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.endswith((".cleaned", ".swap")):
        return "cleaner"
    for suffix, step in ((".log", "log"), (".index", "offset_index"), (".timeindex", "time_index"),
                         (".txnindex", "txn_index"), (".snapshot", "producer_snapshot")):
        if name.endswith(suffix):
            return step
    if name == "leader-epoch-checkpoint":
        return "leader_epoch"
    if name == "partition.metadata":
        return "partition_metadata"
    if name in _CHECKPOINTS:
        return "checkpoint"
    if name == ".kafka_cleanshutdown":
        return "clean_shutdown"
    if name == "meta.properties":
        return "meta"
    if os.path.isdir(path):
        return "dir"
    return "other"


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@dataclass
class Fault:
    """Fail matching calls from the `nth` one on (`times` of them; None: until cleared)."""

    step: str | None = None           # None: any step
    op: str | None = None             # None: any op (open, write, truncate, fsync, rename, unlink, mkdir)
    errno: int = _errno.ENOSPC
    nth: int = 1
    times: int | None = None
    short: bool = False
    when: Callable[[], bool] | None = None   # extra condition checked at each matching call
    path_contains: str | None = None
    seen: int = 0
    failed: int = 0


@dataclass
class Injector:
    """The active fault set (`faults()` yields it); thread-safe."""

    faults: list[Fault] = field(default_factory=list)
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, step: str | None = None, op: str | None = None, errno: int = _errno.ENOSPC, *,
             nth: int = 1, times: int | None = None, short: bool = False,
             when: Callable[[], bool] | None = None, path_contains: str | None = None) -> Fault:
        f = Fault(step, op, errno, nth, times, short, when, path_contains)
        with self._lock:
            self.faults.append(f)
        return f

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def _check(self, op: str, path: str) -> Fault | None:
        step = step_of(path)
        with self._lock:
            self.calls.append((op, step, path))
            for f in self.faults:
                if f.step not in (None, step) or f.op not in (None, op):
                    continue
                if f.path_contains is not None and f.path_contains not in path:
                    continue
                if f.when is not None and not f.when():
                    continue
                f.seen += 1
                if f.seen < f.nth or (f.times is not None and f.failed >= f.times):
                    continue
                f.failed += 1
                return f
        return None

    def _raise(self, op: str, path: str) -> None:
        f = self._check(op, path)
        if f is not None:
            raise OSError(f.errno, f"{os.strerror(f.errno)} (injected at {op} of {step_of(path)})", path)

    def _write(self, op: str, fd: int, size: int, do: Callable[[int], int]) -> int:
        """`do(limit)` performs the write of at most `limit` bytes."""
        f = self._check("write", _fd_path(fd))
        if f is None:
            return do(size)
        if f.short and f.failed == 1 and size > 1:
            return do(size // 2)
        raise OSError(f.errno, f"{os.strerror(f.errno)} (injected at {op})")


_active: Injector | None = None
_install_lock = threading.Lock()


def _wrappers(inj: Injector) -> dict[str, Any]:
    orig = _ORIGINAL

    def open_(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if flags & os.O_TRUNC or (flags & os.O_CREAT and not os.path.exists(path)):
            inj._raise("open", path)  # a write step only when it creates or empties a file
        return int(orig["open"](path, flags, mode, dir_fd=dir_fd))

    def write_(fd: int, data: Any) -> int:
        mv = memoryview(data)
        return inj._write("write", fd, len(mv), lambda n: int(orig["write"](fd, mv[:n])))

    def pwrite_(fd: int, data: Any, offset: int) -> int:
        mv = memoryview(data)
        return inj._write("pwrite", fd, len(mv), lambda n: int(orig["pwrite"](fd, mv[:n], offset)))

    def pwritev_(fd: int, buffers: Sequence[Any], offset: int) -> int:
        blob = b"".join(bytes(b) for b in buffers)
        return inj._write("pwritev", fd, len(blob), lambda n: int(orig["pwrite"](fd, blob[:n], offset)))

    def ftruncate_(fd: int, length: int) -> None:
        inj._raise("truncate", _fd_path(fd))
        orig["ftruncate"](fd, length)

    def fsync_(fd: int) -> None:
        inj._raise("fsync", _fd_path(fd))
        orig["fsync"](fd)

    def syncfs_(fd: int) -> None:
        inj._raise("fsync", _fd_path(fd))   # step "dir": the log dir's file system as a whole
        orig["syncfs"](fd)

    def replace_(src: str, dst: str) -> None:
        inj._raise("rename", dst)
        orig["replace"](src, dst)

    def rename_(src: str, dst: str) -> None:
        inj._raise("rename", dst)
        orig["rename"](src, dst)

    def unlink_(path: str) -> None:
        inj._raise("unlink", path)
        orig["unlink"](path)

    def makedirs_(path: str, mode: int = 0o777, exist_ok: bool = False) -> None:
        if not os.path.isdir(path):
            inj._raise("mkdir", path)
        orig["makedirs"](path, mode, exist_ok)

    return {"open": open_, "write": write_, "pwrite": pwrite_, "pwritev": pwritev_, "ftruncate": ftruncate_,
            "fsync": fsync_, "syncfs": syncfs_, "replace": replace_, "rename": rename_, "unlink": unlink_, "makedirs": makedirs_}


def install(inj: Injector) -> None:
    """Route every storage write through `inj` (until `uninstall`)."""
    global _active
    with _install_lock:
        if _active is not None:
            raise RuntimeError("fault injection is already active")
        _active = inj
        globals().update(_wrappers(inj))


def uninstall() -> None:
    global _active
    with _install_lock:
        globals().update(_ORIGINAL)
        _active = None


@contextmanager
def faults() -> Iterator[Injector]:
    """Fault injection for the duration of the block (tests)."""
    inj = Injector()
    install(inj)
    try:
        yield inj
    finally:
        uninstall()
