"""The trio scaffold every coordinator service shares (Kafka's ``coordinator-common`` ``CoordinatorRuntime``).

A coordinator is a pure state machine (``coordinator``: ``poll(now)``, ``next_deadline()``) kept in an internal
topic (``state_topic``). Its service -- the classic group service, the transaction service, the share service --
subclasses :class:`CoordinatorRuntime`, which owns what they all did alike:

- the clock (``now_ms``: wall time that follows trio's clock, so MockClock tests move the timers) and the timer
  loop (``kick()`` wakes it after a request changed the state);
- the life cycle: ``run()`` starts, waits for what must load first (``before_load``), replays the state topic
  (``load``; a failure is logged and the service starts empty, ``load_failed``), marks itself loaded
  (``after_load``, then the ``loaded`` event) and runs its loops under the broker's supervisor (``run_loops``;
  by default the timer loop); ``close()`` cancels it;
- reading the state topic back, every partition in chunks in a worker thread (``read_state_topic``);
- creating the state topic once however many requests ask at the same time (``create_state_topic``).

What each keeps for itself: its records and their replay, its appends (their batch attributes differ), and its
extra loops.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.coordinator.common.internal_topics import (
    TimerLoop,
    WallClock,
    create_internal_topic,
    read_chunks,
)
from kafkalite.runtime.supervisor import supervise

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)


class CoordinatorRuntime:
    #: the internal topic the coordinator keeps its state in
    state_topic: str = ""
    #: the name its loops run under in the supervisor (``<name>.timers``)
    task_name: str = "coordinator"
    #: what the log says when loading failed
    load_failed_message: str = "starting empty"
    #: the service's own logger
    logger: logging.Logger = log

    def __init__(self, state: BrokerState | None) -> None:
        self.state = state   # (a subclass sets ``self.coordinator``: the pure coordinator the timer loop polls)
        self.loaded = trio.Event()
        self._clock = WallClock()
        self._timers = TimerLoop(self)
        self._cancel: trio.CancelScope | None = None
        self._creating: trio.Event | None = None

    # -- time ----------------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return self._clock.now_ms()

    def kick(self) -> None:
        """A request changed the coordinator's state: its timers may be due sooner."""
        self._timers.kick()

    # -- life cycle ------------------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            self._cancel = scope
            self.now_ms()
            task_status.started()
            await self.before_load()
            try:
                await self.load()
            except Exception:
                self.logger.exception("loading %s failed; %s", self.state_topic, self.load_failed_message)
                self.load_failed()
            self.after_load()
            self.loaded.set()
            await self.run_loops()

    async def before_load(self) -> None:
        """What must be loaded before this coordinator's state (nothing by default)."""

    async def load(self) -> None:
        """Replay the state topic into the coordinator (nothing by default)."""

    def load_failed(self) -> None:
        """Loading raised: leave the coordinator empty (the default keeps whatever it has)."""

    def after_load(self) -> None:
        """The coordinator may answer now (before ``loaded`` is set)."""

    async def run_loops(self) -> None:
        """The service's loops, each under the supervisor (by default the timer loop alone)."""
        await supervise(self.state, f"{self.task_name}.timers", self._timers.run)

    def close(self) -> Any:
        if self._cancel is not None:
            self._cancel.cancel()
        return None

    # -- the state topic -------------------------------------------------------------------------------
    async def read_state_topic(self, feed: Callable[[bytes], None]) -> int | None:
        """Feed every chunk of whole batches of every partition of the state topic to ``feed``, in a worker
        thread (``feed`` runs there too). The partition count, or None when the topic does not exist."""
        st = self.state
        if st is None or self.state_topic not in st.topics:
            return None
        partitions = st.topics[self.state_topic].partitions
        logs = [st.get_log(self.state_topic, p) for p in range(partitions)]

        def read_all() -> None:
            for plog in logs:
                if plog is None:
                    continue
                for data in read_chunks(plog):
                    feed(data)

        await trio.to_thread.run_sync(read_all)
        return partitions

    async def create_state_topic(self, partitions: int, overrides: Mapping[str, str]) -> bool:
        """Create the state topic if it does not exist (its partition logs in a worker thread); requests that
        ask meanwhile wait for the same creation. False if it failed (logged)."""
        st = self.state
        if st is None or self.state_topic in st.topics:
            return True
        if self._creating is not None:
            await self._creating.wait()
            return self.state_topic in st.topics
        self._creating = ev = trio.Event()
        try:
            await create_internal_topic(st, self.state_topic, partitions, overrides)
        except Exception:
            self.logger.exception("could not create %s", self.state_topic)
            return False
        finally:
            self._creating = None
            ev.set()
        return True
