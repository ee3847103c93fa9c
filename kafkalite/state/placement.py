"""Where partitions and coordinators live: the ``Placement`` protocol, and the one-node model behind it.

Handlers never ask whether they run alone or in a cluster: they ask ``state.placement`` (who leads this
partition, which brokers are there, where is this group's coordinator, must acks=all wait for followers). A single
broker's placement is :class:`SingleNode` (as Kafka, a single node is a cluster of one: it leads every partition,
it is the only broker, the controller and every coordinator); ``kafkalite.cluster.views.ClusterPlacement`` answers
from a cluster's shared metadata and is installed when a broker joins a ``kafkalite.cluster``.

The one-node replica model behind the replication admin APIs, answered as a single-node Kafka 3.9 does.

Every partition has exactly one replica, this node: it is the preferred leader and the leader, the ISR
is ``[node_id]``, nothing is ever reassigning, and the node is the only voter of the KRaft metadata
quorum (combined mode). What Kafka's controller (``ReplicationControlManager``) checks on a manual
assignment is checked here with its messages, so CreatePartitions and AlterPartitionReassignments
reject other broker ids exactly as Kafka does when no such broker is registered.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kafkalite.coordinator.txn.service import TransactionService
    from kafkalite.state import BrokerState

#: (leader, leader epoch, replicas, in-sync replicas, offline replicas) of one partition
PartitionView = tuple[int, int, list[int], list[int], list[int]]
#: (node id, host, port) of a broker, at the address for one listener
BrokerAddress = tuple[int, str, int]


class Placement(Protocol):
    #: partitions have replicas on other brokers: acks=all waits for the ISR, a replication factor above 1 is
    #: possible, topic changes reach the other brokers' logs
    replicated: bool

    def leads(self, topic: str, p: int) -> bool: ...
    def partitions(self, topic: str, stop: int, start: int = 0) -> list[PartitionView]: ...
    def eligible_leaders(self, topic: str, p: int) -> tuple[list[int], list[int]]: ...
    def brokers(self, listener: str | None) -> list[BrokerAddress]: ...
    def nodes(self) -> dict[int, bool]: ...
    def stopped_brokers(self, listener: str | None) -> list[BrokerAddress]: ...
    def controller(self) -> int: ...
    def coordinator(self, kind: str, key: str, listener: str | None) -> BrokerAddress | None: ...
    def leader_error(self, topic: str, p: int) -> int: ...
    def produce_error(self, topic: str, p: int, acks: int) -> int: ...
    def refused_produce(self, topic: str, p: int, code: int, part: Any) -> Any: ...
    def current_leader(self, topic: str, p: int, cls: Any) -> Any: ...
    def add_node_endpoints(self, listener: str | None, resp: Any, cls: Any) -> None: ...
    def txn_service(self, txn_id: str) -> TransactionService | None: ...
    async def await_acks(self, waits: list[Any], timeout_ms: int) -> None: ...
    def replication_factor(self, topic: str, requested: int) -> int: ...
    def plan_replication(self, topic: str, requested: int) -> None: ...
    def create_topic_logs(self, name: str, partitions: int, overrides: Mapping[str, str], topic_id: uuid.UUID,
                          start: int) -> bool: ...
    def register_partitions(self, topic: str, partitions: int, old: int = 0) -> None: ...
    def detach_elsewhere(self, names: list[str]) -> None: ...
    def appended(self, topic: str, p: int) -> None: ...
    def states(self) -> list[BrokerState]: ...


class SingleNode:
    """A broker alone: it leads every partition (replicas and ISR are itself), it is the only broker, the
    controller and the coordinator of every group and transaction. Nothing waits for followers."""

    replicated = False

    def __init__(self, state: BrokerState) -> None:
        self.state = state

    def leads(self, topic: str, p: int) -> bool:
        return True

    def partitions(self, topic: str, stop: int, start: int = 0) -> list[PartitionView]:
        """Partitions ``start..stop-1``."""
        node = self.state.node_id
        epoch_of = self.state.leader_epoch_of   # answers for lazily loaded logs without loading them
        return [(node, epoch_of(topic, p), [node], [node], []) for p in range(start, stop)]

    def eligible_leaders(self, topic: str, p: int) -> tuple[list[int], list[int]]:
        """(eligible leader replicas, last-known ELR): none, the ISR is always this broker (KIP-966)."""
        return [], []

    def brokers(self, listener: str | None) -> list[BrokerAddress]:
        adv = self.state.advertised_for(listener)
        return [(self.state.node_id, adv.host, adv.port)]

    def nodes(self) -> dict[int, bool]:
        """Every node of the cluster, node id -> running: this one."""
        return {self.state.node_id: True}

    def stopped_brokers(self, listener: str | None) -> list[BrokerAddress]:
        """The cluster's stopped brokers, each at its address for ``listener``: none."""
        return []

    def controller(self) -> int:
        return self.state.node_id

    def coordinator(self, kind: str, key: str, listener: str | None) -> BrokerAddress | None:
        adv = self.state.advertised_for(listener)
        return self.state.node_id, adv.host, adv.port

    def leader_error(self, topic: str, p: int) -> int:
        return 0

    def produce_error(self, topic: str, p: int, acks: int) -> int:
        return 0

    def refused_produce(self, topic: str, p: int, code: int, part: Any) -> Any:
        return part

    def current_leader(self, topic: str, p: int, cls: Any) -> Any:
        return cls(leader_id=self.state.node_id, leader_epoch=self.state.leader_epoch_of(topic, p))

    def add_node_endpoints(self, listener: str | None, resp: Any, cls: Any) -> None:
        return None

    def txn_service(self, txn_id: str) -> TransactionService | None:
        return self.state.txns

    async def await_acks(self, waits: list[Any], timeout_ms: int) -> None:
        return None

    def replication_factor(self, topic: str, requested: int) -> int:
        return 1

    def plan_replication(self, topic: str, requested: int) -> None:
        return None

    def create_topic_logs(self, name: str, partitions: int, overrides: Mapping[str, str], topic_id: uuid.UUID,
                          start: int) -> bool:
        return False   # the broker creates its own logs

    def register_partitions(self, topic: str, partitions: int, old: int = 0) -> None:
        return None

    def detach_elsewhere(self, names: list[str]) -> None:
        return None

    def appended(self, topic: str, p: int) -> None:
        return None

    def states(self) -> list[BrokerState]:
        return [self.state]

#: Errors.ELECTION_NOT_NEEDED default message (ApiError(Errors) carries it)
ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


def partition_exists(state: BrokerState, topic: str, partition: int) -> bool:
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
