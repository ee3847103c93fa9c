"""`describe()` for a single broker: the same JSON shape `kafkalite.cluster.Cluster.describe()` gives for many,
so tools built on the control API work against both (one broker, always up, leader and only replica of all)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.state import BrokerState


def describe_single_broker(state: BrokerState) -> dict[str, Any]:
    node_id = int(state.node_id)
    host, port = state.advertised
    partitions = [
        {"topic": info.name, "partition": p, "leader": node_id, "replicas": [node_id], "isr": [node_id]}
        for info in sorted(state.topics.values(), key=lambda i: i.name)
        for p in range(info.partitions)
    ]
    return {
        "cluster_id": state.cluster_id,
        "controller": node_id,
        "brokers": [{"node_id": node_id, "host": host, "port": port, "up": True}],
        "partitions": partitions,
    }
