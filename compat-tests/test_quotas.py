"""Client quotas with real clients: the Java Admin sets them (alterClientQuotas, validateOnly too) and lists
them (describeClientQuotas); a confluent-kafka producer and consumer over their byte-rate quota are told to
back off (librdkafka's throttle callback sees the broker's throttle_time_ms) and still deliver and read
everything. The rate they are held to is measured by bench/bench_quotas.py."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.broker import BrokerProcess
from harness.topics import create_topic

from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true

N, SIZE, RATE = 300, 1000, 100_000   # 300 KB against 100 KB/s


@pytest.fixture(scope="module")
def quota_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base: Path = tmp_path_factory.mktemp("broker-quotas")
    b = BrokerProcess(base / "data", base / "broker.log", extra_args=["--override", "quota.window.num=2"])
    b.start()
    try:
        yield b
    finally:
        b.kill()


def test_java_admin_sets_and_lists_quotas(quota_broker: BrokerProcess, get_client) -> None:
    java = get_client("java")
    bs = quota_broker.bootstrap
    java.alter_client_quota(bs, {"user": "alice"}, {"request_percentage": 25}, validate_only=True)
    assert java.describe_client_quotas(bs) == {}
    java.alter_client_quota(bs, {"user": "alice"}, {"request_percentage": 25})
    java.alter_client_quota(bs, {"user": None, "client-id": "app"}, {"producer_byte_rate": 1024})
    assert java.describe_client_quotas(bs) == {"user=alice": {"request_percentage": 25.0},
                                               "client-id=app,user=null": {"producer_byte_rate": 1024.0}}
    java.alter_client_quota(bs, {"user": "alice"}, {"request_percentage": None})
    java.alter_client_quota(bs, {"user": None, "client-id": "app"}, {"producer_byte_rate": None})
    assert java.describe_client_quotas(bs) == {}


def test_throttled_producer_and_consumer_complete(quota_broker: BrokerProcess, get_client, topic: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    java = get_client("java")
    bs = quota_broker.bootstrap
    create_topic(bs, topic)
    java.alter_client_quota(bs, {"client-id": "slow-producer"}, {"producer_byte_rate": RATE})
    java.alter_client_quota(bs, {"client-id": "slow-consumer"}, {"consumer_byte_rate": RATE})
    throttles: list[int] = []
    p = Producer({"bootstrap.servers": bs, "client.id": "slow-producer", "linger.ms": 5, "batch.size": 16384,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    delivered: list[object] = []
    for i in range(N):
        p.produce(topic, b"%06d" % i + b"x" * (SIZE - 6), on_delivery=lambda err, m: delivered.append(err))
        p.poll(0)
    assert p.flush(60) == 0
    assert delivered == [None] * N
    p.poll(0)
    assert max(throttles, default=0) > 0, "the producer was never throttled"

    throttles.clear()
    c = Consumer({"bootstrap.servers": bs, "client.id": "slow-consumer", "group.id": "q",
                  "max.partition.fetch.bytes": 65536,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        for _ in range(600):
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value()[:6])
            if len(got) == N:
                break
        assert got == [b"%06d" % i for i in range(N)]
        c.poll(0.1)
        assert max(throttles, default=0) > 0, "the consumer was never throttled"
    finally:
        c.close()
