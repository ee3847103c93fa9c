"""A consumer that subscribes to a topic before it exists gets the records once the topic appears.

The consumer starts first (its Metadata requests come back with UNKNOWN_TOPIC_OR_PARTITION, or create the
topic when the client asks for auto-creation and the broker allows it, Kafka's default); then the topic is
created (an "already exists" from auto-creation is fine) and 20 records are produced. The consumer must see
all 20, in order. Metadata refresh intervals are shortened as a user would, so the test does not wait
5 minutes for the clients' default refresh.

kafkajs 2.2.4 subscribes again: its consumer.subscribe fetches metadata once and throws the
UNKNOWN_TOPIC_OR_PARTITION with which a KRaft broker (Kafka 4.4, and kafkalite like it) answers the Metadata
request that auto-creates the topic (Kafka's AutoTopicCreationManager answers so while its controller creates
it); subscribing again finds the topic once it exists, as a kafkajs application that retries would.

kcat is not in this list: kcat -G exits on the first "Subscribed topic not available" consumer error (it
does so against Apache Kafka too, whose Metadata answers UNKNOWN_TOPIC_OR_PARTITION to a consumer that does
not ask for auto-creation).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from harness.clients.base import ClientError
from harness.clients.confluent import ConfluentClient
from harness.records import Rec, assert_same_records

N = 20


def _create_and_produce(bootstrap: str, topic: str) -> list[Rec]:
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.error import KafkaError, KafkaException

    adm = AdminClient({"bootstrap.servers": bootstrap})
    try:
        adm.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    recs = [Rec(f"k{i}".encode(), f"early-{i}".encode(), partition=0) for i in range(N)]
    deadline = time.monotonic() + 30
    while True:  # the topic may take a moment to show up in the producer's metadata
        try:
            ConfluentClient().produce(bootstrap, topic, recs, timeout_s=20)
            return recs
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _kafka_python(bootstrap, topic, stop):
    from kafka import KafkaConsumer

    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"early-{topic}", auto_offset_reset="earliest",
                      metadata_max_age_ms=1000, enable_auto_commit=False)
    out = []
    try:
        while len(out) < N and not stop.is_set():
            for tp, msgs in c.poll(timeout_ms=300).items():
                out += [Rec(m.key, m.value, (), m.timestamp, tp.partition, m.offset) for m in msgs]
    finally:
        c.close()
    return out


def _confluent(bootstrap, topic, stop):
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"early-{topic}", "auto.offset.reset": "earliest",
                  "topic.metadata.refresh.interval.ms": 1000, "enable.auto.commit": False})
    c.subscribe([topic])
    out = []
    try:
        while len(out) < N and not stop.is_set():
            for m in c.consume(100, timeout=0.3):
                if m.error() is None:
                    out.append(Rec(m.key(), m.value(), (), m.timestamp()[1], m.partition(), m.offset()))
    finally:
        c.close()
    return out


def _aiokafka(bootstrap, topic, stop):
    async def go():
        from aiokafka import AIOKafkaConsumer

        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"early-{topic}",
                             auto_offset_reset="earliest", metadata_max_age_ms=1000, enable_auto_commit=False)
        await c.start()
        out = []
        try:
            while len(out) < N and not stop.is_set():
                for tp, msgs in (await c.getmany(timeout_ms=300)).items():
                    out += [Rec(m.key, m.value, (), m.timestamp, tp.partition, m.offset) for m in msgs]
        finally:
            await c.stop()
        return out
    return asyncio.run(go())


def _java(get_client):
    def run(bootstrap, topic, stop):
        return get_client("java").subscribe_consume(bootstrap, topic, N, f"early-{topic}", timeout_s=60)
    return run


def _kafkajs(get_client):
    def run(bootstrap, topic, stop):
        js = get_client("kafkajs")
        deadline = time.monotonic() + 60
        while True:
            try:
                return js.consume(bootstrap, topic, [0], N, timeout_s=60)
            except ClientError as e:   # its subscribe does not retry the auto-creating request's answer: again
                # (until the topic is there: Kafka's controller creates it a moment after that answer)
                if "does not host this topic-partition" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    return run


@pytest.mark.parametrize("client_name", ["kafka-python", "confluent-kafka", "aiokafka", "java", "kafkajs"])
def test_subscribe_before_topic_exists(broker, client, client_name, topic, get_client):
    fn = {"kafka-python": _kafka_python, "confluent-kafka": _confluent, "aiokafka": _aiokafka,
          "java": _java(get_client), "kafkajs": _kafkajs(get_client)}[client_name]
    stop = threading.Event()
    box: dict = {}

    def run():
        try:
            box["got"] = fn(broker.bootstrap, topic, stop)
        except BaseException as e:
            box["err"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    time.sleep(3)  # the consumer is up and has asked for the missing topic
    sent = _create_and_produce(broker.bootstrap, topic)
    t.join(60)
    stop.set()
    t.join(10)
    if "err" in box:
        raise box["err"]
    assert_same_records(sent, box.get("got", []), check_ts=False, what=f"{client_name} early subscriber")
