"""Issue #4's must-shows: 100,000 keyed records with headers into a 3-partition topic, acks=all, idempotence
on, once per compression codec, read back through assigned partitions: exact order per partition, keys,
values, headers and timestamps.

- kafka-python and confluent-kafka: every codec.
- Java KafkaProducer with its defaults (acks=all, enable.idempotence=true, no compression) and a
  KafkaConsumer with assign/seek.
"""

from __future__ import annotations

import pytest
from harness.clients import CODECS
from harness.records import KEEP_OLD_TIMESTAMPS, TS_BASE, Rec, assert_same_records
from harness.topics import create_topic

N = 100_000
PARTS = 3


def _records(tag: str) -> list[Rec]:
    """Keyed records with three headers each (one binary), explicit timestamps, round-robin partitions."""
    out = []
    for i in range(N):
        hdrs = (("seq", str(i).encode()), ("src", tag.encode()), ("bin", i.to_bytes(4, "big")))
        out.append(Rec(f"key-{i % 1000}".encode(), f"{tag}-value-{i}".encode() * (1 + i % 3), hdrs,
                       TS_BASE + i, i % PARTS))
    return out


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client_name", ["kafka-python", "confluent-kafka"])
def test_100k_keyed_records(broker, client, topic, codec):
    create_topic(broker.bootstrap, topic, PARTS, KEEP_OLD_TIMESTAMPS)   # 2023 stamps: retention would take them
    sent = _records(f"{client.name}-{codec}")
    acked = client.produce(broker.bootstrap, topic, sent, compression=codec, idempotent=True, acks="all",
                           timeout_s=120)
    assert len(acked) == N
    got = client.consume(broker.bootstrap, topic, list(range(PARTS)), N, timeout_s=120)
    assert_same_records(sent, got, what=f"{client.name} {codec} 100k")
    assert sorted(acked) == sorted((r.partition, r.offset) for r in got)


@pytest.mark.parametrize("client_name", ["java"])
def test_100k_java_defaults(broker, client, topic):
    """KafkaProducer defaults (idempotence on) and KafkaConsumer assign + seek(0)."""
    create_topic(broker.bootstrap, topic, PARTS, KEEP_OLD_TIMESTAMPS)   # 2023 stamps: retention would take them
    sent = _records("java")
    acked = client.produce(broker.bootstrap, topic, sent, compression=None, idempotent=None, acks=None,
                           timeout_s=120)
    assert len(acked) == N
    got = client.consume(broker.bootstrap, topic, list(range(PARTS)), N, start=0, timeout_s=120)
    assert_same_records(sent, got, what="java defaults 100k")
    assert sorted(acked) == sorted((r.partition, r.offset) for r in got)
