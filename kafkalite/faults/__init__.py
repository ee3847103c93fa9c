"""Faults on command (issue #17): error injection, latency, dropped connections and paused brokers, per broker.

- :mod:`kafkalite.faults.plan`: :class:`FaultPlan`, one per broker (``state.faults``), and what each rule does.
- :mod:`kafkalite.faults.inject`: where an injected error code goes in each API's answer.
- :mod:`kafkalite.faults.control`: the seam to the cluster operations (``ClusterControl``, ``ClusterOpError``,
  ``SingleBrokerControl``).
- :mod:`kafkalite.faults.embedded`: ``kafkalite.Broker(...).faults``, the same calls from any thread.

The HTTP control API (``serve --control``) is :mod:`kafkalite.control`; the CLI, ``kafkalite fault``.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kafkalite.faults.plan import FaultError, FaultPlan, Rule

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

__all__ = ["FaultError", "FaultPlan", "Rule", "attach", "detach", "plan_for"]

# log dir -> the plan of the broker serving it (kafkalite.Broker finds its broker's plan by its data dir)
_PLANS: dict[str, FaultPlan] = {}


def _key(log_dir: Any) -> str:
    return os.path.abspath(str(log_dir))


def attach(state: BrokerState) -> FaultPlan:
    """Give the broker its plan (keeping one made beforehand, e.g. by kafkalite.cluster) and register it."""
    plan = state.faults
    if plan is None:
        plan = FaultPlan(state)
        state.faults = plan
    _PLANS[_key(state.config.log_dir)] = plan
    return plan


def detach(state: BrokerState) -> None:
    key = _key(state.config.log_dir)
    if _PLANS.get(key) is state.faults:
        _PLANS.pop(key, None)


def plan_for(log_dir: Any) -> FaultPlan | None:
    """The plan of the broker (running in this process) whose data dir is ``log_dir``."""
    return _PLANS.get(_key(log_dir))
