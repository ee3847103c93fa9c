"""The share group dead-letter queue (KIP-1191, ``kafkalite.coordinator.share.dlq``) over the wire: an embedded
broker (default profile: share.version 2 finalized), share fetches and acknowledgements by RawClient, the DLQ
topic read back with Fetch.

Checked: a REJECT and a release at the delivery count limit each write one DLQ record to ``source partition %
DLQ partitions`` with Kafka 4.4's headers, key and value copied when ``errors.deadletterqueue.copy.record.enable``
is on, null otherwise; the share-partition start moves past them only once that is done; a missing DLQ topic is
created when ``errors.deadletterqueue.auto.create.topics.enable`` is on (with ``errors.deadletterqueue.group.enable``),
and the records are archived without a DLQ record when it is off, when the topic is not enabled, or when
share.version is downgraded to 1; the group config refuses names starting with ``__``.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_configs_protocol import configs, incremental
from kafkalite.tests.broker.test_protocol import fetch_req, produce_req
from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreateTopicsRequest,
    DescribeShareGroupOffsetsRequest,
    UpdateFeaturesRequest,
)

GROUP, SET = 32, 0
ACCEPT, RELEASE, REJECT = 1, 2, 3
LIMIT = 2


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Broker(data_dir=tmp_path_factory.mktemp("sharedlq"), overrides={
            "kafkalite.share.auto.offset.reset": "earliest", "group.share.delivery.count.limit": str(LIMIT),
            "group.share.min.delivery.count.limit": "2", "share.coordinator.state.topic.num.partitions": "2"}) as b:
        yield b


@pytest.fixture
def c(broker: Broker) -> Iterator[RawClient]:
    with RawClient(broker.host, broker.port) as client:
        yield client


def create(c: RawClient, name: str, partitions: int = 1, **cfg: str) -> None:
    r = c.request(CreateTopicsRequest(timeout_ms=10000, topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, configs=[
            CreateTopicsRequest.CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in cfg.items()])]), 5)
    assert r.topics[0].error_code == 0, r.topics[0].error_message


def dlq_config(c: RawClient, group: str, topic: str, copy: bool) -> None:
    assert incremental(c, group, ("errors.deadletterqueue.topic.name", SET, topic),
                       ("errors.deadletterqueue.copy.record.enable", SET, "true" if copy else "false"),
                       rtype=GROUP) == (0, None)


def records(c: RawClient, topic: str, partition: int = 0) -> list[Any]:
    r = c.request(fetch_req(topic, 0, partition=partition), 11)
    data = bytes(r.responses[0].partitions[0].records or b"")
    return [rec for pos, hdr in iter_batches(data) for rec in batch_records(data[pos:pos + hdr.size])]


def wait_records(c: RawClient, topic: str, n: int, partition: int = 0) -> list[Any]:
    deadline = time.monotonic() + 20
    while True:
        got = records(c, topic, partition)
        if len(got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def start_offset(c: RawClient, group: str, topic: str) -> int:
    D = DescribeShareGroupOffsetsRequest
    d = c.request(D(groups=[D.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
        D.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0])])]), 1)
    return int(d.groups[0].topics[0].partitions[0].start_offset)


def wait_start(c: RawClient, group: str, topic: str, want: int) -> int:
    deadline = time.monotonic() + 20
    while (got := start_offset(c, group, topic)) != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def reject_and_exhaust(c: RawClient, group: str, topic: str) -> uuid.UUID:
    """Records k0..k3: 0 rejected, 1 released until the delivery count limit, 2 and 3 accepted."""
    tid = topic_id(c, topic)
    batch = encode_batch([Rec(b"v%d" % i, key=b"k%d" % i, headers=[("h", b"x")]) for i in range(4)])
    assert c.request(produce_req(topic, batch), 9).responses[0].partition_responses[0].error_code == 0
    hb(c, group, "m", 0, [topic])
    r = fetch(c, group, "m", 0, tid)
    assert acquired(r) == [0, 1, 2, 3]
    r = fetch(c, group, "m", 1, tid, acks=[(0, 3, [REJECT, RELEASE, ACCEPT, ACCEPT])])
    assert r.responses[0].partitions[0].acknowledge_error_code == 0 and acquired(r) == [1]
    r = fetch(c, group, "m", 2, tid, acks=[(1, 1, [RELEASE])])    # second delivery released: the limit
    assert r.responses[0].partitions[0].acknowledge_error_code == 0 and acquired(r) == []
    return tid


def headers(rec: Any) -> dict[str, str]:
    return {k: (v or b"").decode() for k, v in rec.headers}


def test_rejected_and_exhausted_records_go_to_the_dlq_with_kafkas_headers(c: RawClient) -> None:
    create(c, "src1")
    create(c, "dlq.g1", errors_deadletterqueue_group_enable="true")
    dlq_config(c, "g1", "dlq.g1", copy=True)
    reject_and_exhaust(c, "g1", "src1")
    got = wait_records(c, "dlq.g1", 2)
    assert [headers(r) for r in got] == [
        {"__dlq.errors.topic": "src1", "__dlq.errors.partition": "0", "__dlq.errors.offset": "0",
         "__dlq.errors.group": "g1", "__dlq.errors.delivery.count": "1",
         "__dlq.errors.message": "Offset rejected by client."},
        {"__dlq.errors.topic": "src1", "__dlq.errors.partition": "0", "__dlq.errors.offset": "1",
         "__dlq.errors.group": "g1", "__dlq.errors.delivery.count": "2",
         "__dlq.errors.message": "Offset delivery count exceeded the threshold."}]
    assert [(r.key, r.value) for r in got] == [(b"k0", b"v0"), (b"k1", b"v1")]   # the source headers are not
    assert wait_start(c, "g1", "src1", 4) == 4


def test_headers_only_without_copy_and_the_partition_is_source_mod_dlq_partitions(c: RawClient) -> None:
    create(c, "src2", 3)
    create(c, "dlq.g2", 2, errors_deadletterqueue_group_enable="true")
    dlq_config(c, "g2", "dlq.g2", copy=False)
    tid = topic_id(c, "src2")
    assert c.request(produce_req("src2", encode_batch([Rec(b"v", key=b"k")]), partition=2), 9) \
        .responses[0].partition_responses[0].error_code == 0
    hb(c, "g2", "m", 0, ["src2"])
    from kafkalite.tests.broker.test_share_handlers import FR
    req = FR(group_id="g2", member_id="m", share_session_epoch=0, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
             max_records=100, batch_size=100, topics=[FR.FetchTopic(topic_id=tid, partitions=[
                 FR.FetchPartition(partition_index=2)])])
    r = c.request(req, 1)
    assert acquired(r) == [0]
    req.share_session_epoch = 1
    req.topics[0].partitions[0].acknowledgement_batches = [FR.AcknowledgementBatch(
        first_offset=0, last_offset=0, acknowledge_types=[REJECT])]
    r = c.request(req, 1)
    assert r.responses[0].partitions[0].acknowledge_error_code == 0
    got = wait_records(c, "dlq.g2", 1, partition=0)     # 2 % 2
    assert len(got) == 1 and (got[0].key, got[0].value) == (None, None)
    assert headers(got[0])["__dlq.errors.partition"] == "2" and records(c, "dlq.g2", 1) == []


def test_missing_topic_created_only_with_auto_create(c: RawClient) -> None:
    create(c, "src3")
    dlq_config(c, "g3", "dlq.g3", copy=False)
    reject_and_exhaust(c, "g3", "src3")
    assert wait_start(c, "g3", "src3", 4) == 4                     # archived regardless
    r = c.request(fetch_req("dlq.g3", 0), 11)
    assert r.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION   # not created
    assert incremental(c, "", ("errors.deadletterqueue.auto.create.topics.enable", SET, "true"),
                       rtype=4) == (0, None)
    try:
        create(c, "src4")
        dlq_config(c, "g4", "dlq.g4", copy=False)
        reject_and_exhaust(c, "g4", "src4")
        assert len(wait_records(c, "dlq.g4", 2)) == 2
        cfg = configs(c, "dlq.g4")
        assert cfg["errors.deadletterqueue.group.enable"].value == "true"
        assert cfg["message.timestamp.type"].value == "CreateTime"
    finally:
        incremental(c, "", ("errors.deadletterqueue.auto.create.topics.enable", 1, None), rtype=4)


def test_not_enabled_or_bad_prefix_archives_without_writing(c: RawClient) -> None:
    create(c, "src5")
    create(c, "dlq.g5")                                            # errors.deadletterqueue.group.enable off
    dlq_config(c, "g5", "dlq.g5", copy=False)
    reject_and_exhaust(c, "g5", "src5")
    assert wait_start(c, "g5", "src5", 4) == 4
    assert records(c, "dlq.g5") == []
    create(c, "src6")
    create(c, "other.g6", errors_deadletterqueue_group_enable="true")   # not under the prefix "dlq."
    dlq_config(c, "g6", "other.g6", copy=False)
    reject_and_exhaust(c, "g6", "src6")
    assert wait_start(c, "g6", "src6", 4) == 4
    assert records(c, "other.g6") == []


def test_group_config_validation_and_describe(c: RawClient) -> None:
    cfg = configs(c, "any", rtype=GROUP)
    name, copy = cfg["errors.deadletterqueue.topic.name"], cfg["errors.deadletterqueue.copy.record.enable"]
    assert (name.value, name.config_type, name.config_source) == ("", 2, 5)
    assert (copy.value, copy.config_type, copy.config_source) == ("false", 1, 5)
    assert incremental(c, "gv", ("errors.deadletterqueue.topic.name", SET, "__x"), rtype=GROUP) == (
        ErrorCode.INVALID_CONFIG, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
    assert incremental(c, "gv", ("errors.deadletterqueue.copy.record.enable", SET, "yes"), rtype=GROUP) == (
        ErrorCode.INVALID_CONFIG, "Invalid value yes for configuration errors.deadletterqueue.copy.record.enable: "
        "Expected value to be either true or false")
    assert incremental(c, "gv", ("errors.deadletterqueue.copy.record.enable", SET, "TRUE"), rtype=GROUP) == (0, None)
    assert configs(c, "gv", rtype=GROUP)["errors.deadletterqueue.copy.record.enable"].value == "true"


def test_share_version_1_turns_the_dlq_off(c: RawClient) -> None:
    U = UpdateFeaturesRequest
    r = c.request(U(timeout_ms=5000, feature_updates=[U.FeatureUpdateKey(
        feature="share.version", max_version_level=1, upgrade_type=2)]), 1)
    assert r.error_code == 0, r.error_message
    try:
        create(c, "src7")
        create(c, "dlq.g7", errors_deadletterqueue_group_enable="true")
        dlq_config(c, "g7", "dlq.g7", copy=False)
        reject_and_exhaust(c, "g7", "src7")
        assert start_offset(c, "g7", "src7") == 4                  # archived at once, no DLQ write
        assert records(c, "dlq.g7") == []
    finally:
        r = c.request(U(timeout_ms=5000, feature_updates=[U.FeatureUpdateKey(
            feature="share.version", max_version_level=2, upgrade_type=1)]), 1)
        assert r.error_code == 0, r.error_message
