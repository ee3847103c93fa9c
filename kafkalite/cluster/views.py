"""What the request handlers answer about a cluster, through ``ClusterPlacement`` (``state.placement``).

- Metadata / DescribeTopicPartitions: every partition's leader, leader epoch, replicas, ISR and offline
  replicas (stopped brokers); a partition with no live leader answers LEADER_NOT_AVAILABLE, leader -1.
- Broker lists (Metadata, DescribeCluster): the running brokers, each at its address for the listener the
  client came in on; the controller id is the lowest running node id.
- FindCoordinator: the leader of the key's internal topic partition (COORDINATOR_NOT_AVAILABLE without one).
- Produce / Fetch / ListOffsets to a broker that does not lead the partition: NOT_LEADER_OR_FOLLOWER, with
  the leader and its epoch for the KIP-951 ``current_leader`` fields (Produce v10+, Fetch v12+ tagged
  fields) and the leader's endpoint in ``node_endpoints``, so clients can redirect without a Metadata round
  trip. acks=all to a partition whose ISR is smaller than ``min.insync.replicas``: NOT_ENOUGH_REPLICAS,
  before anything is appended.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalite.cluster import coordinators
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.cluster.runtime import ClusterRuntime
    from kafkalite.coordinator.txn.service import TransactionService
    from kafkalite.state import BrokerState


def _rt(state: BrokerState) -> ClusterRuntime:
    """The runtime of the cluster ``state``'s broker belongs to (set before its ClusterPlacement exists)."""
    rt = state.cluster
    if rt is None:
        raise RuntimeError(f"broker {state.node_id} is not part of a cluster")
    return rt


def partition(state: BrokerState, topic: str, p: int) -> tuple[int, int, list[int], list[int], list[int]]:
    """(leader, leader epoch, replicas, isr, offline replicas)."""
    placed: tuple[int, int, list[int], list[int], list[int]] | None = _rt(state).placement(topic, p)
    if placed is None:   # not placed (should not happen): this broker alone
        return state.node_id, state.leader_epoch_of(topic, p), [state.node_id], [state.node_id], []
    return placed


def brokers(state: BrokerState, listener: str | None) -> list[tuple[int, str, int]]:
    out = []
    for nid, node in sorted(_rt(state).nodes.items()):
        if node.up or node.state is state:
            host, port = node.address(listener)
            out.append((nid, host, port))
    return out


def nodes(state: BrokerState) -> dict[int, bool]:
    return {nid: node.up or node.state is state for nid, node in sorted(_rt(state).nodes.items())}


def stopped_brokers(state: BrokerState, listener: str | None) -> list[tuple[int, str, int]]:
    out = []
    for nid, node in sorted(_rt(state).nodes.items()):
        if not (node.up or node.state is state):
            host, port = node.address(listener)
            out.append((nid, host, port))
    return out


def controller(state: BrokerState) -> int:
    live = [nid for nid, node in sorted(_rt(state).nodes.items()) if node.up]
    return live[0] if live else state.node_id


def coordinator(state: BrokerState, kind: str, key: str, listener: str | None) -> tuple[int, str, int] | None:
    rt = _rt(state)
    nid = coordinators.owner(rt, state, kind, key)
    node = rt.nodes.get(nid)
    if node is None or not (node.up or node.state is state):
        return None
    host, port = node.address(listener)
    return nid, host, port


def leader_error(state: BrokerState, topic: str, p: int) -> int:
    """0 when this broker leads the partition, else NOT_LEADER_OR_FOLLOWER (LEADER_NOT_AVAILABLE: none)."""
    ps = _rt(state).meta.partitions.get((topic, p))
    if ps is None or ps.leader == state.node_id:
        return 0
    return ErrorCode.NOT_LEADER_OR_FOLLOWER if ps.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE


def produce_error(state: BrokerState, topic: str, p: int, acks: int) -> int:
    code = leader_error(state, topic, p)
    if code or acks != -1:
        return code
    rt = _rt(state)
    ps = rt.meta.partitions.get((topic, p))
    if ps is not None and len(ps.isr) < rt.min_insync(state, topic):
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return 0


def current_leader(state: BrokerState, topic: str, p: int, cls: Any) -> Any:
    """A ``LeaderIdAndEpoch`` of ``cls`` (the response's class) for KIP-951 fields."""
    ps = _rt(state).meta.partitions.get((topic, p))
    return cls(leader_id=ps.leader if ps else -1, leader_epoch=ps.leader_epoch if ps else -1)


