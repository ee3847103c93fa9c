"""Real clients (confluent-kafka, kafka-python) produce to and consume from an embedded kafkalite.Broker.

The large client matrix lives in compat-tests/; this is the broker's own smoke test.
"""
from __future__ import annotations

import time

import pytest

from kafkalite.embedded import Broker


@pytest.mark.requires("confluent_kafka")
def test_confluent_kafka_produce_consume_idempotent(broker: Broker) -> None:
    import confluent_kafka as ck
    topic = "ck-smoke"
    p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                     "linger.ms": 5})
    for i in range(200):
        p.produce(topic, key=str(i % 7).encode(), value=f"value-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ck-smoke-nogroup",
                     "enable.auto.commit": False})
    c.assign([ck.TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 200 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(m.value())
    c.close()
    assert got == [f"value-{i}".encode() for i in range(200)]


@pytest.mark.requires("kafka")
def test_kafka_python_produce_consume(broker: Broker) -> None:
    import kafka
    topic = "kp-smoke"
    p = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap_servers, compression_type="gzip")
    for i in range(100):
        p.send(topic, value=f"m{i}".encode(), partition=0)
    p.flush(30)
    p.close()
    tp = kafka.TopicPartition(topic, 0)
    c = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                            consumer_timeout_ms=5000)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [m.value for m in c]
    c.close()
    assert got == [f"m{i}".encode() for i in range(100)]


@pytest.mark.requires("confluent_kafka")
def test_confluent_admin_create_describe_delete(broker: Broker) -> None:
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    fs = admin.create_topics([NewTopic("adm-1", num_partitions=3, replication_factor=1,
                                       config={"retention.ms": "12345"})])
    fs["adm-1"].result(30)
    with pytest.raises(ck.KafkaException) as exc:
        admin.create_topics([NewTopic("adm-1", num_partitions=1)])["adm-1"].result(30)
    assert exc.value.args[0].code() == ck.KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(ck.KafkaException) as exc:
        admin.create_topics([NewTopic("adm-rf", num_partitions=1, replication_factor=3)])["adm-rf"].result(30)
    assert exc.value.args[0].code() == ck.KafkaError.INVALID_REPLICATION_FACTOR
    md = admin.list_topics(timeout=30)
    assert len(md.topics["adm-1"].partitions) == 3
    res = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "adm-1")])
    cfg = next(iter(res.values())).result(30)
    assert cfg["retention.ms"].value == "12345" and not cfg["retention.ms"].is_default
    admin.create_partitions([NewPartitions("adm-1", 5)])["adm-1"].result(30)
    assert len(admin.list_topics(timeout=30).topics["adm-1"].partitions) == 5
    admin.delete_topics(["adm-1"])["adm-1"].result(30)
    assert "adm-1" not in admin.list_topics(timeout=30).topics
