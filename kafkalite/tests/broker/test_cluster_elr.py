"""Eligible leader replicas (KIP-966) in a 3-broker cluster: the partition-change rule on its own
(``kafkalite.cluster.elr``), then brokers stopped below min.insync.replicas: the high watermark holds, the
stopped replicas become eligible leader replicas, the last leader is the last-known ELR once the ISR is empty,
and the partition comes back with a leader taken from the ELR, losing nothing it had committed.
DescribeTopicPartitions reports the lists; Metadata does not carry them."""
from __future__ import annotations

import time

import pytest

from kafkalite.cluster import Cluster
from kafkalite.cluster.elr import partition_change
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DescribeTopicPartitionsRequest,
    FetchRequest,
    ProduceRequest,
)


def _change(isr, target, *, elr=(), lkelr=(), leader=1, alive=(1, 2, 3), min_isr=2, replicas=(1, 2, 3),
            unclean=None, enabled=True):
    return partition_change(replicas=list(replicas), isr=list(isr), leader=leader, elr=list(elr),
                            last_known_elr=list(lkelr), target_isr=list(target), min_isr=min_isr,
                            acceptable=lambda r: r in alive, elr_enabled=enabled, unclean_shutdown=unclean)


def test_partition_change_rule() -> None:
    ch = _change([1, 2, 3], [1, 2], alive=(1, 2))                 # still at min ISR: no ELR
    assert (ch.leader, ch.isr, ch.elr, ch.last_known_elr, ch.leader_changed) == (1, [1, 2], [], [], False)
    ch = _change([1, 2], [1], elr=(), alive=(1,))                 # below: the replica leaving is eligible
    assert (ch.isr, ch.elr, ch.last_known_elr) == ([1], [2], [])
    ch = _change([1], [], elr=(2,), alive=())                     # the last one leaves: empty ISR, last leader kept
    assert (ch.leader, ch.isr, ch.elr, ch.last_known_elr, ch.leader_changed) == (-1, [], [1, 2], [1], True)
    ch = _change([], [], elr=(1, 2), lkelr=(1,), leader=-1, alive=(2,))   # 2 is back: elected from the ELR
    assert (ch.leader, ch.isr, ch.elr, ch.last_known_elr, ch.unclean) == (2, [2], [1], [], False)
    ch = _change([2], [2, 3], elr=(1,), leader=2)                 # back at min ISR: ELR cleared
    assert (ch.isr, ch.elr, ch.last_known_elr) == ([2, 3], [], [])
    ch = _change([1, 2], [1], alive=(1,), unclean=2)              # an unclean shutdown is not eligible
    assert ch.elr == []
    # empty ISR and ELR: the last known leader leads again once alive (balanced recovery), else nobody
    ch = _change([], [], lkelr=(3,), leader=-1, alive=(3,))
    assert (ch.leader, ch.isr, ch.elr, ch.last_known_elr, ch.unclean) == (3, [3], [], [], True)
    assert _change([], [], lkelr=(3,), leader=-1, alive=(1,)).leader == -1
    # without ELR the last ISR member stays in the ISR and nothing is eligible
    ch = _change([1], [], alive=(), enabled=False)
    assert (ch.leader, ch.isr, ch.elr, ch.last_known_elr) == (-1, [1], [], [])


def _client(cluster: Cluster, node: int) -> RawClient:
    host, port = cluster.addresses()[node]
    return RawClient(host, port)


def _wait(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _produce(c: RawClient, topic: str, values: list[bytes], acks: int) -> object:
    P = ProduceRequest
    resp = c.request(P(acks=acks, timeout_ms=10_000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=encode_batch(values))])]), 9)
    return resp.responses[0].partition_responses[0]


