"""The request-memory budget: ``queued.max.request.bytes`` across all connections, and its accounting rules.

Every byte a connection has read and not yet answered is counted, whatever the frame's size:

- **Admission.** Before a connection reads the start of a frame it takes a provisional ``read_size`` (the
  most that read may return: ``RECV_SIZE``, an eighth of a smaller budget); right after the read it keeps
  exactly what it holds and gives the rest back (:meth:`RequestMemoryPool.settle`). A connection waiting
  for its next request holds nothing.
- **Whole frames.** Once a frame's 4-byte size is visible and the frame is not complete yet, the connection
  reserves the whole frame (:meth:`grow`) before reading on, and then reads no further than the frame's end.
- **Release.** After the request is answered the connection keeps only the bytes still buffered (the start
  of a pipelined next request); a closed connection gives everything back.

When the budget is used up, connections that need more wait *unread* (TCP pushes back on their clients).
Like Kafka's ``SimpleMemoryPool(strict=false)`` the budget is not strict for one request: a frame larger
than what is free is admitted when no other connection holds a whole-frame reservation, so one request up to
``socket.request.max.bytes`` always goes through, and the pool overshoots by at most that one frame plus
one read. A grower waits only on whole-frame holders, which never wait on the pool themselves (they finish,
or are closed by the body deadline), so waiting cannot deadlock.

Waiters are served first come, first served: a release grants queued growers from the head while they
fit, then queued admissions, and wakes exactly those (no thundering herd when thousands wait). Admissions
do not queue behind a waiting grower: a read's worth is small and given back at once, and a grower never
starves, because it goes ahead as soon as no whole-frame holder is left, however full the budget is.
``capacity <= 0`` means no bound (Kafka's -1).
"""
from __future__ import annotations

from collections import deque

import trio

RECV_SIZE = 256 * 1024


class _Waiter:
    __slots__ = ("event", "granted", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.granted = False
        self.event = trio.Event()


class RequestMemoryPool:
    __slots__ = ("_admits", "_grows", "capacity", "full", "read_size", "used")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # the most one read may return: RECV_SIZE, or an eighth of a small budget (so that several
        # connections can read at once even when the budget is smaller than RECV_SIZE)
        self.read_size = RECV_SIZE if capacity <= 0 else max(4096, min(RECV_SIZE, capacity // 8))
        self.used = 0        # bytes reserved by all connections
        self.full = 0        # connections holding a whole-frame reservation
        self._grows: deque[_Waiter] = deque()
        self._admits: deque[_Waiter] = deque()

    # -- admission: before reading the start of a frame -------------------------------------------------
    def _admit_fits(self, size: int) -> bool:
        return self.capacity <= 0 or self.used == 0 or self.used + size <= self.capacity

    def try_admit(self, size: int = RECV_SIZE) -> bool:
        if not self._admits and self._admit_fits(size):
            self.used += size
            return True
        return False

    async def admit(self, size: int = RECV_SIZE) -> None:
        """Reserve ``size`` provisional bytes for one read (waits while the budget is used up)."""
        if self.try_admit(size):    # no checkpoint: a cancellation here would lose the caller's grant
            return
        await self._wait(self._admits, _Waiter(size), full=False)

    # -- whole frames --------------------------------------------------------------------------------
    def _grow_fits(self, extra: int) -> bool:
        return self.capacity <= 0 or self.full == 0 or self.used + extra <= self.capacity

    async def grow(self, extra: int) -> None:
        """Reserve ``extra`` more bytes so the caller holds a whole frame; counts it as a whole-frame holder."""
        if not self._grows and self._grow_fits(extra):
            self.used += extra
            self.full += 1
            return
        await self._wait(self._grows, _Waiter(extra), full=True)

    # -- giving back ---------------------------------------------------------------------------------
    def settle(self, held: int, to: int) -> None:
        """A connection holding ``held`` bytes keeps ``to`` (<= held) and gives the rest back."""
        if held != to:
            self.used -= held - to
            if self._grows or self._admits:
                self._dispatch()

    def release(self, size: int, full: bool) -> None:
        self.used -= size
        if full:
            self.full -= 1
        if self._grows or self._admits:
            self._dispatch()

    # -- waiting ---------------------------------------------------------------------------------------
    async def _wait(self, queue: deque[_Waiter], w: _Waiter, *, full: bool) -> None:
        queue.append(w)
        try:
            await w.event.wait()
        except BaseException:
            if w.granted:           # granted, then cancelled before it ran: give the grant back
                self.release(w.size, full)
            else:
                queue.remove(w)
                self._dispatch()    # a waiter that was holding up the queue's head is gone
            raise

    def _dispatch(self) -> None:
        grows, admits = self._grows, self._admits
        while grows and self._grow_fits(grows[0].size):
            w = grows.popleft()
            self.used += w.size
            self.full += 1
            w.granted = True
            w.event.set()
        while admits and self._admit_fits(admits[0].size):
            w = admits.popleft()
            self.used += w.size
            w.granted = True
            w.event.set()

    @property
    def waiting(self) -> int:
        return len(self._grows) + len(self._admits)

    def __repr__(self) -> str:
        return (f"<RequestMemoryPool used={self.used} capacity={self.capacity} whole-frame holders={self.full} "
                f"waiting={self.waiting}>")
