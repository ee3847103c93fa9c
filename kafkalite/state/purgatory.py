"""Long polls parked until data arrives: Kafka's ``DelayedOperationPurgatory<DelayedFetch>``, on trio events.

A Fetch (or a replica's fetch, or a share fetch) that has not enough bytes parks one event on every partition it
reads (``append_waiter``); the next append to any of them (``wake``, called through ``BrokerState.notify_append``)
sets it, and the request reads again. Shutdown (``begin_drain``) sets every event, so each long poll answers now
with what it has, and no new one parks.
"""
from __future__ import annotations

from collections.abc import Iterable

import trio


class Purgatory:
    def __init__(self) -> None:
        self.draining = False
        self._waiters: dict[tuple[str, int], set[trio.Event]] = {}

    def wake(self, topic: str, partition: int) -> None:
        """Wake the long polls on one partition (an append, a leadership or high watermark change)."""
        waiters = self._waiters.pop((topic, partition), None)
        if waiters:
            for ev in waiters:
                ev.set()

    def append_waiter(self, keys: Iterable[tuple[str, int]]) -> trio.Event:
        """One event set by the next append to any of ``keys`` (or by shutdown). Call ``drop_waiter`` after."""
        ev = trio.Event()
        if self.draining:
            ev.set()
            return ev
        for key in keys:
            self._waiters.setdefault(key, set()).add(ev)
        return ev

    def drop_waiter(self, keys: Iterable[tuple[str, int]], ev: trio.Event) -> None:
        for key in keys:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(ev)
                if not waiters:
                    del self._waiters[key]

    def partition_event(self, topic: str, partition: int) -> trio.Event:
        """An event set by the next append to one partition (docs/internals/interfaces.md)."""
        return self.append_waiter([(topic, partition)])

    def parked(self) -> int:
        """How many long polls are parked (each counted once, however many partitions it waits on)."""
        return len(set().union(*self._waiters.values())) if self._waiters else 0

    def begin_drain(self) -> None:
        """Shutdown: wake every long poll so it answers now with what it has."""
        self.draining = True
        waiters, self._waiters = self._waiters, {}
        for evs in waiters.values():
            for ev in evs:
                ev.set()
