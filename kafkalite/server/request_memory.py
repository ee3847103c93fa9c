"""The request-memory budget: ``queued.max.request.bytes`` across all connections, and its accounting rules.

Every byte a connection has read and not yet answered is counted, and *only* bytes that have arrived:

- **Admission.** Before each read a connection takes a provisional grant (``read_size``: ``RECV_SIZE``, an
  eighth of a smaller budget, or less when the frame's end is nearer); right after the non-blocking read it
  keeps exactly what it holds and gives the rest back (:meth:`RequestMemoryPool.settle`). A grant lives for
  one ``recv`` call, so a connection waiting for its client's bytes holds only what it has received.
- **No reservation for an announced size.** A frame's 4-byte size is a claim, not bytes: a client that
  announces a 100 MB frame and trickles a byte a second holds a few bytes, not 100 MB, and nobody queues
  behind it (an earlier design reserved the whole frame up front; a handful of such clients starved every
  large request for the length of the body deadline).
- **Release.** After the request is answered the connection keeps only the bytes still buffered (the start
  of a pipelined next request); a closed connection gives everything back.

When the budget is used up, connections that need more wait *unread* (TCP pushes back on their clients:
Kafka mutes such channels), and are served first come, first served as bytes are given back; a release wakes
exactly the waiters that now fit.

Two rules keep this from getting stuck:

- **One finisher.** Connections holding parts of frames could fill the budget and all wait for more, none
  able to complete. So one connection at a time that is in the middle of a frame may read past the budget
  until that frame is complete (:attr:`finisher`), like Kafka's non-strict ``SimpleMemoryPool``: the budget
  is exceeded by at most one frame (``socket.request.max.bytes``) plus a read, and a request larger than the
  whole budget still goes through.
- **Stalled holders make way.** While someone waits for the budget, a connection that has held part of a
  request for ``kafkalite.request.stall.ms`` (default 1 s) and is waiting on its *client* (not on the
  budget) is closed, oldest first, with a log line (:func:`relieve`): its bytes go to clients that are
  sending. Without contention nothing is closed before ``kafkalite.request.body.timeout.ms``.

``capacity <= 0`` means no bound (Kafka's -1).
"""
from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

import trio

log = logging.getLogger("kafkalite.server.connection")

RECV_SIZE = 256 * 1024


class _Waiter:
    __slots__ = ("event", "granted", "holder", "size")

    def __init__(self, size: int, holder: object | None) -> None:
        self.size = size
        self.holder = holder
        self.granted = False
        self.event = trio.Event()


class RequestMemoryPool:
    __slots__ = ("_admits", "capacity", "finisher", "read_size", "starved", "used")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        # the most one read may return: RECV_SIZE, or an eighth of a small budget (so that several
        # connections can read at once even when the budget is smaller than RECV_SIZE)
        self.read_size = RECV_SIZE if capacity <= 0 else max(4096, min(RECV_SIZE, capacity // 8))
        self.used = 0                        # bytes held by all connections (received, or granted for a read)
        self.finisher: object | None = None  # the one mid-frame connection allowed past the budget
        self._admits: deque[_Waiter] = deque()
        self.starved = trio.Event()          # set while someone waits for the budget (``relieve`` watches it)

    def _fits(self, size: int) -> bool:
        return self.capacity <= 0 or self.used == 0 or self.used + size <= self.capacity

    def _may_finish(self, holder: object | None) -> bool:
        if holder is None:
            return False
        if self.finisher is None:
            self.finisher = holder
        return self.finisher is holder

    # -- admission: before each read ----------------------------------------------------------------------
    def try_admit(self, size: int = RECV_SIZE, holder: object | None = None) -> bool:
        """A grant of ``size`` for one read, if there is room (or ``holder``, a connection in the middle of a
        frame, is or becomes the finisher)."""
        if (not self._admits and self._fits(size)) or self._may_finish(holder):
            self.used += size
            return True
        return False

    async def admit(self, size: int = RECV_SIZE, holder: object | None = None) -> None:
        """Wait for a grant of ``size`` (first come, first served)."""
        if self.try_admit(size, holder):    # no checkpoint: a cancellation here would lose the caller's grant
            return
        w = _Waiter(size, holder)
        self._admits.append(w)
        self.starved.set()
        try:
            await w.event.wait()
        except BaseException:
            if w.granted:           # granted, then cancelled before it ran: give the grant back
                self.settle(w.size, 0)
            else:
                self._admits.remove(w)
                self._dispatch()    # a waiter that was holding up the queue's head is gone
            raise
        finally:
            if not self._admits:
                self.starved = trio.Event()

    # -- giving back ---------------------------------------------------------------------------------------
    def settle(self, held: int, to: int) -> None:
        """A connection holding ``held`` bytes keeps ``to`` (<= held) and gives the rest back."""
        if held != to:
            self.used -= held - to
            if self._admits:
                self._dispatch()

    def frame_done(self, holder: object) -> None:
        """``holder``'s frame is complete (or it closed): it is no longer the finisher."""
        if self.finisher is holder:
            self.finisher = None
            if self._admits:
                self._dispatch()

    def _dispatch(self) -> None:
        admits = self._admits
        while admits and (self._fits(admits[0].size) or self._may_finish(admits[0].holder)):
            w = admits.popleft()
            self.used += w.size
            w.granted = True
            w.event.set()

    @property
    def waiting(self) -> int:
        return len(self._admits)

    def __repr__(self) -> str:
        return f"<RequestMemoryPool used={self.used} capacity={self.capacity} waiting={self.waiting}>"


async def relieve(pool: RequestMemoryPool, connections: Iterable[Any], stall_s: float) -> None:
    """While anyone waits for the budget, close the connections that have held part of a request for
    ``stall_s`` while waiting on their client (``partial_since``), oldest first; runs for the server's life."""
    while True:
        await pool.starved.wait()
        now = trio.current_time()
        stalled = sorted((c for c in connections if c.reserved and c.partial_since is not None
                          and now - c.partial_since >= stall_s), key=lambda c: c.partial_since)
        for conn in stalled:
            log.warning("%r: closing: %d bytes of a request held for %.1f s while other clients wait for the "
                        "request memory (kafkalite.request.stall.ms)", conn, conn.reserved, now - conn.partial_since)
            conn.partial_since = None
            conn.cancel_scope.cancel()
        await trio.sleep(max(stall_s / 4, 0.01))
