"""kafkalite.faults: FaultPlan rules against a real embedded broker over raw connections.

Where an injected code goes (per partition for Produce/Fetch/..., top level elsewhere), that ``answer`` mode
carries nothing out for the matched partitions while ``through`` does, counts and expiry, latency that holds
one connection (in request order) and not the others, pause/resume, dropped connections, and the names and
numbers the API accepts.
"""
from __future__ import annotations

import select
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalite.coordinator.classic.records import build_batch
from kafkalite.embedded import Broker
from kafkalite.faults import FaultError, FaultPlan
from kafkalite.faults.plan import api_key_of, error_code_of
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)

NOT_LEADER = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
_AV = ApiVersionsRequest(client_software_name="faults-test", client_software_version="1")


@pytest.fixture(autouse=True)
def _no_faults_left(broker: Broker) -> Iterator[None]:
    """The module's broker and raw connections are conftest's; every test leaves no fault behind."""
    yield
    broker.faults.clear()


def _topic(c: RawClient, partitions: int = 2) -> str:
    name = f"f-{uuid.uuid4().hex[:8]}"
    resp = c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=10_000), 5)
    assert resp.topics[0].error_code == 0
    return name


def _produce(topic: str, partitions: list[int], acks: int = -1) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(
            index=p, records=build_batch([(b"k", b"v%d" % p)])) for p in partitions])])


def _errors(resp: ProduceRequest) -> dict[int, int]:
    return {p.index: p.error_code for t in resp.responses for p in t.partition_responses}


def _end_offsets(c: RawClient, topic: str, partitions: list[int]) -> dict[int, int]:
    resp = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=-1)
                                for p in partitions])]), 5)
    return {p.partition_index: p.offset for t in resp.topics for p in t.partitions}


def test_names_and_codes() -> None:
    assert api_key_of("Produce") == api_key_of("produce") == api_key_of(0) == api_key_of("0") == 0
    assert api_key_of("offset_commit") == 8
    assert error_code_of("not_leader_or_follower") == error_code_of(6) == error_code_of("6") == NOT_LEADER
    assert error_code_of(-1) == -1
    for bad in ("Nope", 999):
        with pytest.raises(FaultError):
            api_key_of(bad)
    with pytest.raises(FaultError):
        error_code_of("NOT_AN_ERROR")
    plan = FaultPlan(node_id=1)
    with pytest.raises(FaultError, match="no partitions"):
        plan.inject("Metadata", "NOT_LEADER_OR_FOLLOWER", partitions=[("t", 0)])
    with pytest.raises(FaultError, match="count"):
        plan.inject("Produce", 6, count=0)
    with pytest.raises(FaultError, match="mode"):
        plan.inject("Produce", 6, mode="sometimes")
    assert not plan.active
    plan.inject("Produce", 6, partitions=["t:0", "u-3"])
    assert plan.active and plan.rules[0].partitions == frozenset({("t", 0), ("u", 3)})
    plan.clear()
    assert not plan.active and plan.counters["cleared"] == 1


def test_produce_error_on_one_partition_appends_only_the_other(broker: Broker, raw: Callable[[], RawClient]) -> None:
    c = raw()
    topic = _topic(c)
    broker.faults.inject("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, partitions=[(topic, 0)])
    assert _errors(c.request(_produce(topic, [0, 1]), 9)) == {0: NOT_LEADER, 1: 0}
    assert _end_offsets(c, topic, [0, 1]) == {0: 0, 1: 1}      # "answer": nothing appended to partition 0
    assert _errors(c.request(_produce(topic, [1]), 9)) == {1: 0}  # not naming partition 0: not counted
    assert _errors(c.request(_produce(topic, [0]), 9)) == {0: NOT_LEADER}
    assert _errors(c.request(_produce(topic, [0]), 9)) == {0: 0}  # two fired: expired
    assert _end_offsets(c, topic, [0, 1]) == {0: 1, 1: 2}
    d = broker.faults.describe()
    assert d["rules"] == [] and d["counters"]["errors_injected"] >= 2 and d["counters"]["expired"] >= 1


def test_through_mode_appends_and_answers_the_error(broker: Broker, raw: Callable[[], RawClient]) -> None:
    c = raw()
    topic = _topic(c, 1)
    broker.faults.inject("Produce", "REQUEST_TIMED_OUT", count=1, mode="through")
    assert _errors(c.request(_produce(topic, [0]), 9)) == {0: int(ErrorCode.REQUEST_TIMED_OUT)}
    assert _end_offsets(c, topic, [0]) == {0: 1}       # carried out: a lost acknowledgement


def test_fetch_error_is_per_partition_not_top_level(broker: Broker, raw: Callable[[], RawClient]) -> None:
    c = raw()
    topic = _topic(c)
    c.request(_produce(topic, [0, 1]), 9)
    broker.faults.inject("Fetch", NOT_LEADER, partitions=[(topic, 1)])
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(
            partition=p, fetch_offset=0, partition_max_bytes=1 << 20) for p in (0, 1)])])
    resp = c.request(req, 11)
    assert resp.error_code == 0
    parts = {p.partition_index: p for t in resp.responses for p in t.partitions}
    assert parts[1].error_code == NOT_LEADER and parts[0].error_code == 0
    assert bytes(parts[0].records)          # partition 0 was fetched as usual


