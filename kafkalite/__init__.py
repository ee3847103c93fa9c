"""kafkalite: a Kafka-compatible broker in Python that keeps Kafka's own on-disk format.

``kafkalite.Broker`` is the embedded broker (see ``kafkalite.embedded``), ``kafkalite.Cluster`` several of
them in one process with replicated partitions (``kafkalite.cluster``); ``python -m kafkalite serve`` runs
the server.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.cluster import Cluster
    from kafkalite.embedded import Broker

__all__ = ["Broker", "Cluster"]


def __getattr__(name: str) -> Any:
    if name == "Broker":
        # lazy attribute: `import kafkalite` stays cheap (CLI, tools, plugin)
        from kafkalite.embedded import Broker

        return Broker
    if name == "Cluster":
        from kafkalite.cluster import Cluster  # lazy attribute: `import kafkalite` loads no broker

        return Cluster
    raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