def _high_watermark(c: RawClient, topic: str) -> int:
    F = FetchRequest
    resp = c.request(F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                       topics=[F.FetchTopic(topic=topic, partitions=[
                           F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12)
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0, part
    return int(part.high_watermark)


def _dtp(c: RawClient, topic: str) -> object:
    D = DescribeTopicPartitionsRequest
    resp = c.request(D(topics=[D.TopicRequest(name=topic)], response_partition_limit=100, cursor=None), 0)
    return resp.topics[0].partitions[0]


def _part(cluster: Cluster, topic: str) -> dict:
    return next(p for p in cluster.sync.describe()["partitions"] if p["topic"] == topic)


@pytest.fixture
def cluster():
    with Cluster(brokers=3, overrides={"offsets.topic.num.partitions": "1",
                                       "offsets.topic.replication.factor": "1"}) as c:
        yield c


def test_elr_feature_is_finalized(cluster: Cluster) -> None:
    with _client(cluster, 1) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    assert {(f.name, f.min_version, f.max_version) for f in resp.supported_features} >= {
        ("eligible.leader.replicas.version", 0, 1)}
    assert ("eligible.leader.replicas.version", 1) in {(f.name, f.max_version_level)
                                                       for f in resp.finalized_features}


def test_brokers_stopped_below_min_isr(cluster: Cluster) -> None:
    T = CreateTopicsRequest
    with _client(cluster, 1) as c:
        resp = c.request(T(topics=[T.CreatableTopic(
            name="elr", num_partitions=1, replication_factor=3, assignments=[],
            configs=[T.CreatableTopicConfig(name="min.insync.replicas", value="2")])], timeout_ms=10_000), 5)
        assert resp.topics[0].error_code == 0
        assert _produce(c, "elr", [b"a", b"b"], acks=-1).error_code == 0
    assert _part(cluster, "elr")["leader"] == 1

    cluster.sync.stop_broker(3)                                   # ISR [1, 2]: still at min ISR
    p = _part(cluster, "elr")
    assert (p["isr"], p["elr"], p["last_known_elr"]) == ([1, 2], [], [])
    cluster.sync.stop_broker(2)                                   # below min ISR: 2 is eligible
    p = _part(cluster, "elr")
    assert (p["leader"], p["isr"], p["elr"], p["last_known_elr"]) == (1, [1], [2], [])
    with _client(cluster, 1) as c:
        assert _produce(c, "elr", [b"c"], acks=-1).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert _produce(c, "elr", [b"c"], acks=1).error_code == 0            # appended at 2 on broker 1 only
        assert cluster.runtime.nodes[1].state.get_log("elr", 0).log_end_offset == 3
        assert _high_watermark(c, "elr") == 2                                # the high watermark holds
        d = _dtp(c, "elr")
        assert (d.leader_id, d.isr_nodes, d.eligible_leader_replicas, d.last_known_elr) == (1, [1], [2], [])

    cluster.sync.stop_broker(1)                                   # the ISR empties: the last leader is kept
    p = _part(cluster, "elr")
    assert (p["leader"], p["isr"], p["elr"], p["last_known_elr"]) == (-1, [], [1, 2], [1])

    cluster.sync.start_broker(2)                                  # elected from the ELR
    p = _part(cluster, "elr")
    assert (p["leader"], p["isr"], p["elr"], p["last_known_elr"]) == (2, [2], [1], [])
    with _client(cluster, 2) as c:
        d = _dtp(c, "elr")
        assert (d.error_code, d.leader_id, d.isr_nodes, d.eligible_leader_replicas, d.last_known_elr) == (
            0, 2, [2], [1], [])
        assert _high_watermark(c, "elr") == 2                                # ISR of 1 < 2: still held

    cluster.sync.start_broker(3)                                  # back at min ISR: the ELR is cleared
    _wait(lambda: _part(cluster, "elr")["isr"] == [2, 3], "broker 3 back in the ISR")
    p = _part(cluster, "elr")
    assert (p["elr"], p["last_known_elr"]) == ([], [])
    with _client(cluster, 2) as c:
        assert _produce(c, "elr", [b"d"], acks=-1).error_code == 0
        assert _high_watermark(c, "elr") == 3
    cluster.sync.start_broker(1)                                  # truncates the uncommitted "c" and rejoins
    _wait(lambda: _part(cluster, "elr")["isr"] == [1, 2, 3], "broker 1 back in the ISR")
    logs = {n: cluster.runtime.nodes[n].state.get_log("elr", 0) for n in (1, 2, 3)}
    assert {n: lg.log_end_offset for n, lg in logs.items()} == {1: 3, 2: 3, 3: 3}
    assert logs[1].read_bytes(0, 1 << 20) == logs[2].read_bytes(0, 1 << 20)


def test_changing_min_isr_clears_the_elr(cluster: Cluster) -> None:
    """An ELR is eligible only under the min ISR it was recorded with: a topic's new min.insync.replicas clears
    its ELR (Kafka's ClearElrRecord), and the high watermark moves again once the ISR meets the new minimum."""
    from kafkalite_wire.messages import IncrementalAlterConfigsRequest as I

    T = CreateTopicsRequest
    with _client(cluster, 1) as c:
        resp = c.request(T(topics=[T.CreatableTopic(
            name="mi", num_partitions=1, replication_factor=3, assignments=[],
            configs=[T.CreatableTopicConfig(name="min.insync.replicas", value="3")])], timeout_ms=10_000), 5)
        assert resp.topics[0].error_code == 0
        assert _produce(c, "mi", [b"a"], acks=-1).error_code == 0
    cluster.sync.stop_broker(3)
    p = _part(cluster, "mi")
    assert (p["isr"], p["elr"]) == ([1, 2], [3])
    with _client(cluster, 1) as c:
        assert _produce(c, "mi", [b"b"], acks=1).error_code == 0
        assert _high_watermark(c, "mi") == 1
        r = c.request(I(resources=[I.AlterConfigsResource(resource_type=2, resource_name="mi", configs=[
            I.AlterableConfig(name="min.insync.replicas", config_operation=0, value="2")])], validate_only=False), 1)
        assert r.responses[0].error_code == 0
        p = _part(cluster, "mi")
        assert (p["isr"], p["elr"], p["last_known_elr"]) == ([1, 2], [], [])
        assert _produce(c, "mi", [b"c"], acks=-1).error_code == 0
        assert _high_watermark(c, "mi") == 3
