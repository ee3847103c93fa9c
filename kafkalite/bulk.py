"""Requests of many entries: no full garbage collection while one is alive.

A 10 MB request can decode into millions of objects (a Produce naming a million partitions, a DescribeConfigs of a
million resources). Connections decode such frames in a worker thread (connection.OFFLOAD_BYTES), and handlers
walk them in slices (kafkalite.slices), yet the event loop still stalled for 0.2-1.3 s with no request to blame:
CPython's collector runs a full (generation 2) collection whenever the objects that survived into the oldest
generation grow by a quarter, and each one walks the whole heap holding the GIL, in whichever thread allocated
last. Decoding a million entries triggered about ten of them, the last ones 100-200 ms each on an otherwise
small broker (measured with ``gc.callbacks``), and building the answer as many again.

None of that work can find garbage: the request's and response's objects are all reachable until the request is
answered, then freed by their reference counts. So while any such request is in flight, :func:`paused` raises
the oldest generation's threshold out of reach; the young generations are still collected as usual (cheap:
they hold only recent objects), so short-lived reference cycles are still reclaimed. When the last bulk request
is answered the thresholds come back, and the next full collection walks the heap as it is then (the request's
objects already freed). The cost: cyclic garbage that reached the oldest generation meanwhile waits for that
collection.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: the oldest generation's threshold while a bulk request is in flight (never reached)
PAUSED_THRESHOLD = 1 << 30

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None


def pause() -> None:
    global _active, _saved
    with _lock:
        _active += 1
        if _active == 1:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], PAUSED_THRESHOLD)


def resume() -> None:
    global _active, _saved
    with _lock:
        _active -= 1
        if _active == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No full collection inside (nests, and overlaps across tasks and threads)."""
    pause()
    try:
        yield
    finally:
        resume()


def active() -> int:
    """How many bulk requests are in flight."""
    return _active
