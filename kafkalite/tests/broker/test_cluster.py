"""Several brokers in one process (kafkalite.cluster): the shared metadata room, placement, the high watermark
over the ISR, min.insync.replicas, ISR shrink and rejoin, NOT_LEADER_OR_FOLLOWER, and follower truncation to
the leader epoch boundary."""
from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from kafkalite.cluster import Cluster, ClusterOpError
from kafkalite.cluster.replication import copy, truncate
from kafkalite.metadata.partitions import assign
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage import fs
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreateTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)


def _wait(cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _client(cluster: Cluster, node: int) -> RawClient:
    host, port = cluster.addresses()[node]
    return RawClient(host, port)


def _create(cluster: Cluster, name: str, partitions: int = 1, rf: int = 3, configs: dict | None = None) -> None:
    T = CreateTopicsRequest
    with _client(cluster, 1) as c:
        resp = c.request(T(topics=[T.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
            configs=[T.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
            timeout_ms=10_000), 5)
    assert resp.topics[0].error_code == 0, resp


def _produce(c: RawClient, topic: str, values: list[bytes], acks: int, version: int = 9) -> object:
    P = ProduceRequest
    batch = encode_batch(values, base_timestamp=int(time.time() * 1000))
    resp = c.request(P(acks=acks, timeout_ms=10_000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]), version)
    return resp.responses[0].partition_responses[0]


def _fetch(c: RawClient, topic: str, version: int = 12, topic_id: uuid.UUID | None = None) -> object:
    F = FetchRequest
    resp = c.request(F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                       topics=[F.FetchTopic(topic=topic, topic_id=topic_id or uuid.UUID(int=0), partitions=[
                           F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                     version)
    return resp


def test_placement_spreads_leaders_and_followers() -> None:
    replicas = assign([1, 2, 3], 6, 3)
    assert [r[0] for r in replicas] == [1, 2, 3, 1, 2, 3]            # leaders round-robin
    assert all(sorted(r) == [1, 2, 3] for r in replicas)
    assert replicas[0][1:] != replicas[3][1:]                        # followers shift once the brokers wrap
    assert assign([1, 2], 2, 5) == [[1, 2], [2, 1]]                  # capped at the broker count


def _log(tmp: Path, name: str):  # a bare storage log
    from kafkalite_storage import LogConfig, LogManager

    lm = LogManager.open(str(tmp / name), LogConfig(), node_id=1)
    return lm, lm.create_log("t", 0, uuid.uuid4())


def test_follower_truncates_to_the_leader_epoch_boundary(tmp_path: Path) -> None:
    """A follower that wrote offsets 3-5 under epoch 0 while the new leader (epoch 1) wrote other records
    from offset 3 drops its own 3-5 (OffsetForLeaderEpoch) and then holds the leader's exact bytes."""
    lm1, leader = _log(tmp_path, "leader")
    lm2, follower = _log(tmp_path, "follower")
    try:
        shared = encode_batch([b"a", b"b", b"c"], base_timestamp=int(time.time() * 1000))
        leader.append(shared, leader_epoch=0)
        follower.append(shared, leader_epoch=0)
        follower.append(encode_batch([b"x", b"y", b"z"], base_timestamp=int(time.time() * 1000)), leader_epoch=0)
        leader.append(encode_batch([b"new"], base_timestamp=int(time.time() * 1000)), leader_epoch=1)
        assert follower.log_end_offset == 6 and leader.log_end_offset == 4
        truncate(follower, leader, "test")
        assert follower.log_end_offset == 3
        while copy(follower, leader):
            pass
        assert follower.read_bytes(0, 1 << 20) == leader.read_bytes(0, 1 << 20)
        assert follower.leader_epochs == leader.leader_epochs == [(0, 0), (1, 3)]
    finally:
        lm1.close()
        lm2.close()


@pytest.fixture
def cluster():
    with Cluster(brokers=3, overrides={"offsets.topic.num.partitions": "3"}) as c:
        yield c


def test_brokers_share_one_metadata_room(cluster: Cluster) -> None:
    _create(cluster, "shared", partitions=3)
    states = [n.state for n in cluster.runtime.nodes.values()]
    assert all(s.metadata.topics is states[0].metadata.topics for s in states)   # one catalog, not copies
    assert all(s.topics["shared"] is states[0].topics["shared"] for s in states)   # each broker's view reads it
    with _client(cluster, 3) as c:
        md = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="shared")]), 12)
    assert sorted(b.node_id for b in md.brokers) == [1, 2, 3]
    parts = sorted(md.topics[0].partitions, key=lambda p: p.partition_index)
    assert [p.leader_id for p in parts] == [1, 2, 3]
    assert all(sorted(p.replica_nodes) == [1, 2, 3] and sorted(p.isr_nodes) == [1, 2, 3] for p in parts)
    for nid in (1, 2, 3):   # every replica broker holds a log of every partition
        assert all(cluster.runtime.nodes[nid].state.logs.get_log("shared", p) is not None for p in range(3))


def test_non_leader_answers_not_leader_with_the_current_leader(cluster: Cluster) -> None:
    _create(cluster, "nl")
    tid = cluster.runtime.meta.topics["nl"].topic_id
    with _client(cluster, 2) as c:
        P = ProduceRequest
        resp = c.request(P(acks=1, timeout_ms=5000, topic_data=[P.TopicProduceData(
            name="nl", partition_data=[P.PartitionProduceData(index=0, records=encode_batch([b"v"]))])]), 11)
        part = resp.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert part.current_leader.leader_id == 1
        assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(1, cluster.addresses()[1][1])]
        fetched = _fetch(c, "nl", version=16, topic_id=tid)
        fpart = fetched.responses[0].partitions[0]
        assert fpart.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and fpart.current_leader.leader_id == 1
    cluster.sync.move_leader("nl", 0, 2)
    with _client(cluster, 2) as c:
        assert _produce(c, "nl", [b"v"], acks=-1).error_code == 0
    d = {(p["topic"], p["partition"]): p for p in cluster.sync.describe()["partitions"]}
    assert d[("nl", 0)]["leader"] == 2 and d[("nl", 0)]["leader_epoch"] == 1
    with pytest.raises(ClusterOpError):
        cluster.sync.set_isr("nl", 0, [1, 3])    # without its leader


