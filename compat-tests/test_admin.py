"""Metadata, admin (create / describe config / alter config / delete topic) and ListOffsets, per client."""

from __future__ import annotations

import time

import pytest
from harness.clients import clients_with
from harness.records import KEEP_OLD_TIMESTAMPS, TS_BASE, Rec
from harness.topics import create_topic


@pytest.mark.parametrize("client_name", clients_with("metadata"))
def test_metadata(broker, client, topic):
    """One broker, advertised at the address the client bootstrapped from; the topic and its partitions."""
    create_topic(broker.bootstrap, topic, 4)
    md = client.metadata(broker.bootstrap, [topic])
    host, port = broker.bootstrap.rsplit(":", 1)
    assert [(h, int(p)) for _, h, p in md["brokers"]] == [(host, int(port))]
    assert md["topics"][topic] == 4


def _wait(pred, what: str, timeout: float = 60.0) -> None:   # bounds a hang only
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.mark.parametrize("client_name", clients_with("admin", "configs", "metadata"))
def test_topic_lifecycle(broker, client, topic):
    """create (with a config) -> describe configs -> alter a config -> describe again -> grow to 5
    partitions -> delete."""
    client.create_topic(broker.bootstrap, topic, 3, {"retention.ms": "3600000"})
    _wait(lambda: client.metadata(broker.bootstrap).get("topics", {}).get(topic) == 3, "topic in metadata")
    cfg = client.describe_config(broker.bootstrap, topic)
    assert cfg.get("retention.ms") == "3600000", cfg
    assert "cleanup.policy" in cfg and "max.message.bytes" in cfg, sorted(cfg)
    client.alter_config(broker.bootstrap, topic, {"retention.ms": "7200000", "cleanup.policy": "compact"})
    cfg = client.describe_config(broker.bootstrap, topic)
    assert cfg.get("retention.ms") == "7200000" and cfg.get("cleanup.policy") == "compact", cfg
    client.create_partitions(broker.bootstrap, topic, 5)
    _wait(lambda: client.metadata(broker.bootstrap, [topic])["topics"].get(topic) == 5, "5 partitions")
    client.delete_topic(broker.bootstrap, topic)
    _wait(lambda: topic not in client.metadata(broker.bootstrap)["topics"], "topic gone from metadata")


@pytest.mark.parametrize("client_name", clients_with("admin"))
def test_create_existing_topic_fails(broker, client, topic):
    create_topic(broker.bootstrap, topic, 1)
    with pytest.raises(Exception) as ei:
        client.create_topic(broker.bootstrap, topic, 1)
    assert "exist" in str(ei.value).lower() or "36" in str(ei.value), str(ei.value)


@pytest.fixture(scope="module")
def offsets_topic(broker, get_client):
    """20 records with timestamps TS_BASE, TS_BASE+1000, ... on partition 0 of a fresh topic."""
    name = "list-offsets-topic"
    create_topic(broker.bootstrap, name, 1, KEEP_OLD_TIMESTAMPS)   # read by every client of the module
    recs = [Rec(b"k", f"v{i}".encode(), (), TS_BASE + 1000 * i, 0) for i in range(20)]
    get_client("confluent-kafka").produce(broker.bootstrap, name, recs)
    return name


@pytest.mark.parametrize("client_name", clients_with("list_offsets", "offsets_by_time"))
def test_list_offsets(broker, client, offsets_topic):
    """earliest = 0, latest = 20 (last offset + 1), by timestamp: first offset whose timestamp >= the target;
    a target after every record gives -1 (kafka-python/aiokafka report None, mapped to -1; kafkajs's
    fetchTopicOffsetsByTimestamp and franz-go's kadm ListOffsetsAfterMilli replace -1 by the end offset
    themselves: ``offset_after_last_timestamp = "end"``)."""
    bs = broker.bootstrap
    assert client.list_offsets(bs, offsets_topic, 0, "earliest") == 0
    assert client.list_offsets(bs, offsets_topic, 0, "latest") == 20
    assert client.list_offsets(bs, offsets_topic, 0, TS_BASE) == 0
    assert client.list_offsets(bs, offsets_topic, 0, TS_BASE + 5000) == 5
    assert client.list_offsets(bs, offsets_topic, 0, TS_BASE + 5500) == 6
    none_found = 20 if getattr(client, "offset_after_last_timestamp", "-1") == "end" else -1
    assert client.list_offsets(bs, offsets_topic, 0, TS_BASE + 10**9) == none_found
