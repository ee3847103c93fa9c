"""Admin APIs over the raw protocol: CreateTopics/DeleteTopics/CreatePartitions error codes, configs,
DeleteRecords, DescribeCluster, InitProducerId corner cases."""
from __future__ import annotations

from collections.abc import Callable

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_protocol import metadata, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
)

Connect = Callable[[], RawClient]
CT = CreateTopicsRequest


def create(c: RawClient, *topics: CreateTopicsRequest.CreatableTopic, validate_only: bool = False,
           version: int = 7) -> dict[str, object]:
    resp = c.request(CT(topics=list(topics), timeout_ms=5000, validate_only=validate_only), version)
    return {t.name: t for t in resp.topics}


def topic(name: str, partitions: int = 1, rf: int = 1, configs: dict[str, str] | None = None) -> object:
    return CT.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf, assignments=[],
                             configs=[CT.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])


def test_create_topics_validation_codes(raw: Connect) -> None:
    c = raw()
    res = create(c, topic("ct-ok", 2, configs={"cleanup.policy": "compact"}), topic("bad/name"),
                 topic("ct-zero", 0), topic("ct-rf3", 1, 3), topic("ct-badcfg", 1, configs={"no.such": "1"}),
                 topic("ct-badval", 1, configs={"segment.bytes": "lots"}), topic("ct-default", -1, -1))
    assert res["ct-ok"].error_code == 0 and res["ct-ok"].num_partitions == 2
    cfg = {e.name: e for e in res["ct-ok"].configs}
    assert cfg["cleanup.policy"].value == "compact" and cfg["cleanup.policy"].config_source == 1
    assert res["ct-ok"].topic_id.int != 0
    assert res["bad/name"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert res["ct-zero"].error_code == ErrorCode.INVALID_PARTITIONS
    assert res["ct-rf3"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert res["ct-badcfg"].error_code == ErrorCode.INVALID_CONFIG
    assert res["ct-badval"].error_code == ErrorCode.INVALID_CONFIG
    assert res["ct-default"].error_code == 0 and res["ct-default"].num_partitions == 1
    assert create(c, topic("ct-ok"))["ct-ok"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    dup = c.request(CT(topics=[topic("ct-dup"), topic("ct-dup")], timeout_ms=1000), 4)
    assert [t.error_code for t in dup.topics] == [ErrorCode.INVALID_REQUEST] * 2


def test_create_topics_validate_only_creates_nothing(raw: Connect) -> None:
    c = raw()
    assert create(c, topic("ct-validate", 3), validate_only=True)["ct-validate"].error_code == 0
    md = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ct-validate")],
                                   allow_auto_topic_creation=False), 12)
    assert md.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_topics_by_name_and_id(raw: Connect) -> None:
    c = raw()
    res = create(c, topic("del-a"), topic("del-b"))
    tid_b = res["del-b"].topic_id
    r = c.request(DeleteTopicsRequest(topic_names=["del-a", "del-missing"], timeout_ms=5000), 5)
    assert {t.name: t.error_code for t in r.responses} == {
        "del-a": 0, "del-missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    r = c.request(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=tid_b)],
                                      timeout_ms=5000), 6)
    assert r.responses[0].error_code == 0 and r.responses[0].name == "del-b"
    r = c.request(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=None, topic_id=tid_b)],
                                      timeout_ms=5000), 6)
    assert r.responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    md = c.request(MetadataRequest(topics=None), 12)
    assert not {"del-a", "del-b"} & {t.name for t in md.topics}
    # a deleted topic can be created again, empty
    assert create(c, topic("del-a"))["del-a"].error_code == 0


