"""The descriptor cache: bounded, pinned handles are never closed under their user, evicted ones reopen by
their current name, and running out of descriptors is a StorageError."""

from __future__ import annotations

import errno
import os
import resource
import uuid
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, LogManager
from kafkalite_storage import handles as H
from kafkalite_storage.testing import encode_batch


@pytest.fixture
def small_cache():  # type: ignore[no-untyped-def]
    before = H.CACHE.capacity
    H.CACHE.resize(H.MIN_CAPACITY)
    yield H.CACHE
    H.CACHE.resize(before)


def test_many_partitions_hold_at_most_the_budget(tmp_path: Path, small_cache: H.HandleCache) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig())
    logs = [lm.create_log("t", p, uuid.uuid4()) for p in range(200)]
    for plog in logs:
        plog.append(encode_batch([b"x"]))
    assert small_cache.open_count <= small_cache.capacity
    assert len(os.listdir("/proc/self/fd")) < 200   # 200 partitions x 3 files were held open before
    for plog in logs:   # every log still reads back (reopened on demand)
        (src, pos, n), = plog.read(0, 1000)
        assert len(src.pread(n, pos)) == n
    lm.close()
    lm = LogManager.open(str(tmp_path), LogConfig())
    assert lm.get_log("t", 199) is not None and lm.get_log("t", 199).log_end_offset == 1
    lm.close()


def test_pinned_handle_survives_eviction_and_close(tmp_path: Path, small_cache: H.HandleCache) -> None:
    path = tmp_path / "a"
    path.write_bytes(b"hello")
    h = H.FileHandle(str(path))
    fd = h.acquire()
    others = [H.FileHandle(str(tmp_path / f"o{i}")) for i in range(small_cache.capacity * 2)]
    for o in others:
        o.pwrite(b"x", 0)
    h.close()   # closed for good, but pinned: the descriptor stays valid until released
    assert os.pread(fd, 5, 0) == b"hello"
    h.release()   # the last pin closes it
    assert not h.is_open
    with pytest.raises(OSError):
        os.fstat(fd)


def test_evicted_handle_reopens_under_its_new_name(tmp_path: Path, small_cache: H.HandleCache) -> None:
    h = H.FileHandle(str(tmp_path / "seg.log"))
    h.pwrite(b"data", 0)
    h.evict()
    h.rename(str(tmp_path / "seg.log.deleted"))
    (tmp_path / "seg.log").write_bytes(b"other")   # a new file under the old name is not read
    assert h.pread(4, 0) == b"data"
    h.close()


def test_deleted_file_is_not_recreated_by_a_reopen(tmp_path: Path, small_cache: H.HandleCache) -> None:
    h = H.FileHandle(str(tmp_path / "gone"))
    h.pwrite(b"x", 0)
    h.evict()
    os.unlink(tmp_path / "gone")
    h.fsync()   # dirty, file gone: nothing to sync, nothing created
    assert not (tmp_path / "gone").exists()


def test_out_of_descriptors_is_a_storage_error(tmp_path: Path, small_cache: H.HandleCache) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hog: list[int] = []
    h = H.FileHandle(str(tmp_path / "f"))
    small_cache.close_all()   # nothing left to evict: the retry cannot find a descriptor either
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
    try:
        with pytest.raises(OSError):
            while True:
                hog.append(os.open(os.devnull, os.O_RDONLY))
        with pytest.raises(H.TooManyOpenFilesError):
            h.pwrite(b"x", 0)
        os.close(hog.pop())
        h.pwrite(b"x", 0)   # one descriptor free again: works
    finally:
        for fd in hog:
            os.close(fd)
        h.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("index_open", [False, True])