def _last_offset(records: object) -> int:
    from kafkalite.cluster.replication import split_batches

    batches = split_batches(bytes(records)) if records else []
    if not batches:
        return -1
    last = batches[-1]
    return int.from_bytes(last[:8], "big") + int.from_bytes(last[23:27], "big")


def test_high_watermark_follows_the_isr_and_min_insync(cluster: Cluster) -> None:
    """A follower whose disk fails holds the high watermark back: consumers see nothing the ISR does not all
    hold; with it out of the ISR the records become visible. acks=all below min.insync.replicas is refused
    before anything is appended, and below it the high watermark holds (Kafka 4.4, eligible leader replicas
    on: test_cluster_elr.py)."""
    _create(cluster, "hw", configs={"min.insync.replicas": "2"})
    with fs.faults() as inj, _client(cluster, 1) as c:
        assert _produce(c, "hw", [b"a", b"b", b"c"], acks=-1).error_code == 0   # every replica has 0-2
        inj.fail(op="write", path_contains="broker-2/hw-0", errno=5)
        assert _produce(c, "hw", [b"d"], acks=1).error_code == 0                 # broker 2 cannot copy 3
        part = _fetch(c, "hw").responses[0].partitions[0]
        assert part.high_watermark == 3 and _last_offset(part.records) == 2      # offset 3 not exposed
        cluster.sync.set_isr("hw", 0, [1, 3])
        _wait(lambda: _fetch(c, "hw").responses[0].partitions[0].high_watermark == 4, "the new high watermark")
        assert _last_offset(_fetch(c, "hw").responses[0].partitions[0].records) == 3
        cluster.sync.set_isr("hw", 0, [1])
        refused = _produce(c, "hw", [b"e"], acks=-1)
        assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert cluster.runtime.nodes[1].state.get_log("hw", 0).log_end_offset == 4   # nothing appended
        assert _produce(c, "hw", [b"e"], acks=1).error_code == 0
        assert _fetch(c, "hw").responses[0].partitions[0].high_watermark == 4    # under min ISR: held
        inj.clear()
    cluster.sync.set_isr("hw", 0, [1, 2, 3])
    _wait(lambda: cluster.runtime.nodes[2].state.get_log("hw", 0).log_end_offset == 5, "broker 2 caught up")
    _wait(lambda: _part_hw(cluster, "hw") == 5, "the high watermark past the ISR's return")
    tasks = cluster.runtime.nodes[2].state.supervisor.tasks
    assert tasks["replica-fetcher:hw-0"].failures >= 1      # the failure stayed in that partition's task


def _part_hw(cluster: Cluster, topic: str) -> int:
    return int(next(p["high_watermark"] for p in cluster.sync.describe()["partitions"] if p["topic"] == topic))


def test_lagging_follower_leaves_the_isr_and_rejoins() -> None:
    with Cluster(brokers=3, overrides={"replica.lag.time.max.ms": "300",
                                       "offsets.topic.num.partitions": "3"}) as cluster:
        _create(cluster, "lag", configs={"min.insync.replicas": "3"})
        with fs.faults() as inj, _client(cluster, 1) as c:
            inj.fail(op="write", path_contains="broker-3/lag-0", errno=5)
            part = _produce(c, "lag", [b"a"], acks=-1)
            # appended, then broker 3 fell out of the ISR while the producer waited
            assert part.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            isr = next(p["isr"] for p in cluster.sync.describe()["partitions"] if p["topic"] == "lag")
            assert isr == [1, 2]
            inj.clear()
        _wait(lambda: next(p["isr"] for p in cluster.sync.describe()["partitions"] if p["topic"] == "lag")
              == [1, 2, 3], "broker 3 back in the ISR")
        with _client(cluster, 1) as c:
            assert _produce(c, "lag", [b"b"], acks=-1).error_code == 0


