"""Requests of many entries: no full garbage collection while one is alive.

A 10 MB request can decode into millions of objects (a Produce naming a million partitions, a DescribeConfigs of a
million resources). Connections decode such frames in a worker thread (connection.OFFLOAD_BYTES), and handlers
walk them in slices (kafkalite.runtime.slices), yet the event loop still stalled for 0.2-1.3 s with no request to blame:
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

Freeing is the other half: a decoded request of a million entries and its answer are trees of millions of
objects, and dropping the last reference to one frees the whole tree in one C call on whichever thread drops it,
holding the GIL throughout (fuzz seed 7 frame 24936, a 10 MB Produce of 1,000 x 1,000 partitions: ~1 s after
the pause above). :func:`dismantle` takes them apart in a worker thread a few hundred entries at a time, so the
GIL changes hands between steps (the same frame: ~0.2 s). Freed in that order, the allocator keeps some more
arenas than after one release (RSS ~140 MB instead of ~80 MB after a million-entry request).
"""
from __future__ import annotations

import contextlib
import gc
import struct
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: the oldest generation's threshold while a bulk request is in flight (never reached)
PAUSED_THRESHOLD = 1 << 30

#: the GIL switch interval while a bulk request is in flight (CPython's default is 5 ms)
SWITCH_INTERVAL = 0.0005

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None
_saved_switch: float | None = None


def pause() -> None:
    global _active, _saved, _saved_switch
    with _lock:
        _active += 1
        if _active == 1:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], PAUSED_THRESHOLD)
            _saved_switch = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_switch, SWITCH_INTERVAL))


def resume() -> None:
    global _active, _saved, _saved_switch
    with _lock:
        _active -= 1
        if _active == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None
            if _saved_switch is not None:
                sys.setswitchinterval(_saved_switch)
                _saved_switch = None


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No full collection inside (nests, and overlaps across tasks and threads)."""
    pause()
    try:
        yield
    finally:
        resume()


#: entries freed per step of :func:`dismantle`
CHUNK = 256


def dismantle(objs: list[Any]) -> None:
    """Free the message trees in ``objs`` (emptied) a few entries at a time. Call it in a worker thread holding
    the only references: every list longer than CHUNK in the trees is cut from its end, its entries' own long
    lists set aside first, so no single release frees more than about CHUNK entries with their small fields."""
    stack: list[list[Any]] = [objs]
    while stack:
        lst = stack.pop()
        while lst:
            chunk = lst[-CHUNK:]
            del lst[-CHUNK:]
            for item in chunk:
                _set_aside(item, stack)
            del chunk


def _set_aside(item: Any, stack: list[list[Any]]) -> None:
    """Put the long lists under ``item`` on ``stack`` (through short lists too: one topic of a million
    partitions sits in a list of one)."""
    if isinstance(item, list):
        if len(item) > CHUNK:
            stack.append(item)
        else:
            for x in item:
                _set_aside(x, stack)
        return
    for name in getattr(type(item), "__slots__", ()):
        value = getattr(item, name, None)
        if isinstance(value, list):
            _set_aside(value, stack)


def active() -> int:
    """How many bulk requests are in flight."""
    return _active


# -- how many entries a Produce frame names, without decoding it ---------------------------------------------
#: a Produce frame naming at least this many topic and partition entries is decoded off the loop
PRODUCE_ENTRIES = 1024

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise ValueError("varint too long")


def _skip_tags(buf: memoryview, pos: int) -> int:
    n, pos = _uvarint(buf, pos)
    for _ in range(n):
        _tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def produce_entries(frame: memoryview, limit: int = PRODUCE_ENTRIES) -> int:
    """Topic plus partition entries of a Produce request frame (v3-v11, without its length prefix), counted up
    to ``limit`` by skipping over the record sets: a few microseconds for an ordinary request. Connections
    decode Produce frames up to connection.OFFLOAD_PRODUCE_BYTES on the loop (a worker thread costs a
    request of a few hundred KB ~300 µs more), unless they name this many entries (a 1 MB frame can name
    170,000 partitions: 180 ms of decoding). A frame that does not parse counts as ``limit``: the decoder, in
    the worker thread, says what is wrong with it."""
    try:
        version = _I16.unpack_from(frame, 2)[0]
        flexible = version >= 9
        n = _I16.unpack_from(frame, 8)[0]
        pos = 10 + max(n, 0)                                   # client id (int16 string in every header)
        if flexible:
            pos = _skip_tags(frame, pos)
            n, pos = _uvarint(frame, pos)                      # transactional id, compact nullable
            pos += max(n - 1, 0) + 6                           # + acks, timeout
            topics, pos = _uvarint(frame, pos)
            topics -= 1
        else:
            n = _I16.unpack_from(frame, pos)[0]
            pos += 2 + max(n, 0) + 6
            topics = _I32.unpack_from(frame, pos)[0]
            pos += 4
        count = 0
        for _ in range(max(topics, 0)):
            count += 1
            if flexible:
                n, pos = _uvarint(frame, pos)
                pos += max(n - 1, 0)
                parts, pos = _uvarint(frame, pos)
                parts -= 1
            else:
                pos += 2 + max(_I16.unpack_from(frame, pos)[0], 0)
                parts = _I32.unpack_from(frame, pos)[0]
                pos += 4
            if count + max(parts, 0) >= limit:
                return limit
            for _ in range(max(parts, 0)):
                count += 1
                pos += 4                                       # partition index
                if flexible:
                    n, pos = _uvarint(frame, pos)
                    pos = _skip_tags(frame, pos + max(n - 1, 0))
                else:
                    pos += 4 + max(_I32.unpack_from(frame, pos)[0], 0)
            if flexible:
                pos = _skip_tags(frame, pos)
            if count >= limit:
                return limit
        return count
    except (IndexError, ValueError, struct.error):
        return limit


# -- a process that is the broker's own: its long-lived objects frozen out of the collector's walk -------------
_FREEZE = False   # only a broker that owns its process freezes the collector's view (see allow_gc_freeze)


#: the GIL switch interval of a process that is the broker's own (CPython's default: 5 ms)
OWN_PROCESS_SWITCH_INTERVAL = 0.001


def allow_gc_freeze() -> None:
    """Called by ``kafkalite serve``: the process is the broker's, so :func:`freeze_long_lived` may act. An
    embedded broker (``kafkalite.Broker``) shares its host's process and never freezes the host's objects
    (frozen objects are never collected, cycles included).

    The process's GIL switch interval also becomes ``OWN_PROCESS_SWITCH_INTERVAL``: a worker thread running
    Python code (logs loading lazily after a restart, topic creation, validation of a large batch) keeps the
    GIL for the whole interval while the event loop, which gives it up at every syscall, waits that long to
    get it back each time (a convoy: with logs loading at 20,000 partitions the loop stalled 100-290 ms, idle
    in epoll as the stack samples showed). Without contention the interval costs nothing. An embedded broker
    leaves its host's interval alone (kafkalite.runtime.gcpolicy lowers it only while a bulk request is in flight)."""
    global _FREEZE
    _FREEZE = True
    sys.setswitchinterval(min(sys.getswitchinterval(), OWN_PROCESS_SWITCH_INTERVAL))


def freeze_long_lived() -> None:
    """Move everything allocated so far out of the cyclic collector's reach (gc.freeze), after creating or
    loading many partition logs: they live until deleted, and a full collection that walks millions of such
    objects holds the GIL (so the event loop) for seconds. The CLI does the same once after startup. A no-op
    unless :func:`allow_gc_freeze` was called."""
    if _FREEZE:
        gc.freeze()
