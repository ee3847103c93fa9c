"""``kafkalite.Broker(...).faults``: the broker's :class:`~kafkalite.faults.plan.FaultPlan`, callable from the
test's own thread. Each call runs on the broker's trio thread (``trio.from_thread``), so it is atomic with
respect to the requests the broker is handling: a rule set before ``produce()`` is called applies to it.

    with kafkalite.Broker() as broker:
        broker.faults.inject("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, partitions=[("orders", 0)])
        broker.faults.latency(500, api="Fetch")
        broker.faults.pause(); ...; broker.faults.resume()
        broker.faults.wait_for_group_state("my-group", "Stable", timeout=30)
        broker.faults.clear()
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kafkalite.faults import plan_for
from kafkalite.faults.plan import FaultPlan

if TYPE_CHECKING:
    import trio


class RunningBroker(Protocol):
    """What the fault calls need of a ``kafkalite.Broker`` or of a ``kafkalite.Cluster``'s broker handle."""

    @property
    def data_dir(self) -> Path | str: ...
    @property
    def _token(self) -> trio.lowlevel.TrioToken | None: ...


class BrokerFaults:
    def __init__(self, broker: RunningBroker) -> None:
        self._broker = broker

    def _plan(self) -> FaultPlan:
        plan = plan_for(self._broker.data_dir)
        if plan is None or self._broker._token is None:
            raise RuntimeError("the broker is not running (call start() first)")
        return plan

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        import trio

        return trio.from_thread.run_sync(fn, *args, trio_token=self._broker._token)

    def inject(self, api: int | str, error: int | str, count: int | None = 1,
               partitions: Iterable[Any] | None = None, mode: str = "answer") -> int:
        """Answer the next ``count`` requests of ``api`` with ``error``; returns the rule id."""
        plan = self._plan()
        parts = None if partitions is None else list(partitions)
        return int(self._call(lambda: plan.inject(api, error, count, parts, mode).id))

    def latency(self, ms: int, api: int | str | None = None, count: int | None = None) -> int:
        """Delay requests of ``api`` (None: all) by ``ms`` for the next ``count`` (None: until cleared)."""
        plan = self._plan()
        return int(self._call(lambda: plan.latency(ms, api, count).id))

    def drop_connections(self, api: int | str | None = None, count: int | None = 1) -> int:
        """No API: close every open connection now (returns how many). With one: close the connection of the
        next ``count`` requests of that API (returns the rule id)."""
        plan = self._plan()

        def run() -> int:
            out = plan.drop_connections(api, count)
            return out if isinstance(out, int) else out.id
        return int(self._call(run))

    def pause(self) -> None:
        plan = self._plan()
        self._call(plan.pause)

    def resume(self) -> None:
        plan = self._plan()
        self._call(plan.resume)

    def clear(self, rule_id: int | None = None) -> int:
        plan = self._plan()
        return int(self._call(plan.clear, rule_id))

    def describe(self) -> dict[str, Any]:
        plan = self._plan()
        return dict(self._call(plan.describe))

    @property
    def counters(self) -> dict[str, int]:
        return dict(self.describe()["counters"])

    def group_state(self, group: str) -> str:
        plan = self._plan()
        return str(self._call(plan.group_state, group))

    def wait_for_group_state(self, group: str, state: str, timeout: float = 30.0) -> str:
        import trio

        plan = self._plan()
        return str(trio.from_thread.run(plan.wait_for_group_state, group, state, timeout,
                                        trio_token=self._broker._token))
