"""kafkalite.runtime.loopthread.LoopThread, the trio-loop-in-a-thread that kafkalite.Broker and kafkalite.Cluster share:
ready once main says so, a failure handed back with the thread ended, stop() drains the loop and joins."""
from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from kafkalite.runtime.loopthread import LoopThread


def test_start_waits_for_ready_and_stop_ends_the_loop_after_its_shutdown() -> None:
    steps: list[str] = []

    async def main(shutdown: Any, ready: Any) -> None:
        steps.append("serving")
        ready()
        await shutdown.wait()
        await trio.lowlevel.checkpoint()   # still on the loop after the shutdown event: stop() waits for this
        steps.append("drained")

    loop = LoopThread("kafkalite-test-loop", "test")
    assert loop.start(main, 30) is None
    assert steps == ["serving"] and loop.thread is not None and loop.thread.is_alive()
    assert loop.thread.name == "kafkalite-test-loop" and loop.thread.daemon
    assert trio.from_thread.run_sync(lambda: "on the loop", trio_token=loop.token) == "on the loop"
    loop.stop()
    assert steps == ["serving", "drained"] and not loop.thread.is_alive()
    loop.stop()   # again: nothing to do


def test_a_failure_before_ready_is_returned_with_the_thread_ended() -> None:
    async def main(shutdown: Any, ready: Any) -> None:
        raise OSError("address in use")

    loop = LoopThread("kafkalite-test-loop", "test")
    error = loop.start(main, 30)
    assert isinstance(error, OSError) and str(error) == "address in use"
    assert loop.thread is not None and not loop.thread.is_alive()
    loop.stop()


def test_still_starting_after_the_timeout_raises_and_stop_waits_for_the_thread() -> None:
    release = threading.Event()

    async def main(shutdown: Any, ready: Any) -> None:
        await trio.to_thread.run_sync(release.wait, 30)   # e.g. recovering a large log
        ready()
        await shutdown.wait()

    loop = LoopThread("kafkalite-test-loop", "test")
    with pytest.raises(TimeoutError, match="kafkalite test did not start in time"):
        loop.start(main, 0.05)
    assert loop.thread is not None and loop.thread.is_alive()
    release.set()
    loop.stop()   # shutdown is set once the loop runs (the token and event exist from its first step)
    assert not loop.thread.is_alive()
