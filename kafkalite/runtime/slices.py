"""Bounded slices of work on the event loop, for handlers that loop over client-chosen items.

Every task shares one thread, so a request naming a million partitions (a 4 MB frame) held the loop for
seconds while its handler walked them (issue #12, "Bound every request's work"). A handler that loops over
what the client listed asks a :class:`Slices` whether its slice is used up and, if so, yields:

    work = Slices()
    for p in partitions:
        if work.due():
            await work.pause()
        ...

``due()`` costs a counter increment; the clock is read every 128 items (``every``), so a slice overshoots
``SLICE_S`` by at most that many items' work. Only read-only steps, or steps that are independent per item (Kafka
handles each partition of a request on its own too), may be sliced: between slices other requests run.
"""
from __future__ import annotations

import time

import trio

#: the most a sliced handler computes before letting other tasks run
SLICE_S = 0.02


class Slices:
    """``every`` (a power of two) is how many items go by between clock reads: 128 for items of a few
    microseconds; 16 for items that may touch files (an append or a read of a partition whose descriptors are
    not cached opens and closes files: 0.1-0.4 ms each at 20,000 partitions under RLIMIT_NOFILE 1,024, so 128
    of them overshot a slice by 50 ms and more)."""

    __slots__ = ("_mask", "_n", "_until", "slice_s")

    def __init__(self, slice_s: float = SLICE_S, every: int = 128) -> None:
        if every < 1 or every & (every - 1):
            raise ValueError(f"every must be a power of two, not {every}")
        self.slice_s = slice_s
        self._mask = every - 1
        self._n = 0
        self._until = time.perf_counter() + slice_s

    def due(self) -> bool:
        self._n += 1
        return not self._n & self._mask and time.perf_counter() >= self._until

    async def pause(self) -> None:
        """Let every other ready task run, then start a new slice."""
        await trio.lowlevel.checkpoint()
        self._until = time.perf_counter() + self.slice_s