def node_endpoints(state: BrokerState, listener: str | None, node_ids: set[int], cls: Any) -> list[Any]:
    out = []
    for nid, host, port in brokers(state, listener):
        if nid in node_ids:
            out.append(cls(node_id=nid, host=host, port=port, rack=None))
    return out


def refused_produce(state: BrokerState, topic: str, p: int, code: int, part: Any) -> Any:
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        from kafkalite_wire.messages import ProduceResponse  # loads the generated Produce codec: not at start

        part.current_leader = current_leader(state, topic, p, ProduceResponse.LeaderIdAndEpoch)
    return part


def add_node_endpoints(state: BrokerState, listener: str | None, resp: Any, cls: Any) -> None:
    """KIP-951: the endpoints of the leaders named in ``current_leader`` fields of the response."""
    leaders = set()
    for t in resp.responses:
        for part in getattr(t, "partition_responses", None) or getattr(t, "partitions", None) or []:
            cur = getattr(part, "current_leader", None)
            if cur is not None and cur.leader_id >= 0:
                leaders.add(cur.leader_id)
    if leaders:
        resp.node_endpoints = node_endpoints(state, listener, leaders, cls)


def txn_service(state: BrokerState, txn_id: str) -> TransactionService | None:
    """The transaction coordinator service that owns ``txn_id`` (this broker's when none is known)."""
    nid = coordinators.owner(_rt(state), state, "transaction", txn_id)
    owner = _rt(state).state_of(nid)
    return owner.txns if owner is not None else state.txns


class ClusterPlacement:
    """``kafkalite.state.placement.Placement`` for a broker of a ``kafkalite.cluster``: answers from the cluster's
    shared metadata (the functions above) and hands topic changes to the cluster runtime."""

    replicated = True

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.rt = _rt(state)

    def leads(self, topic: str, p: int) -> bool:
        return bool(self.rt.leads(self.state.node_id, topic, p))

    def partitions(self, topic: str, stop: int, start: int = 0) -> list[tuple[int, int, list[int], list[int], list[int]]]:
        return [partition(self.state, topic, p) for p in range(start, stop)]

    def eligible_leaders(self, topic: str, p: int) -> tuple[list[int], list[int]]:
        ps = self.rt.meta.partitions.get((topic, p))
        return (list(ps.elr), list(ps.last_known_elr)) if ps is not None else ([], [])

    def brokers(self, listener: str | None) -> list[tuple[int, str, int]]:
        return brokers(self.state, listener)

    def nodes(self) -> dict[int, bool]:
        return nodes(self.state)

    def stopped_brokers(self, listener: str | None) -> list[tuple[int, str, int]]:
        return stopped_brokers(self.state, listener)

    def controller(self) -> int:
        return controller(self.state)

    def coordinator(self, kind: str, key: str, listener: str | None) -> tuple[int, str, int] | None:
        return coordinator(self.state, kind, key, listener)

    def leader_error(self, topic: str, p: int) -> int:
        return leader_error(self.state, topic, p)

    def produce_error(self, topic: str, p: int, acks: int) -> int:
        return produce_error(self.state, topic, p, acks)

    def refused_produce(self, topic: str, p: int, code: int, part: Any) -> Any:
        return refused_produce(self.state, topic, p, code, part)

    def current_leader(self, topic: str, p: int, cls: Any) -> Any:
        return current_leader(self.state, topic, p, cls)

    def add_node_endpoints(self, listener: str | None, resp: Any, cls: Any) -> None:
        add_node_endpoints(self.state, listener, resp, cls)

    def txn_service(self, txn_id: str) -> TransactionService | None:
        return txn_service(self.state, txn_id)

    async def await_acks(self, waits: list[Any], timeout_ms: int) -> None:
        await self.rt.await_acks(self.state, waits, timeout_ms)

    def replication_factor(self, topic: str, requested: int) -> int:
        return int(self.rt.replication_factor(self.state, topic, requested))

    def plan_replication(self, topic: str, requested: int) -> None:
        self.rt.plan_replication(topic, requested)

    def create_topic_logs(self, name: str, partitions: int, overrides: Any, topic_id: Any, start: int) -> bool:
        self.rt.create_topic_logs(self.state, name, partitions, overrides, topic_id, start)
        return True

    def register_partitions(self, topic: str, partitions: int, old: int = 0) -> None:
        self.rt.register_partitions(self.state, topic, partitions, old)

    def detach_elsewhere(self, names: list[str]) -> None:
        self.rt.detach_elsewhere(self.state, names)

    def appended(self, topic: str, p: int) -> None:
        self.rt.appended(self.state, topic, p)

    def states(self) -> list[BrokerState]:
        return list(self.rt.running_states())
