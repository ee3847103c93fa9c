"""kafkalite.runtime.malloc: freed heap memory goes back to the OS once enough of it is free.

Large request buffers come from malloc's heap (reused by the next requests, no page faults per request); when
many were freed at once (connections holding half-sent requests went away), the trimmer returns the free pages,
which the heap would otherwise keep resident behind the small long-lived objects allocated among them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalite.runtime import malloc as malloc_tuning
from kafkalite.tests.support.procstat import rss_mb

trimmer = malloc_tuning.heap_trimmer()
pytestmark = pytest.mark.skipif(trimmer is None or not Path("/proc/self/status").exists(),
                                reason="glibc malloc (mallinfo2, malloc_trim) and /proc only")


def test_freed_heap_pages_go_back_to_the_os_once_enough_are_free() -> None:
    assert trimmer is not None
    trimmer.check()                          # start from a trimmed heap
    before = trimmer.trims
    blocks, pins = [], []
    for _ in range(1024):                    # 64 MiB of 64 KiB blocks (below any mmap threshold: heap memory)
        block = bytearray(64 * 1024)
        block[::4096] = b"x" * len(block[::4096])   # touch every page
        blocks.append(block)
        pins.append(bytearray(64))           # a small object after each: the heap cannot shrink at its top
    held = rss_mb(os.getpid())
    assert trimmer.check() is False and trimmer.trims == before    # nothing freed yet: no trim
    blocks.clear()
    assert trimmer.free_bytes() - trimmer.base >= malloc_tuning.TRIM_BYTES
    freed = rss_mb(os.getpid())
    assert trimmer.check() is True and trimmer.trims == before + 1
    after = rss_mb(os.getpid())
    assert held - freed < 16, "the blocks were mmapped, not heap memory: the test proves nothing"
    assert freed - after >= 32, f"RSS {freed:.0f} -> {after:.0f} MB after trimming 64 MiB of free heap"
    assert trimmer.check() is False          # nothing more to give back
    del pins
