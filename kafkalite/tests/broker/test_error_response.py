"""A request whose handler raises is answered with the API's error response (UNKNOWN_SERVER_ERROR on every
entry it named), on a connection that stays open, as Kafka's ``KafkaApis.handleError`` answers it.

The builder is checked for every (API, version) the broker serves; the broker's side with a handler made to
raise for Produce, Fetch, Metadata, an admin API (CreateTopics, DescribeConfigs) and group APIs (JoinGroup,
OffsetCommit), over a raw connection and with real clients that see the error and carry on.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.handlers import error_response as er
from kafkalite.handlers import load_all, registry
from kafkalite.tests.fuzz.mutate import Target, valid_request
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import (
    REGISTRY,
    ApiVersionsRequest,
    CreateAclsRequest,
    CreateAclsResponse,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FetchRequest,
    JoinGroupRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ProduceRequest,
)

UNKNOWN = -1


def _errors(obj: Any, out: list[tuple[str, int]]) -> list[tuple[str, int]]:
    for name in getattr(type(obj), "__slots__", ()):
        value = getattr(obj, name)
        if name.endswith("error_code"):
            out.append((name, value))
        elif isinstance(value, list):
            for item in value:
                _errors(item, out)
    return out


def test_every_served_api_and_version_gets_an_encodable_error_response() -> None:
    load_all()
    rng = random.Random(12)
    target = Target(topics={"t": uuid.uuid4()})
    checked = 0
    for key, spec in sorted(registry.HANDLERS.items()):
        info = REGISTRY[key]
        for version in range(spec.min_version, spec.max_version + 1):
            for _ in range(3):
                req = valid_request(key, version, rng, target)
                resp = er.error_response(info.response_class, req)
                codes = _errors(resp, [])
                assert all(code == UNKNOWN for _, code in codes), (info.name, version, codes)
                data = resp.encode(version)
                assert info.response_class.decode(data, version) is not None
                checked += 1
    assert checked > 300


def test_entries_mirror_the_request() -> None:
    produce = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="a", partition_data=[
            ProduceRequest.PartitionProduceData(index=i, records=b"") for i in (0, 3)]),
        ProduceRequest.TopicProduceData(name="b", partition_data=[ProduceRequest.PartitionProduceData(index=7)])])
    resp = er.error_response(REGISTRY[0].response_class, produce)
    got = [(t.name, p.index, p.error_code, p.base_offset) for t in resp.responses for p in t.partition_responses]
    assert got == [("a", 0, UNKNOWN, -1), ("a", 3, UNKNOWN, -1), ("b", 7, UNKNOWN, -1)]   # INVALID_OFFSET

    fetch = FetchRequest(topics=[FetchRequest.FetchTopic(topic="a", partitions=[
        FetchRequest.FetchPartition(partition=2, fetch_offset=5)])])
    resp = er.error_response(REGISTRY[1].response_class, fetch)
    assert resp.error_code == UNKNOWN
    assert [(t.topic, p.partition_index, p.error_code) for t in resp.responses for p in t.partitions] == [
        ("a", 2, UNKNOWN)]

    meta = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="x"),
                                   MetadataRequest.MetadataRequestTopic(name="y")])
    resp = er.error_response(REGISTRY[3].response_class, meta)
    assert [(t.name, t.error_code, t.partitions) for t in resp.topics] == [("x", UNKNOWN, []), ("y", UNKNOWN, [])]
    assert er.error_response(REGISTRY[3].response_class, MetadataRequest(topics=None)).topics == []

    # a list of plain names (DescribeGroups), of plain indexes (OffsetFetch v0-7), and groups (v8+)
    resp = er.error_response(DescribeGroupsResponse, DescribeGroupsRequest(groups=["g1", "g2"]))
    assert [(g.group_id, g.error_code) for g in resp.groups] == [("g1", UNKNOWN), ("g2", UNKNOWN)]
    of = OffsetFetchRequest(group_id="g", topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="a", partition_indexes=[1, 4])], groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id="h", topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name="b", partition_indexes=[9])])])
    resp = er.error_response(OffsetFetchResponse, of)
    assert resp.error_code == UNKNOWN
    assert [(t.name, p.partition_index, p.error_code) for t in resp.topics for p in t.partitions] == [
        ("a", 1, UNKNOWN), ("a", 4, UNKNOWN)]
    assert [(g.group_id, g.error_code, t.name, p.partition_index, p.error_code)
            for g in resp.groups for t in g.topics for p in t.partitions] == [("h", UNKNOWN, "b", 9, UNKNOWN)]

    # resources keyed by type and name; entries known by position only (CreateAcls)
    dc = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name="a", configuration_keys=["retention.ms"])])
    resp = er.error_response(REGISTRY[32].response_class, dc)
    assert [(r.resource_type, r.resource_name, r.error_code, r.configs) for r in resp.results] == [
        (2, "a", UNKNOWN, [])]
    acls = CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(), CreateAclsRequest.AclCreation()])
    assert [r.error_code for r in er.error_response(CreateAclsResponse, acls).results] == [UNKNOWN, UNKNOWN]


# -- the broker ---------------------------------------------------------------------------------------------

class Boom(RuntimeError):
    pass


@pytest.fixture
def failing(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``failing(api_key, times=None)``: that API's handler raises (``times`` times, or always)."""
    load_all()
    calls: dict[int, int] = {}

    def make(api_key: int, times: int | None = None) -> dict[int, int]:
        spec = registry.HANDLERS[api_key]
        real = spec.fn
        calls[api_key] = 0

        async def fn(ctx: Any, body: Any) -> Any:
            calls[api_key] += 1
            if times is None or calls[api_key] <= times:
                raise Boom(f"{spec.name} made to fail")
            return await real(ctx, body)

        monkeypatch.setitem(registry.HANDLERS, api_key, dataclasses.replace(spec, fn=fn))
        return calls

    yield make


