"""The share group dead-letter queue (KIP-1191, share.version 2) through confluent-kafka 2.16.1: a ShareConsumer
with explicit acknowledgement rejects one record and releases another until share.delivery.count.limit; a plain
Consumer then reads the DLQ topic and finds one record for each, with Kafka 4.4's context headers and, as the group
sets errors.deadletterqueue.copy.record.enable, the source key and value. Run against Kafka 4.4
(KAFKALITE_COMPAT_BROKER=kafka) it is the reference for the header names, their order and values.

The DLQ topic is created beforehand with errors.deadletterqueue.group.enable=true and a name under the broker's
errors.deadletterqueue.topic.name.prefix ("dlq."); the group's configs are set with IncrementalAlterConfigs."""
from __future__ import annotations

import time

import pytest
from harness.topics import create_topic
from test_share_groups import consumer, messages, set_group_config

from kafkalite.tests.support.requires import require

require("confluent_kafka")
import confluent_kafka as ck  # noqa: E402

LIMIT = 2


def _dlq_records(bootstrap: str, topic: str, n: int, timeout: float = 60.0) -> list:  # type: ignore[type-arg]
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise AssertionError(m.error())
            out.append(m)
        return out
    finally:
        c.close()


@pytest.mark.timeout(240)
def test_rejected_and_exhausted_records_reach_the_dlq_with_headers_confluent_kafka(broker, topic):
    bs = broker.bootstrap
    group = f"{topic}-g"
    dlq = f"dlq.{topic}"
    create_topic(bs, topic, 1)
    create_topic(bs, dlq, 1, config={"errors.deadletterqueue.group.enable": "true"})
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(3):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")])
    assert p.flush(30) == 0
    set_group_config(bs, group, "share.delivery.count.limit", str(LIMIT))
    set_group_config(bs, group, "errors.deadletterqueue.copy.record.enable", "true")
    set_group_config(bs, group, "errors.deadletterqueue.topic.name", dlq)
    c = consumer(bs, group, topic, explicit=True)
    deliveries: dict[int, list[int]] = {}
    try:
        quiet_since = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            batch = messages(c, 0.5)
            if not batch:
                if not deliveries:   # still joining (Kafka: the first assignment comes with a heartbeat)
                    continue
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 3:
                    break
                continue
            quiet_since = None
            for m in batch:
                deliveries.setdefault(m.offset(), []).append(m.delivery_count())
                kind = {0: ck.AcknowledgeType.REJECT, 1: ck.AcknowledgeType.RELEASE}.get(m.offset(),
                                                                                       ck.AcknowledgeType.ACCEPT)
                c.acknowledge(m, kind)
            c.commit_sync(30)
    finally:
        c.close()
    assert deliveries == {0: [1], 1: list(range(1, LIMIT + 1)), 2: [1]}
    got = _dlq_records(bs, dlq, 2)
    assert [(m.partition(), m.key(), m.value()) for m in got] == [(0, b"k0", b"v0"), (0, b"k1", b"v1")]
    assert [m.headers() for m in got] == [
        [("__dlq.errors.topic", topic.encode()), ("__dlq.errors.partition", b"0"), ("__dlq.errors.offset", b"0"),
         ("__dlq.errors.group", group.encode()), ("__dlq.errors.delivery.count", b"1"),
         ("__dlq.errors.message", b"Offset rejected by client.")],
        [("__dlq.errors.topic", topic.encode()), ("__dlq.errors.partition", b"0"), ("__dlq.errors.offset", b"1"),
         ("__dlq.errors.group", group.encode()), ("__dlq.errors.delivery.count", str(LIMIT).encode()),
         ("__dlq.errors.message", b"Offset delivery count exceeded the threshold.")]]


def _set_broker_config(bootstrap: str, name: str, value: str | None) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    admin = AdminClient({"bootstrap.servers": bootstrap})
    node = next(iter(admin.list_topics(timeout=30).brokers))   # librdkafka names a broker (one node here)
    res = ConfigResource(ResourceType.BROKER, str(node), incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op)])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(30)


def _topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    res = ConfigResource(ResourceType.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return {k: e.value for k, e in admin.describe_configs([res])[res].result(30).items()}


@pytest.mark.timeout(240)
def test_missing_dlq_topic_auto_created_and_headers_only_confluent_kafka(broker, topic):
    """With errors.deadletterqueue.auto.create.topics.enable (a dynamic broker config) the broker
    creates the missing DLQ topic (errors.deadletterqueue.group.enable=true, message.timestamp.type=CreateTime);
    without copy.record.enable the DLQ record has the headers and neither key nor value."""
    bs = broker.bootstrap
    group = f"{topic}-g"
    dlq = f"dlq.{topic}"
    create_topic(bs, topic, 1)
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    p.produce(topic, key=b"k", value=b"v")
    assert p.flush(30) == 0
    set_group_config(bs, group, "errors.deadletterqueue.topic.name", dlq)
    _set_broker_config(bs, "errors.deadletterqueue.auto.create.topics.enable", "true")
    try:
        c = consumer(bs, group, topic, explicit=True)
        try:
            deadline = time.monotonic() + 60
            done = False
            while not done and time.monotonic() < deadline:
                for m in messages(c, 0.5):
                    c.acknowledge(m, ck.AcknowledgeType.REJECT)
                    done = True
            c.commit_sync(30)
        finally:
            c.close()
        assert done
        got = _dlq_records(bs, dlq, 1)
        assert [(m.key(), m.value()) for m in got] == [(None, None)]
        assert dict(got[0].headers())["__dlq.errors.message"] == b"Offset rejected by client."
        cfg = _topic_configs(bs, dlq)
        assert (cfg["errors.deadletterqueue.group.enable"], cfg["message.timestamp.type"]) == ("true", "CreateTime")
    finally:
        _set_broker_config(bs, "errors.deadletterqueue.auto.create.topics.enable", None)
