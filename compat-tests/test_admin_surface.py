"""The rest of Kafka's admin surface (#15) through the admin clients' own calls, as a one-node Kafka 3.9
answers it: CreatePartitions with explicit assignments, ElectLeaders, partition reassignments,
AlterReplicaLogDirs, DescribeProducers, DescribeQuorum, finalized features, broker configs.

kafka-python 3.0.12, confluent-kafka 2.x and Java kafka-clients 3.9.1 (compat-tests/java/AdminOps.java);
an API a client has no call for is driven by the clients that have one."""
from __future__ import annotations

import uuid
from typing import Any

import pytest
from harness.topics import create_topic


def _java(get_client: Any) -> Any:
    return get_client("java")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# -- CreatePartitions with explicit assignments -------------------------------------------------------------
NO_BROKER_7 = "The manual partition assignment includes broker 7, but no such broker is registered."
COUNT_MISMATCH = "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."


def test_create_partitions_assignments_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions

    bs = broker.bootstrap
    topic = _name("cpa-kp")
    create_topic(bs, topic, 1)
    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        r = a.create_partitions({topic: NewPartitions(2, [[1]])}, raise_errors=False)
        assert [(t.name, t.error_code) for t in r.results] == [(topic, 0)]
        r = a.create_partitions({topic: NewPartitions(3, [[7]])}, raise_errors=False)
        assert [(t.error_code, t.error_message) for t in r.results] == [(39, NO_BROKER_7)]
    finally:
        a.close()
    assert get_partitions(bs, topic) == 2


def get_partitions(bs: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bs}).list_topics(topic, timeout=20)
    return len(md.topics[topic].partitions)


def test_create_partitions_assignments_confluent(broker) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions

    bs = broker.bootstrap
    topic = _name("cpa-ck")
    create_topic(bs, topic, 1)
    a = AdminClient({"bootstrap.servers": bs})
    a.create_partitions([NewPartitions(topic, 2, replica_assignment=[[1]])])[topic].result(30)
    for total, assign, msg in ((3, [[7]], NO_BROKER_7), (4, [[1]], COUNT_MISMATCH)):
        with pytest.raises(KafkaException) as ei:
            a.create_partitions([NewPartitions(topic, total, replica_assignment=assign)])[topic].result(30)
        err = ei.value.args[0]
        assert (err.name(), err.str()) == ("INVALID_REPLICA_ASSIGNMENT", msg)
    assert get_partitions(bs, topic) == 2


def test_create_partitions_assignments_java(broker, get_client) -> None:
    bs = broker.bootstrap
    topic = _name("cpa-j")
    create_topic(bs, topic, 1)
    j = _java(get_client)
    assert j.admin(bs, "create_partitions", topic=topic, total=3, assignments=[[1], [1]])["error"] is None
    assert j.admin(bs, "create_partitions", topic=topic, total=4, assignments=[[1, 1]])["error"] == (
        "InvalidReplicaAssignmentException: The manual partition assignment includes the broker 1 more than once.")
    assert j.admin(bs, "create_partitions", topic=topic, total=4, assignments=[[]])["error"] == (
        "InvalidReplicaAssignmentException: The manual partition assignment includes an empty replica list.")
    assert j.admin(bs, "create_partitions", topic=topic, total=5, assignments=[[1]])["error"] == (
        "InvalidReplicaAssignmentException: " + COUNT_MISMATCH)
    assert j.admin(bs, "create_partitions", topic=topic, total=3)["error"] == (
        "InvalidPartitionsException: Topic already has 3 partition(s).")
    assert get_partitions(bs, topic) == 3


# -- finalized features (ApiVersions v3+) ------------------------------------------------------------------
def test_describe_features_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        f = a.describe_features()
    finally:
        a.close()
    assert f == {"metadata.version": {"supported": (1, 21), "finalized": (21, 21), "finalized_epoch": 0},
                 "kraft.version": {"supported": (0, 1), "finalized": (1, 1), "finalized_epoch": 0}}


def test_describe_features_java(broker, get_client) -> None:
    r = _java(get_client).admin(broker.bootstrap, "describe_features")
    assert r["finalized"] == {"metadata.version": [21, 21], "kraft.version": [1, 1]}
    assert r["supported"] == {"metadata.version": [1, 21], "kraft.version": [0, 1]}
    assert r["epoch"] == 0
