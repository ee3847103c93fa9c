"""The one-node replica model behind the replication admin APIs, answered as a single-node Kafka 3.9 does.

Every partition has exactly one replica, this node: it is the preferred leader and the leader, the ISR
is ``[node_id]``, nothing is ever reassigning, and the node is the only voter of the KRaft metadata
quorum (combined mode). What Kafka's controller (``ReplicationControlManager``) checks on a manual
assignment is checked here with its messages, so CreatePartitions and AlterPartitionReassignments
reject other broker ids exactly as Kafka does when no such broker is registered.
"""
from __future__ import annotations

from typing import Any

#: Errors.ELECTION_NOT_NEEDED / NO_REASSIGNMENT_IN_PROGRESS default messages (ApiError(Errors) carries them)
ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."


def partition_exists(state: Any, topic: str, partition: int) -> bool:
    info = state.topics.get(topic)
    return info is not None and 0 <= partition < info.partitions


def check_manual_assignment(replicas: list[int], node_id: int, replication_factor: int | None) -> str | None:
    """Kafka 3.9's ``validateManualPartitionAssignment``: the INVALID_REPLICA_ASSIGNMENT message, or None.

    Registered brokers are this node only; ``replication_factor`` is checked when given (CreatePartitions:
    the topic's, 1 here; a reassignment may change it, so it passes None)."""
    if not replicas:
        return "The manual partition assignment includes an empty replica list."
    prev = None
    for broker in sorted(replicas):
        if broker != node_id:
            return f"The manual partition assignment includes broker {broker}, but no such broker is registered."
        if broker == prev:
            return f"The manual partition assignment includes the broker {prev} more than once."
        prev = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        return (f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this "
                f"is not consistent with previous partitions, which have {replication_factor} replica(s).")
    return None
