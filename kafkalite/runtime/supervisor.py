"""Supervision of the broker's background loops (Erlang/OTP's one-for-one restart, on trio).

Every long-lived task the server starts besides the connections — the group and transaction coordinators'
timer loops, storage housekeeping (cleanup/compaction, retention, checkpoints), the idle-connection reaper,
the accept loops — runs as ``await supervisor.run(name, fn, *args)``:

- ``fn(*args)`` is awaited; if it raises an ``Exception``, the failure is logged once with its traceback
  (a repeat of the same error — same type and message — is logged as one line with its count), recorded
  in ``supervisor.tasks[name]`` and the task is started again after a backoff: 0.1 s, doubling up to
  ``max_backoff`` (30 s), back to the start once a run lasted ``healthy_after`` seconds (60 s). The
  exception never reaches the nursery, so no background failure ends the server.
- ``BaseException``s that are not ``Exception``s pass through untouched: ``trio.Cancelled`` (a deliberate
  shutdown cancels the background nursery), ``KeyboardInterrupt``, ``SystemExit``, and exception groups
  that contain one of them.
- ``fn`` returning normally ends the task (``state`` becomes ``"done"``): a loop that decides it has nothing
  to do (a storage engine without that job) is not restarted.

Records (:class:`TaskRecord`) are for tests and, later, metrics: name, state (``running`` /
``backing-off`` / ``done``), starts, failures, the last error as text and when it happened. The broker
keeps its supervisor at ``BrokerState.supervisor``.

Failures *inside* one unit of work — one group, one transactional id, one partition — are contained by the
code that owns the unit (see kafkalite/coordinator/classic/coordinator.py and txn_coordinator.py); the supervisor is
the last line for everything else a loop might raise.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio

log = logging.getLogger("kafkalite.runtime.supervisor")

INITIAL_BACKOFF_S = 0.1
MAX_BACKOFF_S = 30.0
HEALTHY_AFTER_S = 60.0


@dataclass(slots=True)
class TaskRecord:
    name: str
    state: str = "running"            # running | backing-off | done
    starts: int = 0
    failures: int = 0
    last_error: str | None = None     # "ValueError: message"
    last_failure_wall_ms: int | None = None
    backoff_s: float = 0.0            # the delay before the next restart (0 while healthy)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class Supervisor:
    def __init__(self, *, initial_backoff: float = INITIAL_BACKOFF_S, max_backoff: float = MAX_BACKOFF_S,
                 healthy_after: float = HEALTHY_AFTER_S) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.healthy_after = healthy_after
        self.tasks: dict[str, TaskRecord] = {}

    def record(self, name: str) -> TaskRecord:
        rec = self.tasks.get(name)
        if rec is None:
            rec = self.tasks[name] = TaskRecord(name)
        return rec

    def start_soon(self, nursery: trio.Nursery, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """``nursery.start_soon`` of a supervised ``fn(*args)``."""
        nursery.start_soon(self.run, name, fn, *args, name=name)

    async def run(self, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` under supervision until it returns or the surrounding scope is cancelled."""
        rec = self.record(name)
        backoff = self.initial_backoff
        while True:
            rec.state = "running"
            rec.starts += 1
            started = trio.current_time()
            try:
                await fn(*args)
            except Exception as exc:
                ran_for = trio.current_time() - started
                if ran_for >= self.healthy_after:
                    backoff = self.initial_backoff
                self._failed(rec, exc, backoff)
                rec.state = "backing-off"
                rec.backoff_s = backoff
                await trio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff)
                continue
            rec.state = "done"
            rec.backoff_s = 0.0
            return

    def _failed(self, rec: TaskRecord, exc: Exception, backoff: float) -> None:
        text = _describe(exc)
        repeat = text == rec.last_error
        rec.failures += 1
        rec.last_error = text
        rec.last_failure_wall_ms = time.time_ns() // 1_000_000
        if repeat:
            log.error("background task %s failed again (%d failures): %s; restarting in %.1f s",
                      rec.name, rec.failures, text, backoff)
        else:
            log.error("background task %s failed; restarting in %.1f s", rec.name, backoff, exc_info=exc)


async def supervise(owner: Any, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Run ``fn(*args)`` under ``owner.supervisor`` (the broker state's), or a private one when the owner
    has none (a coordinator service built without a broker, in unit tests)."""
    sup = getattr(owner, "supervisor", None)
    if not isinstance(sup, Supervisor):
        sup = Supervisor()
    await sup.run(name, fn, *args)


__all__ = ["Supervisor", "TaskRecord", "supervise"]
