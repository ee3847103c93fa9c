"""Every name Kafka reserves or treats as internal, under every operation a client can aim at a topic (issue 29).

Kafka's rules (3.9 sources): ``Topic.isInternal`` names ``__consumer_offsets``, ``__transaction_state`` and
``__share_group_state``; ``__cluster_metadata`` is the KRaft metadata log and never a topic.

- CreateTopics ``__cluster_metadata``: INVALID_REQUEST "Creation of internal topic __cluster_metadata is
  prohibited." (ControllerApis.createTopics); it is in no topic catalog, so every other operation on it
  answers UNKNOWN_TOPIC_OR_PARTITION, and Metadata with auto-creation never brings it into being.
- Produce to an existing internal topic: INVALID_TOPIC_EXCEPTION (ReplicaManager.appendToLocalLog, "Cannot append
  to internal topic"); DeleteRecords on one: INVALID_TOPIC_EXCEPTION (ReplicaManager.deleteRecords); both
  UNKNOWN_TOPIC_OR_PARTITION while it does not exist (KafkaApis checks the metadata cache first).
- Config changes on an existing internal topic are allowed (Kafka validates the values as for any topic).
- kafkalite's stricter rules, documented in the handlers: creating an internal topic is the broker's job
  (INVALID_REQUEST while absent, TOPIC_ALREADY_EXISTS once present), and its partition count and existence
  are the broker's (CreatePartitions INVALID_REQUEST, DeleteTopics TOPIC_AUTHORIZATION_FAILED), because a
  group's or transactional id's partition is ``hash(id) % count``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage import LogConfig, LogManager
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode as E
from kafkalite_wire.messages import (
    AlterConfigsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    ProduceRequest,
)

INTERNAL = ("__consumer_offsets", "__transaction_state", "__share_group_state")
METADATA = "__cluster_metadata"
TOPIC = 2   # config resource type


def _create(c: RawClient, name: str, validate_only: bool = False) -> tuple[int, str | None]:
    r = c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1)], timeout_ms=5000, validate_only=validate_only), 7)
    return r.topics[0].error_code, r.topics[0].error_message


def _create_validate_only(c: RawClient, name: str) -> tuple[int, str | None]:
    return _create(c, name, True)


def _delete(c: RawClient, name: str) -> tuple[int, str | None]:
    r = c.request(DeleteTopicsRequest(topic_names=[name], timeout_ms=5000), 5)
    return r.responses[0].error_code, r.responses[0].error_message


def _produce(c: RawClient, name: str) -> tuple[int, str | None]:
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=name, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=encode_batch([b"x"]))])])
    p = c.request(req, 9).responses[0].partition_responses[0]
    return p.error_code, p.error_message


def _create_partitions(c: RawClient, name: str) -> tuple[int, str | None]:
    r = c.request(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name=name, count=3, assignments=None)], timeout_ms=5000, validate_only=False), 3)
    return r.results[0].error_code, r.results[0].error_message


def _alter_configs(c: RawClient, name: str) -> tuple[int, str | None]:
    # validate_only: a legacy AlterConfigs replaces every override (cleanup.policy=compact included)
    r = c.request(AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
        resource_type=TOPIC, resource_name=name, configs=[AlterConfigsRequest.AlterableConfig(
            name="retention.ms", value="86400000")])], validate_only=True), 2)
    return r.responses[0].error_code, r.responses[0].error_message


def _incremental_alter_configs(c: RawClient, name: str) -> tuple[int, str | None]:
    R = IncrementalAlterConfigsRequest
    r = c.request(R(resources=[R.AlterConfigsResource(resource_type=TOPIC, resource_name=name, configs=[
        R.AlterableConfig(name="retention.ms", config_operation=0, value="86400000")])], validate_only=False), 1)
    return r.responses[0].error_code, r.responses[0].error_message


def _describe_configs(c: RawClient, name: str) -> tuple[int, str | None]:
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=TOPIC, resource_name=name, configuration_keys=None)]), 4)
    return r.results[0].error_code, r.results[0].error_message


def _delete_records(c: RawClient, name: str) -> tuple[int, str | None]:
    r = c.request(DeleteRecordsRequest(topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=name, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(partition_index=0, offset=-1)])],
        timeout_ms=5000), 2)
    return r.topics[0].partitions[0].error_code, None


def _metadata_auto_create(c: RawClient, name: str) -> tuple[int, str | None]:
    r = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                  allow_auto_topic_creation=True), 9)
    t = r.topics[0]
    return t.error_code, "internal" if t.is_internal else None


OPS: dict[str, Callable[[RawClient, str], tuple[int, str | None]]] = {
    "create": _create, "create-validate-only": _create_validate_only, "delete": _delete, "produce": _produce,
    "create-partitions": _create_partitions, "alter-configs": _alter_configs,
    "incremental-alter-configs": _incremental_alter_configs, "describe-configs": _describe_configs,
    "delete-records": _delete_records, "metadata-auto-create": _metadata_auto_create,
}

UNKNOWN = E.UNKNOWN_TOPIC_OR_PARTITION
#: (name, present) -> op -> (error code, a fragment of the message or None)
EXPECTED: dict[tuple[str, bool], dict[str, tuple[int, str | None]]] = {
    (METADATA, False): {
        "create": (E.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
        "create-validate-only": (E.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited."),
        "delete": (UNKNOWN, None), "produce": (UNKNOWN, None), "create-partitions": (UNKNOWN, None),
        "alter-configs": (UNKNOWN, None), "incremental-alter-configs": (UNKNOWN, None),
        "describe-configs": (UNKNOWN, None), "delete-records": (UNKNOWN, None),
        "metadata-auto-create": (UNKNOWN, None),
    },
    **{(name, False): {
        "create": (E.INVALID_REQUEST, "prohibited"), "create-validate-only": (E.INVALID_REQUEST, "prohibited"),
        "delete": (UNKNOWN, None), "produce": (UNKNOWN, None), "create-partitions": (UNKNOWN, None),
        "alter-configs": (UNKNOWN, None), "incremental-alter-configs": (UNKNOWN, None),
        "describe-configs": (UNKNOWN, None), "delete-records": (UNKNOWN, None),
        "metadata-auto-create": (UNKNOWN, None),
    } for name in INTERNAL},
    **{(name, True): {
        "create": (E.TOPIC_ALREADY_EXISTS, None), "create-validate-only": (E.TOPIC_ALREADY_EXISTS, None),
        "delete": (E.TOPIC_AUTHORIZATION_FAILED, None),
        "produce": (E.INVALID_TOPIC_EXCEPTION, f"internal topic {name}"),
        "create-partitions": (E.INVALID_REQUEST, None),
        "alter-configs": (E.NONE, None), "incremental-alter-configs": (E.NONE, None),
        "describe-configs": (E.NONE, None), "delete-records": (E.INVALID_TOPIC_EXCEPTION, None),
        "metadata-auto-create": (E.NONE, "internal"),
    } for name in INTERNAL},
}
CASES = [(present, name, op) for (name, present), ops in EXPECTED.items() for op in ops]


def _make_internal_topics(data: Path) -> None:
    """Give the data dir all three internal topics (1 partition each), as the coordinators would have."""
    with Broker(data_dir=data):
        pass   # writes meta.properties
    lm = LogManager.open(str(data), LogConfig(), node_id=1)
    try:
        for name in INTERNAL:
            lm.create_log(name, 0, config=LogConfig.from_props({"cleanup.policy": "compact"}))
    finally:
        lm.close()


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, bool]]:
    data = tmp_path_factory.mktemp("reserved") / "d"
    overrides = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}
    if request.param:
        _make_internal_topics(data)
    with Broker(data_dir=data, overrides=overrides) as b:
        yield b, request.param


@pytest.mark.parametrize(("broker", "name", "op"), CASES, indirect=["broker"],
                         ids=[f"{'present' if p else 'absent'}-{n}-{o}" for p, n, o in CASES])
def test_reserved_topic_names(broker: tuple[Any, bool], name: str, op: str) -> None:
    b, present = broker
    code, fragment = EXPECTED[(name, present)][op]
    with RawClient(b.host, b.port) as c:
        got_code, got_msg = OPS[op](c, name)
        assert E(got_code) == code, (name, op, got_msg)
        if fragment is not None:
            assert got_msg is not None and fragment in got_msg, got_msg
        # nothing an operation did made a reserved name appear, or changed an internal topic's shape
        meta = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                         allow_auto_topic_creation=False), 9).topics[0]
        if present:
            assert meta.error_code == 0 and meta.is_internal and len(meta.partitions) == 1
        else:
            assert meta.error_code == UNKNOWN