def test_top_level_error_for_coordinator_apis(broker: Broker, raw: Callable[[], RawClient]) -> None:
    c = raw()
    broker.faults.inject("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=1)
    resp = c.request(FindCoordinatorRequest(key="g", key_type=0), 2)
    assert resp.error_code == int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    resp = c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
    assert resp.coordinators[0].error_code == 0 and resp.coordinators[0].node_id == broker.faults.describe()["node_id"]


def test_acks0_produce_with_an_error_closes_the_connection(broker: Broker, raw: Callable[[], RawClient]) -> None:
    c = raw()
    topic = _topic(c, 1)
    broker.faults.inject("Produce", NOT_LEADER)
    c.send(_produce(topic, [0], acks=0), 9)
    assert c.is_closed_by_peer()


def _readable(c: RawClient) -> bool:
    return bool(select.select([c.sock], [], [], 0)[0])


def test_latency_holds_one_connection_in_order_not_the_others(broker: Broker, raw: Callable[[], RawClient]) -> None:
    slow, other = raw(), raw()
    broker.faults.latency(1500, api="Metadata", count=1)
    first = slow.send(MetadataRequest(topics=[]), 9)
    second = slow.send(_AV, 3)         # pipelined behind the delayed one
    assert other.request(_AV, 3).error_code == 0   # not held
    assert not _readable(slow)                           # still held (1.5 s)
    assert slow.recv(3, 9)[0] == first                   # then answered, in request order
    assert slow.recv(18, 3)[0] == second
    assert broker.faults.counters["requests_delayed"] >= 1


def test_pause_holds_requests_until_resume(broker: Broker, raw: Callable[[], RawClient]) -> None:
    c, d = raw(), raw()
    broker.faults.pause()
    cid = c.send(_AV, 3)
    d.send(MetadataRequest(topics=[]), 9)
    select.select([c.sock, d.sock], [], [], 0.5)
    assert not _readable(c) and not _readable(d)
    assert broker.faults.describe()["paused"]
    broker.faults.resume()
    assert c.recv(18, 3)[0] == cid
    assert d.recv(3, 9)[1].brokers


def test_drop_connections(broker: Broker, raw: Callable[[], RawClient]) -> None:
    a, b = raw(), raw()
    a.request(_AV, 3)
    b.request(_AV, 3)
    assert broker.faults.drop_connections() >= 2
    assert a.is_closed_by_peer() and b.is_closed_by_peer()
    c = raw()
    broker.faults.drop_connections(api="Metadata")
    assert c.request(_AV, 3).error_code == 0    # other APIs pass
    c.send(MetadataRequest(topics=[]), 9)
    assert c.is_closed_by_peer()
    d = raw()                                                     # count 1: expired
    assert d.request(MetadataRequest(topics=[]), 9).brokers


def test_wait_for_group_state(broker: Broker) -> None:
    assert broker.faults.wait_for_group_state("no-such-group", "Dead", timeout=5) == "Dead"
    with pytest.raises(TimeoutError, match="is Dead"):
        broker.faults.wait_for_group_state("no-such-group", "Stable", timeout=0.2)


def test_not_running_broker_says_so(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="not running"):
        Broker(data_dir=tmp_path).faults.pause()
