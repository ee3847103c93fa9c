"""Each client against the broker on its own: produce then consume (assigned partitions) with keys, headers,
null keys and values and explicit timestamps; every compression codec; the idempotent producer; records near
max.message.bytes; a topic with 100+ partitions."""

from __future__ import annotations

import re
import time

import pytest
from harness.clients import CODECS, FEATURES, clients_with
from harness.records import KEEP_OLD_TIMESTAMPS, Rec, assert_same_records, records_for
from harness.topics import create_topic


@pytest.mark.parametrize("client_name", clients_with("produce", "consume"))
def test_roundtrip(broker, client, topic):
    """Keys, per-record headers (duplicates, null values), null keys, tombstones, explicit timestamps over
    three partitions; offsets reported by the producer match what the consumer sees."""
    create_topic(broker.bootstrap, topic, 3, KEEP_OLD_TIMESTAMPS)
    sent = records_for(client.features, 60, partitions=3, prefix=client.name)
    acked = client.produce(broker.bootstrap, topic, sent)
    got = client.consume(broker.bootstrap, topic, [0, 1, 2], len(sent), timeout_s=30)
    assert_same_records(sent, got, what=f"{client.name} roundtrip")
    if acked:
        assert sorted(acked) == sorted((r.partition, r.offset) for r in got)


@pytest.mark.parametrize(("client_name", "codec"), [
    (c, codec) for c in clients_with("produce", "consume") for codec in CODECS if f"codec:{codec}" in FEATURES[c]])
def test_compression(broker, client, topic, codec, get_client):
    """Each codec the client can produce, read back by the same client and by confluent-kafka."""
    create_topic(broker.bootstrap, topic, 1, KEEP_OLD_TIMESTAMPS)
    sent = records_for(client.features, 200, prefix=f"{client.name}-{codec}")
    client.produce(broker.bootstrap, topic, sent, compression=codec)
    assert_same_records(sent, client.consume(broker.bootstrap, topic, [0], len(sent), timeout_s=30),
                        what=f"{client.name} {codec} read back by itself")
    if client.name != "confluent-kafka":
        other = get_client("confluent-kafka")
        assert_same_records(sent, other.consume(broker.bootstrap, topic, [0], len(sent), timeout_s=30),
                            what=f"{client.name} {codec} read by confluent-kafka")


@pytest.mark.parametrize("client_name", clients_with("produce", "consume", "idempotent"))
def test_idempotent_producer(broker, client, topic):
    """enable.idempotence=true (InitProducerId + sequenced Produce): no duplicates, order kept."""
    create_topic(broker.bootstrap, topic, 2, KEEP_OLD_TIMESTAMPS)
    sent = records_for(client.features, 300, partitions=2, prefix=f"{client.name}-idem")
    client.produce(broker.bootstrap, topic, sent, idempotent=True)
    got = client.consume(broker.bootstrap, topic, [0, 1], len(sent), timeout_s=30)
    assert_same_records(sent, got, what=f"{client.name} idempotent")


@pytest.mark.parametrize("limit", [200_000, None], ids=["topic-200000", "broker-default"])
@pytest.mark.parametrize("client_name", clients_with("produce", "consume"))
def test_near_max_message_bytes(broker, client, topic, limit):
    """Records just under the limit are accepted and read back whole: a topic with max.message.bytes=200000
    (190 kB records), and the broker default message.max.bytes=1048588 (1,000,000-byte records)."""
    create_topic(broker.bootstrap, topic, 1, {"max.message.bytes": str(limit)} if limit else None)
    size = limit - 10_000 if limit else 1_000_000
    recs = [Rec(b"big", bytes([65 + i]) * size, (("n", str(i).encode()),) if "headers" in client.features
                else (), partition=0) for i in range(2)]
    if "fixed_headers" in client.features:
        recs = [Rec(r.key, r.value, (("n", b"0"),), partition=0) for r in recs]
    for r in recs:  # one call per record: a batch of several would exceed the limit (as on Kafka)
        client.produce(broker.bootstrap, topic, [r], max_request_bytes=1_100_000)
    got = client.consume(broker.bootstrap, topic, [0], len(recs), timeout_s=30, max_fetch_bytes=1_100_000)
    assert_same_records(recs, got, check_ts=False, what=f"{client.name} near max.message.bytes")


@pytest.mark.parametrize("client_name", ["kafka-python", "confluent-kafka", "aiokafka", "java", "kafkajs"])
def test_record_over_max_message_bytes_rejected(broker, client, topic):
    """A record batch larger than the topic's max.message.bytes is refused (MESSAGE_TOO_LARGE)."""
    create_topic(broker.bootstrap, topic, 1, {"max.message.bytes": "20000"})
    with pytest.raises(Exception) as ei:
        client.produce(broker.bootstrap, topic, [Rec(b"k", b"x" * 60_000, partition=0)],
                       max_request_bytes=1_000_000, timeout_s=15)
    said = re.sub(r"[\s_]", "", str(ei.value).lower())
    assert "toolarge" in said or "largerthanthemaxmessagesize" in said, str(ei.value)  # kafkajs wording


@pytest.mark.parametrize("client_name", clients_with("produce", "consume", "metadata"))
def test_many_partitions(broker, client, topic):
    """A 128-partition topic: metadata lists all of them; one record per partition round-trips."""
    n = 128
    create_topic(broker.bootstrap, topic, n)
    assert client.metadata(broker.bootstrap, [topic])["topics"][topic] == n
    sent = [Rec(f"k{p}".encode(), f"v{p}".encode(), partition=p) for p in range(n)]
    client.produce(broker.bootstrap, topic, sent)
    got = client.consume(broker.bootstrap, topic, list(range(n)), n, timeout_s=60)
    assert_same_records(sent, got, check_ts=False, what=f"{client.name} 128 partitions")


@pytest.mark.parametrize("client_name", clients_with("produce", "consume"))
def test_consume_from_middle_offset(broker, client, topic, get_client):
    """Seek into the middle of a batch: the broker returns the whole batch and the client drops the records
    before the requested offset, so the first record delivered is exactly the one asked for."""
    create_topic(broker.bootstrap, topic, 1, KEEP_OLD_TIMESTAMPS)
    feats = get_client("confluent-kafka").features
    if "map_headers" in client.features:   # rskafka cannot read duplicate header names or null header values
        feats = (feats - {"headers", "null_header"}) | {"fixed_headers"}
    sent = records_for(feats, 100, prefix="mid")
    get_client("confluent-kafka").produce(broker.bootstrap, topic, sent, compression="gzip")  # few big batches
    got = client.consume(broker.bootstrap, topic, [0], 63, start=37, timeout_s=30)
    assert got and got[0].offset == 37, [r.offset for r in got[:5]]
    assert_same_records(sent[37:], got, what=f"{client.name} from offset 37")


@pytest.mark.parametrize("client_name", clients_with("produce", "consume", "timestamps", "log_append_time"))
def test_log_append_time(broker, client, topic):
    """A topic with message.timestamp.type=LogAppendTime: consumers see the broker's append time, not the
    producer's explicit timestamps."""
    create_topic(broker.bootstrap, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000) - 1000
    sent = records_for(client.features, 10, prefix="lat")
    client.produce(broker.bootstrap, topic, sent)
    after = int(time.time() * 1000) + 1000
    got = client.consume(broker.bootstrap, topic, [0], len(sent), timeout_s=30)
    assert_same_records(sent, got, check_ts=False, what=f"{client.name} LogAppendTime")
    assert all(before <= r.timestamp <= after for r in got), [r.timestamp for r in got]
