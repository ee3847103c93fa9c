"""The supervisor restarts failed background loops with a backoff and lets cancellation through; a failing
storage housekeeping job does not stop the broker and runs again."""
from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import trio
import trio.testing

from kafkalite.embedded import Broker
from kafkalite.runtime.supervisor import Supervisor
from kafkalite.tests.broker.test_admin import create, topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage import LogManager
from kafkalite_storage.testing import encode_batch


def test_restarts_with_doubling_backoff_then_resets_after_a_healthy_run(caplog: pytest.LogCaptureFixture) -> None:
    sup = Supervisor(initial_backoff=0.1, max_backoff=0.4, healthy_after=10.0)
    starts: list[float] = []

    async def flaky() -> None:
        starts.append(trio.current_time())
        if len(starts) == 6:
            await trio.sleep(20)          # a healthy run
        if len(starts) < 8:
            raise ValueError("boom")

    async def main() -> None:
        await sup.run("flaky", flaky)

    caplog.set_level(logging.ERROR, "kafkalite.runtime.supervisor")
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    gaps = [round(b - a, 3) for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps[:5] == [0.1, 0.2, 0.4, 0.4, 0.4]     # doubling up to the cap
    assert gaps[5:] == [20.1, 0.2]                    # healthy run, then the backoff starts over
    rec = sup.tasks["flaky"]
    assert (rec.state, rec.starts, rec.failures, rec.last_error) == ("done", 8, 7, "ValueError: boom")
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1                       # the same error again is one line, not a traceback
    assert sum("failed again" in r.getMessage() for r in caplog.records) == 6


def test_cancellation_passes_through() -> None:
    sup = Supervisor()
    cancelled = []

    async def forever() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            cancelled.append(True)
            raise

    async def main() -> None:
        async with trio.open_nursery() as n:
            sup.start_soon(n, "forever", forever)
            await trio.sleep(1)
            n.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert cancelled == [True]
    assert sup.tasks["forever"].failures == 0 and sup.tasks["forever"].starts == 1


def test_base_exceptions_are_not_swallowed() -> None:
    sup = Supervisor()

    async def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trio.run(sup.run, "kbd", interrupt)


def test_failing_cleanup_job_is_restarted_and_the_broker_keeps_serving(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = LogManager.cleanup

    def cleanup_failing_once(self: LogManager) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise OSError(5, "injected I/O error")
        original(self)

    monkeypatch.setattr(LogManager, "cleanup", cleanup_failing_once)
    with Broker(data_dir=tmp_path, overrides={"log.cleaner.backoff.ms": "100"}) as b, \
            RawClient(b.host, b.port) as c:
        state = _broker_state(b)
        _start_coordinators(c, state)   # they start on first use (#28); their timer loops run supervised too
        deadline = time.monotonic() + 30
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(calls) >= 3                          # it ran again after the failure, and again
        rec = state.supervisor.tasks["storage.cleanup"]
        assert rec.failures == 1 and rec.last_error == "OSError: [Errno 5] injected I/O error"
        assert rec.state in ("running", "backing-off") and rec.starts == 2
        create(c, topic("alive", 1))
        r = c.request(produce_req("alive", encode_batch([b"x"])), 9)
        assert r.responses[0].partition_responses[0].error_code == 0
        assert {"storage.enforce_retention", "storage.checkpoint", "group-coordinator.timers",
                "transaction-coordinator.timers", "idle-connection-reaper"} <= set(state.supervisor.tasks)


def _start_coordinators(c: RawClient, state, *, groups: bool = True, txns: bool = True) -> None:
    """Start the group and/or transaction coordinator the way a client does (a FindCoordinator for a group /
    a transactional id: since #28 a coordinator whose state topic does not exist yet starts on first use), and
    wait until each one's timer loop runs under the supervisor."""
    from kafkalite_wire.messages import FindCoordinatorRequest

    wanted = []
    if groups:
        assert c.request(FindCoordinatorRequest(key="sup-g", key_type=0), 1).error_code == 0
        wanted.append("group-coordinator.timers")
    if txns:
        assert c.request(FindCoordinatorRequest(key="sup-t", key_type=1), 1).error_code == 0
        wanted.append("transaction-coordinator.timers")
    deadline = time.monotonic() + 30
    while not set(wanted) <= set(state.supervisor.tasks) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(wanted) <= set(state.supervisor.tasks), sorted(state.supervisor.tasks)


def _broker_state(b: Broker):
    import gc

    from kafkalite.state import BrokerState

    found = [o for o in gc.get_objects() if isinstance(o, BrokerState) and o.log_dir == b.data_dir]
    assert len(found) == 1
    return found[0]


def test_group_timer_loop_failure_is_restarted_and_groups_keep_working(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.coordinator.classic.coordinator import GroupCoordinator
    from kafkalite.tests.broker.test_group_handlers import join

    failures: list[int] = []
    original = GroupCoordinator.next_deadline

    def next_deadline_failing_once(self: GroupCoordinator) -> int | None:
        if not failures:
            failures.append(1)
            raise RuntimeError("injected timer failure")
        return original(self)

    monkeypatch.setattr(GroupCoordinator, "next_deadline", next_deadline_failing_once)
    with Broker() as b, RawClient(b.host, b.port) as c:
        state = _broker_state(b)
        # the coordinator starts on first use (#28): its timer loop (failing once) runs from then on
        _start_coordinators(c, state, txns=False)
        deadline = time.monotonic() + 30
        rec = state.supervisor.tasks.get("group-coordinator.timers")
        while (rec is None or rec.starts < 2) and time.monotonic() < deadline:
            time.sleep(0.05)
            rec = state.supervisor.tasks.get("group-coordinator.timers")
        assert rec is not None and rec.failures == 1 and rec.starts == 2
        assert rec.last_error == "RuntimeError: injected timer failure"
        j = join(c, "after-restart", 4)
        assert j.error_code == 79                      # MEMBER_ID_REQUIRED, then the real join
        j = join(c, "after-restart", 4, member_id=j.member_id)
        assert j.error_code == 0 and j.generation_id == 1


def test_a_connection_task_that_raises_ends_only_that_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.server.connection import Connection
    from kafkalite_wire.messages import ApiVersionsRequest

    original = Connection.run
    calls: list[int] = []

    async def run_failing_first(self: Connection) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("injected connection failure")
        await original(self)

    monkeypatch.setattr(Connection, "run", run_failing_first)
    with Broker() as b:
        first = RawClient(b.host, b.port, timeout=10)
        assert first.is_closed_by_peer()
        with RawClient(b.host, b.port) as second:
            assert second.request(ApiVersionsRequest(), 0).error_code == 0
        first.close()
