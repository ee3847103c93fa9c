"""Progress of the copy: a bar with records/s and an ETA on a terminal, plain lines otherwise.

Work is counted in source offsets (a partition's range from its log start to its planned end is known before
the copy; the number of records in it is not, for compacted or transactional topics), the speed in records
written per second over the last ten seconds, and the ETA is the offsets left at the offsets' recent rate.
On a terminal (stderr is a TTY) the bar is redrawn in place at most 4 times a second; otherwise one line every
``interval`` seconds (default 5), so a log file stays readable.
"""
from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TextIO

WIDTH = 30


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class ProgressBar:
    def __init__(self, total: int, *, out: TextIO | None = None, tty: bool | None = None,
                 interval: float = 5.0, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.total = max(total, 0)
        self.out = out or sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.interval = 0.25 if self.tty else interval
        self.enabled = enabled
        self.start = clock()
        self._last = 0.0
        self._samples: deque[tuple[float, int, int]] = deque()
        self._shown = False
        self._printed = (-1, -1)
        self.done = 0
        self.records = 0

    def line(self, now: float) -> str:
        t0, d0, r0 = self._samples[0]
        span = now - t0
        rate = (self.records - r0) / span if span > 0 else 0.0
        orate = (self.done - d0) / span if span > 0 else 0.0
        frac = min(self.done / self.total, 1.0) if self.total else 1.0
        eta = _clock((self.total - self.done) / orate) if orate > 0 and self.done < self.total else "-:--:--"
        if self.done >= self.total:
            eta = "0:00:00"
        bar = "#" * int(frac * WIDTH) + "." * (WIDTH - int(frac * WIDTH))
        if self.tty:
            return f"[{bar}] {frac:4.0%}  {self.records:,} records  {rate:,.0f} records/s  ETA {eta}"
        return (f"migrate: {frac:.0%} of {self.total:,} offsets, {self.records:,} records copied, "
                f"{rate:,.0f} records/s, ETA {eta}")

    def update(self, done: int, records: int, force: bool = False) -> None:
        self.done, self.records = done, records
        now = self.clock()
        if not self._samples:
            self._samples.append((self.start, done, records))
        self._samples.append((now, done, records))
        while len(self._samples) > 2 and now - self._samples[1][0] > 10:
            self._samples.popleft()
        if not self.enabled:
            return
        if not force and now - self._last < self.interval:
            return
        self._last = now
        text = self.line(now)
        if self.tty:
            self.out.write("\r" + text + "\x1b[K")
        else:
            self.out.write(text + "\n")
        self.out.flush()
        self._shown = True
        self._printed = (self.done, self.records)

    def finish(self) -> None:
        if not self.enabled:
            return
        if self.tty or not self._shown or self._printed != (self.done, self.records):
            self.update(self.done, self.records, force=True)
        if self.tty and self._shown:
            self.out.write("\n")
            self.out.flush()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.start