def _still_open(client: RawClient) -> None:
    resp = client.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    assert resp.error_code == 0


def _create(client: RawClient, name: str, partitions: int = 1) -> None:
    resp = client.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=10_000), 5)
    assert resp.topics[0].error_code in (0, 36), resp


@pytest.mark.parametrize(("api_key", "version", "request_", "entries"), [
    (0, 9, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="er-t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"")])]),
     lambda r: [(t.name, p.index, p.error_code) for t in r.responses for p in t.partition_responses]),
    (1, 12, FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[FetchRequest.FetchTopic(
        topic="er-t", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])]),
     lambda r: [(r.error_code, t.topic, p.partition_index, p.error_code) for t in r.responses
                for p in t.partitions]),
    (3, 9, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="er-t")]),
     lambda r: [(t.name, t.error_code) for t in r.topics]),
    (32, 4, DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name="er-t", configuration_keys=None)]),
     lambda r: [(x.resource_name, x.error_code) for x in r.results]),
    (11, 5, JoinGroupRequest(group_id="er-g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                             member_id="", protocol_type="consumer", protocols=[
                                 JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")]),
     lambda r: [r.error_code]),
    (8, 8, OffsetCommitRequest(group_id="er-g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="er-t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)])]),
     lambda r: [(t.name, p.partition_index, p.error_code) for t in r.topics for p in t.partitions]),
], ids=["Produce", "Fetch", "Metadata", "DescribeConfigs", "JoinGroup", "OffsetCommit"])
def test_a_failing_handler_is_answered_with_unknown_server_error(
        broker: Broker, failing: Any, api_key: int, version: int, request_: Any, entries: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    with RawClient(broker.host, broker.port) as c:
        _create(c, "er-t")
        failing(api_key)
        with caplog.at_level(logging.ERROR, logger="kafkalite.server.connection"):
            resp = c.request(request_, version)
            got = entries(resp)
            assert got and all(UNKNOWN in (e if isinstance(e, tuple) else (e,)) for e in got), got
            _still_open(c)
            again = c.request(request_, version)      # the same failure again: answered the same way
            assert entries(again) == got
            _still_open(c)
        tracebacks = [r for r in caplog.records if r.exc_info]
        assert len(tracebacks) == 1 and isinstance(tracebacks[0].exc_info[1], Boom)
        assert any("failed again" in r.getMessage() for r in caplog.records)


def test_acks0_produce_that_fails_closes_its_connection(broker: Broker, failing: Any) -> None:
    with RawClient(broker.host, broker.port) as c:
        _create(c, "er-t")
        failing(0)
        c.send(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
            name="er-t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"")])]), 9)
        assert c.is_closed_by_peer()


def test_a_failing_create_topics_is_answered_per_topic(broker: Broker, failing: Any) -> None:
    failing(19)
    with RawClient(broker.host, broker.port) as c:
        resp = c.request(CreateTopicsRequest(topics=[
            CreateTopicsRequest.CreatableTopic(name=n, num_partitions=1, replication_factor=1)
            for n in ("er-c1", "er-c2")], timeout_ms=10_000), 7)
        assert [(t.name, t.error_code) for t in resp.topics] == [("er-c1", UNKNOWN), ("er-c2", UNKNOWN)]
        _still_open(c)


@pytest.mark.clients
@pytest.mark.requires("confluent_kafka")
def test_confluent_producer_sees_the_error_and_carries_on(broker: Broker, failing: Any) -> None:
    """librdkafka gets UNKNOWN_SERVER_ERROR for the first Produce, on a connection that stays up, and the
    records it sends next are delivered (a closed connection made it re-bootstrap instead)."""
    import confluent_kafka as ck
    with RawClient(broker.host, broker.port) as c:
        _create(c, "er-ck")
    calls = failing(0, times=1)
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, "retries": 0,
                     "enable.idempotence": False, "acks": "all"})
    reports: list[Any] = []
    p.produce("er-ck", value=b"first", partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(30)
    for i in range(5):
        p.produce("er-ck", value=f"next-{i}".encode(), partition=0,
                  on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(30) == 0
    assert calls[0] >= 2
    assert reports[0] is not None and reports[0].code() == ck.KafkaError.UNKNOWN
    assert reports[1:] == [None] * 5


@pytest.mark.clients
@pytest.mark.requires("confluent_kafka")
def test_confluent_consumer_retries_a_failing_fetch(broker: Broker, failing: Any) -> None:
    """librdkafka backs off and fetches again after a Fetch answered with UNKNOWN_SERVER_ERROR."""
    import confluent_kafka as ck
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(20):
        p.produce("er-fetch", value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0
    calls = failing(1, times=3)
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "er-fetch-g",
                     "enable.auto.commit": False, "fetch.error.backoff.ms": 50})
    c.assign([ck.TopicPartition("er-fetch", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < 20 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    assert calls[1] > 3
    assert got == [f"v{i}".encode() for i in range(20)]


@pytest.mark.clients
@pytest.mark.requires("kafka")
def test_kafka_python_admin_sees_the_error_and_carries_on(broker: Broker, failing: Any) -> None:
    """kafka-python's admin client raises UnknownError for a CreateTopics answered with UNKNOWN_SERVER_ERROR,
    and its next call on the same client creates the topic."""
    import kafka
    from kafka.admin import NewTopic
    from kafka.errors import UnknownError

    admin = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=10_000)
    try:
        calls = failing(19, times=1)
        with pytest.raises(UnknownError):
            admin.create_topics([NewTopic("er-kp", 2, 1)])
        admin.create_topics([NewTopic("er-kp", 2, 1)])
        assert calls[19] == 2
        assert "er-kp" in admin.list_topics()
    finally:
        admin.close()