def test_create_partitions(raw: Connect) -> None:
    c = raw()
    create(c, topic("cp", 2))
    P = CreatePartitionsRequest

    def cp(name: str, count: int, validate: bool = False) -> int:
        req = P(topics=[P.CreatePartitionsTopic(name=name, count=count, assignments=None)], timeout_ms=5000,
                validate_only=validate)
        return c.request(req, 3).results[0].error_code

    assert cp("cp", 1) == ErrorCode.INVALID_PARTITIONS
    assert cp("cp", 2) == ErrorCode.INVALID_PARTITIONS
    assert cp("cp-missing", 4) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert cp("cp", 4, validate=True) == 0
    assert len(metadata(c, "cp").topics[0].partitions) == 2
    assert cp("cp", 4) == 0
    assert len(metadata(c, "cp").topics[0].partitions) == 4
    r = c.request(produce_req("cp", encode_batch([b"x"]), partition=3), 9)
    assert r.responses[0].partition_responses[0].error_code == 0


def test_configs_describe_and_incremental_alter(raw: Connect) -> None:
    c = raw()
    create(c, topic("cfg", 1, configs={"retention.ms": "1000"}))
    D, IA = DescribeConfigsRequest, IncrementalAlterConfigsRequest

    def describe() -> dict[str, object]:
        r = c.request(D(resources=[D.DescribeConfigsResource(resource_type=2, resource_name="cfg",
                                                             configuration_keys=None)]), 4)
        assert r.results[0].error_code == 0
        return {e.name: e for e in r.results[0].configs}

    cfg = describe()
    assert cfg["retention.ms"].value == "1000" and cfg["retention.ms"].config_source == 1
    assert cfg["segment.bytes"].config_source == 5

    def alter(*ops: tuple[str, int, str | None]) -> int:
        req = IA(resources=[IA.AlterConfigsResource(resource_type=2, resource_name="cfg", configs=[
            IA.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=False)
        return c.request(req, 1).responses[0].error_code

    assert alter(("retention.ms", 1, None), ("cleanup.policy", 2, "compact")) == 0
    cfg = describe()
    assert cfg["retention.ms"].config_source != 1
    assert cfg["cleanup.policy"].value == "delete,compact"
    assert alter(("segment.bytes", 0, "not-a-number")) == ErrorCode.INVALID_CONFIG
    assert alter(("unknown.cfg", 0, "1")) == ErrorCode.INVALID_CONFIG
    r = c.request(D(resources=[D.DescribeConfigsResource(resource_type=2, resource_name="nope",
                                                         configuration_keys=None)]), 4)
    assert r.results[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    r = c.request(D(resources=[D.DescribeConfigsResource(resource_type=4, resource_name="1",
                                                         configuration_keys=["num.partitions"])]), 1)
    assert [(e.name, e.value) for e in r.results[0].configs] == [("num.partitions", "1")]


def test_topic_config_overrides_survive_restart(tmp_path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        create(c, topic("persist-cfg", 1, configs={"retention.ms": "4242"}))
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        D = DescribeConfigsRequest
        r = c.request(D(resources=[D.DescribeConfigsResource(resource_type=2, resource_name="persist-cfg",
                                                             configuration_keys=["retention.ms"])]), 4)
        assert [(e.name, e.value) for e in r.results[0].configs] == [("retention.ms", "4242")]


def test_delete_records_moves_log_start(raw: Connect) -> None:
    c = raw()
    metadata(c, "dr")
    for _ in range(3):
        c.request(produce_req("dr", encode_batch([b"a", b"b"])), 9)
    R = DeleteRecordsRequest

    def dr(offset: int) -> tuple[int, int]:
        req = R(topics=[R.DeleteRecordsTopic(name="dr", partitions=[
            R.DeleteRecordsPartition(partition_index=0, offset=offset)])], timeout_ms=5000)
        p = c.request(req, 2).topics[0].partitions[0]
        return p.error_code, p.low_watermark

    assert dr(4) == (0, 4)
    assert dr(99) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert dr(-1) == (0, 6)


def test_describe_cluster_and_offset_for_leader_epoch(raw: Connect, broker: Broker) -> None:
    c = raw()
    r = c.request(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1), 1)
    assert r.error_code == 0 and [(b.host, b.port) for b in r.brokers] == [(broker.host, broker.port)]
    metadata(c, "ofle")
    c.request(produce_req("ofle", encode_batch([b"a", b"b", b"c"])), 9)
    OE = OffsetForLeaderEpochRequest
    req = OE(topics=[OE.OffsetForLeaderTopic(topic="ofle", partitions=[
        OE.OffsetForLeaderPartition(partition=0, current_leader_epoch=0, leader_epoch=0)])])
    p = c.request(req, 2).topics[0].partitions[0]
    assert (p.error_code, p.leader_epoch, p.end_offset) == (0, 0, 3)
    req.topics[0].partitions[0].current_leader_epoch = 5
    assert c.request(req, 2).topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_init_producer_id_variants(raw: Connect) -> None:
    c = raw()
    ids = {c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), v).producer_id
           for v in (0, 1, 2, 3, 4, 5)}
    assert len(ids) == 6 and min(ids) >= 0
    r = c.request(InitProducerIdRequest(transactional_id="", transaction_timeout_ms=1000), 0)
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_colliding_names_and_disabled_deletion(tmp_path) -> None:
    with Broker(data_dir=tmp_path, overrides={"delete.topic.enable": "false"}) as b, RawClient(b.host, b.port) as c:
        assert create(c, topic("metrics.topic"))["metrics.topic"].error_code == 0
        assert create(c, topic("metrics_topic"))["metrics_topic"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        r = c.request(DeleteTopicsRequest(topic_names=["metrics.topic"], timeout_ms=5000), 5)
        assert r.responses[0].error_code == ErrorCode.TOPIC_DELETION_DISABLED
        assert [t.name for t in c.request(MetadataRequest(topics=None), 12).topics] == ["metrics.topic"]


def test_describe_topic_partitions_pages_with_a_cursor(tmp_path) -> None:
    from kafkalite_wire.messages import DescribeTopicPartitionsRequest as Q

    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        create(c, topic("dtp-a", 3), topic("dtp-b", 2))
        r = c.request(Q(topics=[Q.TopicRequest(name=n) for n in ("dtp-b", "dtp-a", "dtp-none")],
                        response_partition_limit=4), 0)
        got = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in r.topics]
        assert got == [("dtp-a", 0, [0, 1, 2]), ("dtp-b", 0, [0])]
        assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("dtp-b", 1)
        r = c.request(Q(topics=[Q.TopicRequest(name=n) for n in ("dtp-b", "dtp-a", "dtp-none")],
                        response_partition_limit=4,
                        cursor=Q.Cursor(topic_name="dtp-b", partition_index=1)), 0)
        got = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in r.topics]
        assert got == [("dtp-b", 0, [1]), ("dtp-none", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
        assert r.next_cursor is None
        everything = c.request(Q(topics=[], response_partition_limit=2000), 0)
        assert [t.name for t in everything.topics] == ["dtp-a", "dtp-b"]
        assert everything.topics[0].topic_id.int != 0 and everything.topics[0].partitions[0].isr_nodes == [1]


def test_describe_log_dirs_reports_partition_sizes(tmp_path) -> None:
    from kafkalite_wire.messages import DescribeLogDirsRequest as Q

    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        create(c, topic("ld", 2))
        batch = encode_batch([b"x" * 50])
        c.request(produce_req("ld", batch, partition=1), 9)
        r = c.request(Q(topics=None), 4)
        (res,) = r.results
        assert res.error_code == 0 and res.log_dir == str(tmp_path.resolve()) and res.usable_bytes > 0
        sizes = {(t.name, p.partition_index): p.partition_size for t in res.topics for p in t.partitions}
        assert sizes == {("ld", 0): 0, ("ld", 1): len(batch)}
        r = c.request(Q(topics=[Q.DescribableLogDirTopic(topic="ld", partitions=[1, 7]),
                                Q.DescribableLogDirTopic(topic="nope", partitions=[0])]), 1)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.results[0].topics] == [("ld", [1])]
