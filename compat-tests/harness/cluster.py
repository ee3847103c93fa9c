"""What a cluster test does to the brokers, on either cluster: a kafkalite ``Cluster`` in the test's process or a
3-node KRaft Apache Kafka (:class:`harness.reference.ReferenceCluster`).

A test of the cluster's failure paths drives real clients and meanwhile acts on the brokers: it moves a
partition's leader, moves a group's or a transactional id's coordinator, stops a broker and starts it again. The
clients' side of such a test is the same on both brokers; these actions are not, so they live here behind one
interface (:class:`ClusterControl`), and a test names only what it wants done:

- :class:`KafkaliteControl` calls the in-process cluster's own operations (``Cluster.sync``);
- :class:`KafkaControl` does on Apache Kafka what an operator does: a leader moves by
  AlterPartitionReassignments putting the new leader first in the replica list (the same replicas, so nothing
  is copied) and a preferred ElectLeaders (``kafka-reassign-partitions`` then ``kafka-leader-election``); a
  coordinator moves with the leader of its ``__consumer_offsets`` / ``__transaction_state`` partition; a broker
  stops by SIGTERM (Kafka's controlled shutdown moves its leaderships first) and starts as a new process over
  the same data dir and ports. Requests go over the project's own codec (``kafkalite.client.wire``) to a node
  that is running (a live broker forwards the admin requests to the active controller).

Every action returns once every running broker's metadata shows its effect (kafkalite's operations are
synchronous; on Kafka the harness waits for the metadata), so a test can assert the new leader right away.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from kafkalite.client.wire import WireError, call, error_name
from kafkalite_wire.messages import (
    AlterPartitionReassignmentsRequest,
    ConsumerGroupDescribeRequest,
    DescribeGroupsRequest,
    ElectLeadersRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)

COORDINATOR_TOPICS = {"group": "__consumer_offsets", "transaction": "__transaction_state"}
WAIT_S = 60.0
_RETRIABLE = {
    5,    # LEADER_NOT_AVAILABLE
    6,    # NOT_LEADER_OR_FOLLOWER
    7,    # REQUEST_TIMED_OUT
    41,   # NOT_CONTROLLER (a controller election under way)
    80,   # PREFERRED_LEADER_NOT_AVAILABLE (the new leader not yet back in the ISR)
    83,   # ELIGIBLE_LEADERS_NOT_AVAILABLE
}
_ELECTION_NOT_NEEDED = 84


class ClusterControl(Protocol):
    """The broker-side actions of a cluster test (see the module's docstring)."""

    bootstrap_servers: str

    def node_ids(self) -> list[int]: ...
    def addresses(self) -> dict[int, tuple[str, int]]: ...
    def partitions(self, topic: str) -> dict[int, dict[str, Any]]:
        """``{partition: {"leader": id, "replicas": [...], "isr": [...]}}`` as the brokers publish it now."""
        ...
    def move_leader(self, topic: str, partition: int, node_id: int) -> None: ...
    def coordinator(self, kind: str, key: str) -> int:
        """The node coordinating group (``kind="group"``) / transactional id (``"transaction"``) ``key``; -1 if
        none (its internal topic does not exist yet)."""
        ...
    def move_coordinator(self, kind: str, key: str, node_id: int) -> None: ...
    def stop_broker(self, node_id: int) -> None: ...
    def start_broker(self, node_id: int) -> None: ...
    def restart_broker(self, node_id: int) -> None: ...
    def group_stable(self, group: str) -> bool:
        """The group is Stable at its coordinator (its members joined and have their assignment)."""
        ...
    def replica_logs(self, topic: str, partition: int) -> dict[int, bytes]:
        """Each replica's log bytes (its segments' records, log start to end), by node id."""
        ...


def wait(cond: Any, what: str, timeout: float = WAIT_S, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


# -- kafkalite ---------------------------------------------------------------------------------------------------
class KafkaliteControl:
    """A ``kafkalite.cluster.Cluster`` in this process (the ``kafkalite_cluster`` fixture)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.bootstrap_servers: str = cluster.bootstrap_servers

    def node_ids(self) -> list[int]:
        return list(self.cluster.sync.node_ids())

    def addresses(self) -> dict[int, tuple[str, int]]:
        return dict(self.cluster.addresses())

    def partitions(self, topic: str) -> dict[int, dict[str, Any]]:
        return {p["partition"]: p for p in self.cluster.sync.describe()["partitions"] if p["topic"] == topic}

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self.cluster.sync.move_leader(topic, partition, node_id)

    def coordinator(self, kind: str, key: str) -> int:
        return int(self.cluster.sync.coordinator(kind, key))

    def move_coordinator(self, kind: str, key: str, node_id: int) -> None:
        self.cluster.sync.move_coordinator(kind, key, node_id)

    def stop_broker(self, node_id: int) -> None:
        self.cluster.sync.stop_broker(node_id)

    def start_broker(self, node_id: int) -> None:
        self.cluster.sync.start_broker(node_id)

    def restart_broker(self, node_id: int) -> None:
        self.cluster.sync.restart_broker(node_id)

    def group_stable(self, group: str) -> bool:
        cluster = self.cluster

        async def check() -> bool:
            st = cluster.runtime.state_of(cluster.coordinator("group", group))
            g = st.groups.coordinator.groups.get(group) if st is not None else None
            return g is not None and g.state.value == "Stable"
        return bool(cluster.sync._call(check))

    def replica_logs(self, topic: str, partition: int) -> dict[int, bytes]:
        cluster = self.cluster

        async def read() -> dict[int, bytes]:
            out: dict[int, bytes] = {}
            for nid, node in cluster.runtime.nodes.items():
                plog = node.state.logs.get_log(topic, partition) if node.state is not None else None
                if plog is not None:
                    out[nid] = bytes(plog.read_bytes(plog.log_start_offset, 1 << 30))
            return out
        return dict(cluster.sync._call(read))


# -- Apache Kafka -------------------------------------------------------------------------------------------------
def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions`` (Utils.abs maps Integer.MIN_VALUE to 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class KafkaControl:
    """A :class:`harness.reference.ReferenceCluster` of Apache Kafka (the ``kafka_cluster`` fixture)."""

    def __init__(self, cluster: Any, timeout: float = WAIT_S) -> None:
        self.cluster = cluster
        self.nodes = {i + 1: n for i, n in enumerate(cluster.nodes)}   # node ids are 1..N (ReferenceCluster)
        self.bootstrap_servers: str = cluster.bootstrap
        self.timeout = timeout

    # -- requests ---------------------------------------------------------------------------------------------
    def _live(self) -> list[int]:
        return [nid for nid, n in self.nodes.items() if n.alive]

    def _request(self, body: Any, version: int, node_id: int | None = None) -> Any:
        """``body`` to ``node_id`` (default: the first running node that answers)."""
        last: BaseException | None = None
        for nid in [node_id] if node_id is not None else self._live():
            n = self.nodes[nid]
            try:
                return call(n.host, n.port, body, version, 30.0, client_id="compat-harness")
            except (OSError, WireError) as exc:
                last = exc
        raise AssertionError(f"no running Kafka node answered {type(body).__name__}: {last!r}")

    def _metadata(self, topics: list[str] | None, node_id: int | None = None) -> Any:
        req = MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=False)
        return self._request(req, 12, node_id)

    def _views(self, topic: str) -> list[dict[int, dict[str, Any]]]:
        """The topic's partitions as each running node publishes them."""
        out = []
        for nid in self._live():
            try:
                md = self._metadata([topic], nid)
            except AssertionError:
                continue
            out.append(_partitions(md, topic))
        return out

    def _brokers(self, node_id: int) -> set[int]:
        return {b.node_id for b in self._metadata([], node_id).brokers}

    # -- ClusterControl ---------------------------------------------------------------------------------------
    def node_ids(self) -> list[int]:
        return sorted(self.nodes)

    def addresses(self) -> dict[int, tuple[str, int]]:
        return {nid: (n.host, n.port) for nid, n in self.nodes.items()}

    def partitions(self, topic: str) -> dict[int, dict[str, Any]]:
        return _partitions(self._metadata([topic]), topic)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """``node_id`` first in the replica list (AlterPartitionReassignments: the same replicas, reordered,
        completes at once), then a preferred-leader election; waits until every running node's metadata names
        it the leader. Like kafkalite's move_leader it must be a replica; if it is not in the ISR yet (a broker
        just started, still catching up) this waits for it."""
        part = self.partitions(topic).get(partition)
        if part is None:
            raise AssertionError(f"unknown partition {topic}-{partition}")
        if node_id not in part["replicas"]:
            raise AssertionError(f"broker {node_id} is not a replica of {topic}-{partition} ({part['replicas']})")
        if part["leader"] == node_id and all(v.get(partition, {}).get("leader") == node_id
                                             for v in self._views(topic)):
            return
        order = [node_id, *(r for r in part["replicas"] if r != node_id)]
        if part["replicas"] != order:
            resp = self._request(AlterPartitionReassignmentsRequest(
                timeout_ms=30_000, topics=[AlterPartitionReassignmentsRequest.ReassignableTopic(
                    name=topic, partitions=[AlterPartitionReassignmentsRequest.ReassignablePartition(
                        partition_index=partition, replicas=order)])]), 0)
            errors = [(resp.error_code, resp.error_message)] + [
                (p.error_code, p.error_message) for t in resp.responses for p in t.partitions]
            bad = [(error_name(c), m) for c, m in errors if c]
            if bad:
                raise AssertionError(f"AlterPartitionReassignments {topic}-{partition} -> {order}: {bad}")
            wait(lambda: self.partitions(topic)[partition]["replicas"] == order,
                 f"{topic}-{partition}'s replicas reordered to {order}", self.timeout)
        deadline = time.monotonic() + self.timeout
        while True:
            resp = self._request(ElectLeadersRequest(election_type=0, timeout_ms=30_000, topic_partitions=[
                ElectLeadersRequest.TopicPartitions(topic=topic, partitions=[partition])]), 2)
            codes = [(r.error_code, r.error_message) for t in resp.replica_election_results
                     for r in t.partition_result]
            if resp.error_code:
                codes.append((resp.error_code, None))
            bad = [(c, m) for c, m in codes if c not in (0, _ELECTION_NOT_NEEDED)]
            if not bad:
                break
            if any(c not in _RETRIABLE for c, _m in bad) or time.monotonic() > deadline:
                raise AssertionError(f"ElectLeaders {topic}-{partition} -> {node_id}: "
                                     f"{[(error_name(c), m) for c, m in bad]}")
            time.sleep(0.2)
        wait(lambda: all(v.get(partition, {}).get("leader") == node_id for v in self._views(topic)),
             f"every running broker naming {node_id} the leader of {topic}-{partition}", self.timeout)

    def _coordinator_partition(self, kind: str, key: str) -> tuple[str, int] | None:
        topic = COORDINATOR_TOPICS[kind]
        parts = self.partitions(topic)
        if not parts:
            return None
        return topic, coordinator_partition(key, len(parts))

    def coordinator(self, kind: str, key: str) -> int:
        tp = self._coordinator_partition(kind, key)
        if tp is None:
            return -1
        return int(self.partitions(tp[0])[tp[1]]["leader"])

    def move_coordinator(self, kind: str, key: str, node_id: int) -> None:
        """The leader of the key's partition of the coordinator's internal topic moves; the new leader loads
        that partition and coordinates from then on (Kafka's coordinators follow partition leadership)."""
        tp = self._coordinator_partition(kind, key)
        if tp is None:
            raise AssertionError(f"{COORDINATOR_TOPICS[kind]} does not exist yet (it is created when a client "
                                 f"first looks up a {kind} coordinator)")
        self.move_leader(tp[0], tp[1], node_id)

    def stop_broker(self, node_id: int) -> None:
        """SIGTERM: Kafka's controlled shutdown moves the node's leaderships and takes it out of the ISRs;
        returns once the process exited and the running nodes no longer list it as a broker."""
        node = self.nodes[node_id]
        if not node.alive:
            raise AssertionError(f"broker {node_id} is not running")
        code = node.stop()
        if code not in (0, None):
            raise AssertionError(f"Kafka node {node_id} exited with {code} on SIGTERM")
        wait(lambda: all(node_id not in self._brokers(n) for n in self._live()),
             f"the running nodes dropping broker {node_id}", self.timeout, 0.2)

    def start_broker(self, node_id: int) -> None:
        """A new process over the node's data dir and ports; returns once it is ready and every running node
        lists it as a broker again (registered and unfenced: it may lead and join ISRs)."""
        node = self.nodes[node_id]
        if node.alive:
            raise AssertionError(f"broker {node_id} is already running")
        node.start()
        wait(lambda: all(node_id in self._brokers(n) for n in self._live()),
             f"every running node listing broker {node_id} again", self.timeout, 0.2)

    def restart_broker(self, node_id: int) -> None:
        self.stop_broker(node_id)
        self.start_broker(node_id)

    def heal(self) -> list[int]:
        """Start every stopped node (a test that failed half-way leaves the next one a whole cluster)."""
        stopped = [nid for nid, n in self.nodes.items() if not n.alive]
        for nid in stopped:
            self.start_broker(nid)
        return stopped

    def group_stable(self, group: str) -> bool:
        """Asks the group's coordinator now: FindCoordinator, then DescribeGroups to that node (for a KIP-848
        group, ConsumerGroupDescribe), afresh each time. A kept confluent-kafka AdminClient (as this was) does
        not do: after a move its describe_consumer_groups went on asking the old coordinator and raising
        NOT_COORDINATOR for as long as it was watched (40 s alone; past the group test's 60 s waits in every
        run of the module), while this saw the group Stable at the new coordinator within 5 s."""
        try:
            coordinator = self._find_group_coordinator(group)
            if coordinator is None:
                return False
            described = self._request(DescribeGroupsRequest(groups=[group]), 5, coordinator).groups
            if described and described[0].error_code == 0 and described[0].group_state == "Stable":
                return True
            if described and described[0].error_code == 0 and described[0].group_state != "Dead":
                return False   # a classic group, not (yet) Stable
            # Dead / GROUP_ID_NOT_FOUND from DescribeGroups: no classic group; a consumer (KIP-848) group?
            consumer = self._request(ConsumerGroupDescribeRequest(group_ids=[group]), 0, coordinator).groups
        except AssertionError:   # its node stopped between the two requests: not stable yet
            return False
        return bool(consumer and consumer[0].error_code == 0 and consumer[0].group_state == "Stable")

    def _find_group_coordinator(self, group: str) -> int | None:
        """The node a client's FindCoordinator is told coordinates ``group`` now, or None while there is none
        (COORDINATOR_NOT_AVAILABLE during a move, or a node that just stopped)."""
        resp = self._request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4)
        c = resp.coordinators[0] if resp.coordinators else None
        if c is None or c.error_code or c.node_id not in self.nodes or not self.nodes[c.node_id].alive:
            return None
        return int(c.node_id)

    def replica_logs(self, topic: str, partition: int) -> dict[int, bytes]:
        """The segments of each running node's replica, read from its log dir (Kafka's own files: a follower
        appends the leader's batches as they are, so in-sync replicas hold the same bytes)."""
        out: dict[int, bytes] = {}
        for nid in self._live():
            pdir = self.nodes[nid].data_dir / f"{topic}-{partition}"
            segments = sorted(pdir.glob("*.log")) if pdir.is_dir() else []
            if segments:
                out[nid] = b"".join(s.read_bytes() for s in segments)
        return out


def _partitions(md: Any, topic: str) -> dict[int, dict[str, Any]]:
    for t in md.topics:
        if t.name == topic and t.error_code == 0:
            return {p.partition_index: {"topic": topic, "partition": p.partition_index, "leader": p.leader_id,
                                        "leader_epoch": p.leader_epoch, "replicas": list(p.replica_nodes),
                                        "isr": list(p.isr_nodes)} for p in t.partitions}
    return {}
