"""One Produce whose batch carries producer id 2^63-1 must not break idempotent or transactional producers:
not right after it, not after a restart, not after a restart that lost the producer-id files (issue 29).

The batch goes in through a raw Produce (Kafka accepts it: an id it never handed out is a producer it has no
state for); then real clients -- confluent-kafka and kafka-python, idempotent and transactional -- produce
and read back their records."""

from __future__ import annotations

import time
import uuid

import pytest
from harness.topics import create_topic

from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import ProduceRequest

TOP = 2**63 - 1


def _raw_produce(bootstrap: str, topic: str, seq: int) -> int:
    host, port = bootstrap.rsplit(":", 1)
    batch = encode_batch([b"evil"], producer_id=TOP, producer_epoch=0, base_sequence=seq)
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    deadline = time.monotonic() + 30
    while True:
        with RawClient(host, int(port)) as c:
            code = int(c.request(req, 9).responses[0].partition_responses[0].error_code)
        # NOT_LEADER_OR_FOLLOWER / LEADER_NOT_AVAILABLE: right after a restart Kafka answers these until the
        # partition has its leader again; a client asks again
        if code not in (5, 6) or time.monotonic() > deadline:
            return code
        time.sleep(0.2)


def _confluent(bs: str, topic: str, tag: str) -> list[bytes]:
    from confluent_kafka import Producer

    sent = [f"{tag}-ck-idem-{i}".encode() for i in range(20)]
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "message.timeout.ms": 15000})
    errors: list[object] = []
    for v in sent:
        p.produce(topic, v, partition=0, on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(20) == 0 and not errors, errors
    t = Producer({"bootstrap.servers": bs, "transactional.id": f"ck-{tag}-{uuid.uuid4().hex[:6]}",
                  "transaction.timeout.ms": 15000, "message.timeout.ms": 15000})
    t.init_transactions(20)
    t.begin_transaction()
    txn = [f"{tag}-ck-txn-{i}".encode() for i in range(5)]
    for v in txn:
        t.produce(topic, v, partition=0)
    t.commit_transaction(20)
    return sent + txn


def _kafka_python(bs: str, topic: str, tag: str) -> list[bytes]:
    import kafka

    p = kafka.KafkaProducer(bootstrap_servers=bs, enable_idempotence=True, acks="all", max_block_ms=15000)
    sent = [f"{tag}-kp-idem-{i}".encode() for i in range(20)]
    futures = [p.send(topic, v, partition=0) for v in sent]
    for f in futures:
        f.get(timeout=20)
    p.close(10)
    t = kafka.KafkaProducer(bootstrap_servers=bs, transactional_id=f"kp-{tag}-{uuid.uuid4().hex[:6]}",
                            max_block_ms=15000)
    t.init_transactions()
    t.begin_transaction()
    txn = [f"{tag}-kp-txn-{i}".encode() for i in range(5)]
    for v in txn:
        t.send(topic, v, partition=0)
    t.commit_transaction()
    t.close(10)
    return sent + txn


def _read_committed(bs: str, topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[bytes] = []
    try:
        idle = 0
        while idle < 6:
            msgs = c.consume(500, 1.0)
            idle = 0 if msgs else idle + 1
            out += [m.value() for m in msgs if m.error() is None]
    finally:
        c.close()
    return out


@pytest.mark.parametrize("lose_files", [False, True], ids=["restart", "restart-without-id-files"])
def test_producer_id_2_63_minus_1_in_a_batch_breaks_no_producer(broker_factory, lose_files: bool) -> None:
    pytest.importorskip("confluent_kafka")
    pytest.importorskip("kafka")
    broker = broker_factory()
    topic = "pid-poison"
    create_topic(broker.bootstrap, topic, 1)
    assert _raw_produce(broker.bootstrap, topic, 0) == 0
    expected = _confluent(broker.bootstrap, topic, "before") + _kafka_python(broker.bootstrap, topic, "before")
    broker.stop()
    if lose_files:
        for name in ("kafkalite-producer-ids", "kafkalite-producer-ids.copy"):
            (broker.data_dir / name).unlink(missing_ok=True)
    broker.start()
    assert _raw_produce(broker.bootstrap, topic, 1) == 0
    expected += _confluent(broker.bootstrap, topic, "after") + _kafka_python(broker.bootstrap, topic, "after")
    got = _read_committed(broker.bootstrap, topic)
    assert [v for v in got if v != b"evil"] == expected
    assert got.count(b"evil") == 2
