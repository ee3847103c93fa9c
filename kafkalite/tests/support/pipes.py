"""Bounded reads of a child process's text pipes, for tests that start ``kafkalite serve`` (or another tool).

A bare ``proc.stdout.readline()`` or ``for line in proc.stderr`` blocks for as long as the child neither writes
the line nor exits: a broker that fails to start in some unexpected way hangs the test until pytest-timeout
kills the whole run. And a pipe nobody reads fills at 64 KiB, after which the child blocks on its next write.
``PipeLines`` drains the pipe in a daemon thread for the child's whole life (so the child never blocks on it)
and hands lines out with a deadline that only detects a hang: generous, since CI runs on 2 loaded cores.
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import IO

DEADLINE_S = 120.0


class PipeLines:
    """Every line of one text pipe, read by a daemon thread; ``wait_for`` returns the first matching one."""

    def __init__(self, stream: IO[str] | None, name: str = "pipe") -> None:
        assert stream is not None, f"{name} is not a pipe"
        self.name = name
        self.seen: list[str] = []       # every line handed out or skipped so far (for failure messages)
        self._q: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._drain, args=(stream,), name=f"drain-{name}", daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self._q.put(line)
        except (OSError, ValueError):   # the test closed the pipe while the child was still writing
            pass
        finally:
            self._q.put(None)

    def wait_for(self, match: Callable[[str], bool] | str, timeout: float = DEADLINE_S) -> str:
        """The next line for which ``match`` is true (a string: the line contains it). AssertionError, with
        everything read so far, if the pipe ends first or no such line comes within ``timeout`` seconds."""
        pred = (lambda ln: match in ln) if isinstance(match, str) else match
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._q.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no matching line on {self.name} within {timeout:.0f}s; "
                                     f"so far:\n{self.text()[-3000:]}") from None
            if line is None:
                self._q.put(None)   # later calls see the end too
                raise AssertionError(f"{self.name} ended without a matching line; it said:\n{self.text()[-3000:]}")
            self.seen.append(line)
            if pred(line):
                return line

    def readline(self, timeout: float = DEADLINE_S) -> str:
        """The next line ("" at the end of the pipe), like ``IO.readline`` but with a deadline."""
        try:
            line = self._q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line on {self.name} within {timeout:.0f}s; "
                                 f"so far:\n{self.text()[-3000:]}") from None
        if line is None:
            self._q.put(None)
            return ""
        self.seen.append(line)
        return line

    def text(self) -> str:
        """Every line read so far plus whatever is queued now (does not wait; for failure messages: the
        queued lines count as read)."""
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                break
            if line is None:
                self._q.put(None)
                break
            self.seen.append(line)
        return "".join(self.seen)
