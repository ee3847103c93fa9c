"""Process helpers for the benchmarks, built on Linux's /proc (no psutil needed).

Memory figures come from ``/proc/<pid>/status``: ``VmRSS`` is the resident set now, ``VmHWM`` the
resident high-water mark of that one process. A broker may fork helpers, so "the broker's memory" is the
sum over the process and all its descendants (found by walking ``PPid`` in ``/proc/*/stat``).

Stopping is always by pid: the process we spawned and the descendants we found under it, never by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces: split after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` (children, grandchildren, ...), not including ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        parent = _ppid(int(entry))
        if parent is not None:
            children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def rss_kb(pid: int) -> int:
    """Resident set size of one process, in KiB (0 if it is gone)."""
    return _status_kb(pid, "VmRSS")


def tree_rss_kb(pid: int) -> int:
    """Resident set size of ``pid`` plus all its descendants, in KiB."""
    return sum(_status_kb(p, "VmRSS") for p in [pid, *descendants(pid)])


def tree_hwm_kb(pid: int) -> int:
    """Largest single-process ``VmHWM`` in the tree (exact for single-process brokers), in KiB."""
    return max((_status_kb(p, "VmHWM") for p in [pid, *descendants(pid)]), default=0)


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of one process (fields 14-17 of /proc/<pid>/stat), in clock ticks."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return sum(int(f) for f in fields[11:15])
    except (IndexError, ValueError):
        return 0


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live descendants, plus reaped children.

    CPU time is far less sensitive than wall time to other work competing for the same cores, so the
    benchmarks report it next to throughput as a per-record cost."""
    return sum(_cpu_ticks(p) for p in [pid, *descendants(pid)]) / _TICKS


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2 :].split()[0] != "Z"


def kill_tree(pid: int, grace: float = 5.0) -> None:
    """SIGTERM ``pid`` and its descendants, wait up to ``grace`` seconds, then SIGKILL what is left.

    The descendant list is taken before signalling (a dying parent re-parents its children to init)."""
    pids = [pid, *descendants(pid)]
    for p in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        _reap(pid)
        time.sleep(0.02)
    for p in pids:
        if alive(p):
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
