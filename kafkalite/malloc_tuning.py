"""Give freed request memory back to the OS (glibc only; a no-op elsewhere).

glibc serves allocations of at least ``M_MMAP_THRESHOLD`` (128 KiB) with their own ``mmap`` and returns them
on ``free`` -- but by default it raises that threshold to the size of every such block freed (up to 32 MiB),
so after the first large request body is freed, later ones of that size land in the heap, where the
long-lived small objects interleaved with them keep the freed pages from being returned: 2,000 half-sent
256 KiB requests left ~300 MB resident after their connections closed. Setting the threshold explicitly
turns that adjustment off, so large request buffers are mapped and unmapped on their own. The broker owns
its process when run from the CLI, so ``kafkalite serve`` does this at start; an embedded broker leaves the
host process's allocator alone.
"""
from __future__ import annotations

import ctypes
import logging
import platform

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3   # glibc's mallopt parameter number
MMAP_THRESHOLD = 128 * 1024


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold (disables its dynamic growth). True if it was set."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        ok = bool(libc.mallopt(M_MMAP_THRESHOLD, threshold))
    except (OSError, AttributeError) as exc:
        log.debug("mallopt unavailable: %s", exc)
        return False
    if not ok:
        log.debug("mallopt(M_MMAP_THRESHOLD, %d) refused", threshold)
    return ok