def test_out_of_descriptors_during_an_append_is_rolled_back(tmp_path: Path, small_cache: H.HandleCache,
                                                            index_open: bool) -> None:
    """EMFILE at a write step (the .log, or with the .log open, the index) is a KafkaStorageError like a full
    disk: nothing of the append stays, the partition stays online and the next append continues."""
    from kafkalite_storage import fs
    from kafkalite_storage.errors import KafkaStorageError

    lm = LogManager.open(str(tmp_path), LogConfig(index_interval_bytes=1))
    plog = lm.create_log("t", 0, uuid.uuid4())
    for i in range(3):
        plog.append(encode_batch([b"v%d" % i]))
    before = plog.read_bytes(0, 1 << 20)
    small_cache.close_all()
    real_open = fs.open

    def emfile(path: str, flags: int, mode: int = 0o777) -> int:
        if index_open and path.endswith(".log"):
            return real_open(path, flags, mode)
        raise OSError(errno.EMFILE, "Too many open files", path)

    fs.open = emfile   # type: ignore[assignment]
    try:
        with pytest.raises(KafkaStorageError) as caught:
            plog.append(encode_batch([b"lost"]))
    finally:
        fs.open = real_open
    assert "Too many open files" in str(caught.value)
    assert plog.offline is None and plog.log_end_offset == 3
    assert plog.read_bytes(0, 1 << 20) == before
    assert os.path.getsize(plog.segments[-1].log_path) == len(before)
    plog.append(encode_batch([b"v3"]))
    assert plog.log_end_offset == 4
    lm.close()
    lm = LogManager.open(str(tmp_path), LogConfig())
    again = lm.get_log("t", 0)
    assert again is not None and again.log_end_offset == 4
    assert again.read_bytes(0, 1 << 20)[: len(before)] == before
    lm.close()


class _CountingLock:
    """The cache lock, counting how often it is taken."""

    def __init__(self, lock: object) -> None:
        self.lock, self.taken = lock, 0

    def __enter__(self) -> object:
        self.taken += 1
        return self.lock.__enter__()  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> object:
        return self.lock.__exit__(*exc)  # type: ignore[attr-defined]


def test_fileno_of_an_open_file_takes_the_cache_lock_once(tmp_path: Path, small_cache: H.HandleCache,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """fileno() of an open file is one lock round trip, not a pin and an unpin; reads stay pinned (never done
    under the lock, which a slow disk would turn into a stall of every thread)."""
    data = os.urandom(4096)
    (tmp_path / "seg.log").write_bytes(data)
    h = H.FileHandle(str(tmp_path / "seg.log"))
    counting = _CountingLock(small_cache.lock)
    monkeypatch.setattr(small_cache, "lock", counting)
    assert h.pread(100, 7) == data[7:107]          # opened and pinned for the syscall
    assert h.is_open
    counting.taken = 0
    assert h.fileno() >= 0
    assert counting.taken == 1
    counting.taken = 0
    assert h.pread(10, 1) == data[1:11]
    assert counting.taken == 2                     # pin + unpin
    h.evict()
    counting.taken = 0
    assert h.fileno() >= 0 and counting.taken == 3   # the fast path finds it closed, then acquire + release
    h.close()


def test_small_reads_racing_evictions_read_their_own_files(tmp_path: Path, small_cache: H.HandleCache) -> None:
    """Threads read 4x more files than the cache holds, so descriptors are closed and their numbers reused all
    the time: every read still returns its own file's bytes (a read through a descriptor closed under it, or
    reused for another file, would not)."""
    import random
    import threading

    files = []
    for i in range(small_cache.capacity * 4):
        path = tmp_path / f"f{i}"
        path.write_bytes(bytes([i]) * 512)
        files.append((H.FileHandle(str(path), os.O_RDONLY), bytes([i]) * 64))
    wrong: list[str] = []

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(3000):
            h, want = files[rng.randrange(len(files))]
            got = h.pread(64, rng.randrange(448))
            if got != want:
                wrong.append(f"{h.path}: {got[:8]!r}")
                return

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and wrong == []
    assert small_cache.evictions > 0
    for h, _ in files:
        h.close()
