"""The event-loop stall probe (kafkalite.runtime.loopwatch): it sees a loop held without an await, names the request
that held it, warns once per period, and runs in every broker."""
from __future__ import annotations

import logging
import time

import pytest
import trio

from kafkalite.embedded import Broker
from kafkalite.runtime import loopwatch
from kafkalite.runtime.loopwatch import LoopWatch
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest


def test_probe_sees_a_blocked_loop_and_names_the_request(caplog: pytest.LogCaptureFixture) -> None:
    watch = LoopWatch(warn_ms=100)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(watch.run)
            await trio.sleep(0.05)
            watch.note_request(3, 12, 7)   # a Metadata v12 request on connection #7 starts ...
            time.sleep(0.3)  # noqa: ASYNC251 -- holds the loop without an await, deliberately
            watch.note_request(18, 3, 8)   # answered right after the stall: not the one to blame
            await trio.sleep(0.05)
            time.sleep(0.15)  # noqa: ASYNC251 -- a second stall inside the warning period: counted, not logged
            await trio.sleep(0.05)
            nursery.cancel_scope.cancel()

    with caplog.at_level(logging.WARNING, logger="kafkalite.runtime.loopwatch"):
        trio.run(main)
    assert watch.max_stall_ms >= 250
    assert (watch.max_stall_what or "").startswith("Metadata v12 on connection #7")
    assert sum(watch.histogram[-3:]) == 2          # the 150 ms and the 300 ms stall
    warnings = [r.getMessage() for r in caplog.records if r.name == "kafkalite.runtime.loopwatch"]
    assert len(warnings) == 1, warnings
    assert "Metadata v12 on connection #7" in warnings[0]
    assert loopwatch.WARN_KEY in warnings[0]


def test_every_broker_runs_a_probe() -> None:
    with Broker() as b:
        watch = loopwatch.for_port(b.port)
        assert watch is not None
        with RawClient(b.host, b.port) as c:
            for _ in range(3):
                c.request(ApiVersionsRequest(), 3)
        deadline = time.monotonic() + 60   # bounds a hang only
        while watch.samples < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watch.samples >= 5


def test_a_stall_after_an_await_is_blamed_on_its_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that awaits first (a worker thread, a slice pause) and then holds the loop started before the
    stall, so the ring of request starts cannot name it; the sampler thread's stack sample does, with where."""
    import dataclasses

    from kafkalite.handlers import load_all, registry
    from kafkalite_wire.messages import DescribeClusterRequest

    load_all()
    spec = registry.HANDLERS[60]

    async def slow(ctx, req):  # type: ignore[no-untyped-def]
        await trio.sleep(0.1)       # the probe runs meanwhile: the request's start is before its last sleep
        _hold_the_loop(0.4)
        return await spec.fn(ctx, req)

    monkeypatch.setitem(registry.HANDLERS, 60, dataclasses.replace(spec, fn=slow))
    with Broker() as b:
        watch = loopwatch.for_port(b.port)
        assert watch is not None
        with RawClient(b.host, b.port) as c:
            c.request(ApiVersionsRequest(), 3)
            watch.reset()
            c.request(DescribeClusterRequest(), 0)
        deadline = time.monotonic() + 60   # the response leaves before the probe task runs again
        while watch.max_stall_ms < 300 and time.monotonic() < deadline:
            time.sleep(0.01)
        what = watch.max_stall_what or ""
        assert watch.max_stall_ms >= 300
        assert what.startswith("DescribeCluster v0 on connection #"), what
        assert "test_loopwatch.py" in what and "_hold_the_loop" in what, what


def _hold_the_loop(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:   # Python code: the sampler thread gets the GIL between bytecodes
        pass


def test_cpu_time_tells_a_busy_loop_from_a_starved_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stall in wall time is reported with the loop thread's CPU time during it, and the most CPU the loop
    spent between two wake-ups is kept apart (``max_busy_cpu_ms``): a loop that was not run (time.sleep here, the
    OS running other processes on a loaded machine) has a long stall but no CPU behind it. The loop thread's CPU
    clock is a counter advanced by the test, so the figures are exact."""
    fake_cpu = [0.0]
    monkeypatch.setattr(loopwatch, "thread_cpu", lambda: fake_cpu[0])
    watch = LoopWatch(warn_ms=0)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(watch.run)
            await trio.sleep(0.05)
            time.sleep(0.3)  # noqa: ASYNC251 -- the loop not run: a long stall, no loop CPU
            await trio.sleep(0.05)
            assert watch.max_stall_ms >= 250 and watch.max_stall_cpu[0] == 0 and watch.max_busy_cpu_ms == 0
            fake_cpu[0] += 0.2   # 200 ms of the loop's own work, in a stall shorter than the first
            time.sleep(0.1)  # noqa: ASYNC251
            await trio.sleep(0.05)
            nursery.cancel_scope.cancel()

    trio.run(main)
    snap = watch.snapshot()
    assert snap["max_stall_ms"] >= 250 and snap["max_stall_loop_cpu_ms"] == 0   # the longest stall: starved
    assert snap["max_busy_cpu_ms"] == pytest.approx(200)                        # the busiest interval
