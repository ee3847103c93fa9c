"""Per-key turns: tasks that must act on one key (a partition) in arrival order while some of them await.

Trio's single thread already orders everything that runs without an ``await``. A task that awaits in the
middle of its work on a key (a worker thread, say) lets later tasks for the same key run first. ``Turns``
restores the order for those: ``async with turns.turn(key):`` waits until every task that took a turn on
``key`` before it is done (a fair ``trio.Lock`` per key, which trio hands over in arrival order). A key has a
lock only while some task holds or awaits its turn, so the common case (no turn in flight) costs one dict
lookup: ``key in turns``; a task that finds its key free and does not await may simply go ahead.
"""
from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, KeysView
from contextlib import asynccontextmanager

import trio


class Turns:
    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[trio.Lock, list[int]]] = {}   # key -> (lock, [tasks holding/awaiting])

    def __contains__(self, key: Hashable) -> bool:
        return key in self._locks

    def __len__(self) -> int:
        return len(self._locks)

    def keys(self) -> KeysView[Hashable]:
        """The keys with a turn in flight, live (``key in turns.keys()`` skips a Python-level call)."""
        return self._locks.keys()

    @asynccontextmanager
    async def turn(self, key: Hashable) -> AsyncIterator[None]:
        entry = self._locks.get(key)
        if entry is None:
            entry = self._locks[key] = (trio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[key]
