"""What both coordinators (groups, transactions) need around their internal topics (``__consumer_offsets``,
``__transaction_state``): creating one, reading one back in chunks on load, a wall clock in ms, and the loop
that drives a pure coordinator's timers."""
from __future__ import annotations

import struct
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

READ_CHUNK = 4 * 1024 * 1024


async def create_internal_topic(state: BrokerState, name: str, partitions: int, overrides: Mapping[str, str]) -> None:
    """Create the partition logs in a worker thread (one fsync'd directory each), then register the topic.
    Raises whatever storage or the topic registry raises; the caller logs it and answers a retriable error."""
    topic_id = uuid.uuid4()
    # (several brokers, kafkalite.cluster: on every replica broker)
    await trio.to_thread.run_sync(state.topics.create_logs, name, partitions, dict(overrides), topic_id)
    if name not in state.topics:
        state.topics.create(name, partitions, overrides, topic_id=topic_id)


def read_chunks(plog: Any) -> Iterator[bytes]:
    """The partition's whole batches from its log start to its end, up to READ_CHUNK bytes at a time (blocking:
    call from a worker thread). Stops early at data it cannot step over."""
    offset, end = plog.log_start_offset, plog.log_end_offset
    while offset < end:
        data = plog.read_bytes(offset, READ_CHUNK)
        if not data:
            return
        yield data
        nxt = next_offset(data)
        if nxt is None or nxt <= offset:
            return
        offset = nxt


def next_offset(data: bytes) -> int | None:
    """Offset after the last whole batch in ``data`` (base offset + last offset delta + 1)."""
    pos, nxt = 0, None
    buf = bytes(data)
    while pos + 61 <= len(buf):
        base, length = struct.unpack_from(">qi", buf, pos)
        if pos + 12 + length > len(buf):
            break
        last_delta = struct.unpack_from(">i", buf, pos + 23)[0]
        nxt = base + last_delta + 1
        pos += 12 + length
    return nxt


class WallClock:
    """Wall-clock milliseconds that advance with trio's clock inside a run (so tests with a MockClock move
    the coordinators' timers), and plain wall time outside one (tests of the pure parts)."""

    def __init__(self) -> None:
        self._offset: float | None = None

    def now_ms(self) -> int:
        try:
            t = trio.current_time()
        except RuntimeError:
            return time.time_ns() // 1_000_000
        if self._offset is None:
            self._offset = time.time() - t
        return int((t + self._offset) * 1000)


class TimerLoop:
    """Drives a pure coordinator's timers: ``run()`` calls ``owner.coordinator.poll(now)`` and sleeps until
    its ``next_deadline()`` or until ``kick()`` (a request changed its state), for ever. A failure in one unit
    (a group, a transactional id) is contained by the coordinator; anything else propagates to the
    supervisor that runs the loop (logged, restarted)."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner          # has .coordinator (poll, next_deadline) and .now_ms()
        self._wakeup = trio.Event()

    def kick(self) -> None:
        self._wakeup.set()

    async def run(self) -> None:
        owner = self._owner
        while True:
            owner.coordinator.poll(owner.now_ms())
            deadline = owner.coordinator.next_deadline()
            self._wakeup = trio.Event()
            if deadline is None:
                await self._wakeup.wait()
            else:
                with trio.move_on_after(max(deadline - owner.now_ms(), 0) / 1000):
                    await self._wakeup.wait()