def test_cluster_reopens_its_data_dir(tmp_path: Path) -> None:
    """Kafka's layout per broker (``<data>/broker-<id>/<topic>-<p>``); a cluster started again on the same
    data dir keeps its cluster id, its topics, their replicas and their records."""
    overrides = {"offsets.topic.num.partitions": "3"}
    with Cluster(brokers=2, data_dir=tmp_path, overrides=overrides) as cluster:
        _create(cluster, "keep", rf=2)
        with _client(cluster, 1) as c:
            assert _produce(c, "keep", [b"a", b"b"], acks=-1).error_code == 0
        cluster_id = cluster.cluster_id
    assert (tmp_path / "broker-1" / "keep-0" / "00000000000000000000.log").is_file()
    assert (tmp_path / "broker-2" / "keep-0" / "00000000000000000000.log").is_file()
    with Cluster(brokers=2, data_dir=tmp_path, overrides=overrides) as cluster:
        assert cluster.cluster_id == cluster_id
        part = next(p for p in cluster.sync.describe()["partitions"] if p["topic"] == "keep")
        assert part["replicas"] == [1, 2] and part["leader"] == 1
        with _client(cluster, 1) as c:
            fetched = _fetch(c, "keep").responses[0].partitions[0]
        assert fetched.high_watermark == 2 and _last_offset(fetched.records) == 1


def _http(address: tuple[str, int], method: str, path: str, body: object = None) -> tuple[int, dict]:
    import http.client
    import json

    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_control_api_operates_the_cluster_and_each_brokers_faults() -> None:
    """One control API for the cluster (kafkalite.control.listen): its cluster operations are the Cluster's
    (a leader move, a broker stop and start seen by describe and by Metadata), and a fault set for one broker
    fires on that broker only; Cluster.faults(node) does the same from Python."""
    with Cluster(3, overrides={"kafkalite.control.listen": "127.0.0.1:0"}) as cluster:
        addr = cluster.control_address
        assert addr is not None
        _create(cluster, "ctl", partitions=1, rf=3)
        status, d = _http(addr, "GET", "/v1/describe")
        assert status == 200 and [b["node_id"] for b in d["cluster"]["brokers"]] == [1, 2, 3]
        part = next(p for p in d["cluster"]["partitions"] if p["topic"] == "ctl")
        _wait(lambda: sorted(cluster.runtime.meta.partitions[("ctl", 0)].isr) == [1, 2, 3], "full ISR")
        target = next(n for n in (1, 2, 3) if n != part["leader"])
        status, _ = _http(addr, "POST", "/v1/cluster/move-leader", {"topic": "ctl", "partition": 0, "broker": target})
        assert status == 200 and cluster.runtime.leader_of("ctl", 0) == target
        status, answer = _http(addr, "POST", "/v1/cluster/move-leader", {"topic": "nope", "partition": 0,
                                                                         "broker": target})
        assert status == 409 and "nope" in answer["error"]
        other = next(n for n in (1, 2, 3) if n != target)
        assert _http(addr, "POST", "/v1/cluster/stop", {"broker": other})[0] == 200
        d = _http(addr, "GET", "/v1/describe")[1]
        assert {b["node_id"]: b["up"] for b in d["cluster"]["brokers"]}[other] is False
        assert _http(addr, "POST", "/v1/cluster/start", {"broker": other})[0] == 200
        assert {b["node_id"]: b["up"] for b in _http(addr, "GET", "/v1/describe")[1]["cluster"]["brokers"]}[other]

        # a fault for one broker fires there only
        status, _ = _http(addr, "POST", "/v1/faults/inject", {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER",
                                                               "count": 1, "broker": target})
        assert status == 200
        with _client(cluster, target) as c:
            assert _produce(c, "ctl", [b"a"], acks=1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert _produce(c, "ctl", [b"b"], acks=1).error_code == 0
        cluster.faults(other).inject("Metadata", "UNKNOWN_SERVER_ERROR", count=None)
        rules = {b["node_id"]: b["rules"] for b in _http(addr, "GET", "/v1/faults")[1]["brokers"]}
        assert rules[other] and not rules[target]
        cluster.faults(other).clear()
        assert not {b["node_id"]: b["rules"] for b in _http(addr, "GET", "/v1/faults")[1]["brokers"]}[other]
