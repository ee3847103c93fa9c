"""A broker process's resident memory from /proc, for the memory tests and benchmarks."""
from __future__ import annotations

import time


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def settled_rss_mb(pid: int, timeout: float = 20.0) -> float:
    """The process's RSS once it stops growing (it has read what it is going to read)."""
    last = rss_mb(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = rss_mb(pid)
        if abs(now - last) < 2:
            return now
        last = now
    return last
