"""Bounded slices of work on the event loop, for handlers that loop over client-chosen items.

Every task shares one thread, so a request naming a million partitions (a 4 MB frame) held the loop for
seconds while its handler walked them (issue #12, "Bound every request's work"). A handler that loops over
what the client listed asks a :class:`Slices` whether its slice is used up and, if so, yields:

    work = Slices()
    for p in partitions:
        if work.due():
            await work.pause()
        ...

``due()`` costs a counter increment; the clock is read every 128 items, so a slice overshoots
``SLICE_S`` by at most 128 items' work. Only read-only steps, or steps that are independent per item (Kafka
handles each partition of a request on its own too), may be sliced: between slices other requests run.
"""
from __future__ import annotations

import time

import trio

#: the most a sliced handler computes before letting other tasks run
SLICE_S = 0.02


class Slices:
    __slots__ = ("_n", "_until", "slice_s")

    def __init__(self, slice_s: float = SLICE_S) -> None:
        self.slice_s = slice_s
        self._n = 0
        self._until = time.perf_counter() + slice_s

    def due(self) -> bool:
        self._n += 1
        return not self._n & 127 and time.perf_counter() >= self._until

    async def pause(self) -> None:
        """Let every other ready task run, then start a new slice."""
        await trio.lowlevel.checkpoint()
        self._until = time.perf_counter() + self.slice_s
