"""Consumer groups with every client against a broker emulating Kafka 2.8, whose group APIs stop at
OffsetCommit v8, OffsetFetch v7 (one group per request), FindCoordinator v3 (no batched keys),
JoinGroup v7, Heartbeat/LeaveGroup v4, SyncGroup v5, DescribeGroups v5, ListGroups v4."""
from __future__ import annotations

import uuid

import pytest
from harness.topics import create_topic
from test_groups_support import ALL_CLIENTS, committed, group_consume, produce

KAFKALITE_ONLY = "--emulate-kafka 2.8: kafkalite imitating an older release's API versions"

KAFKALITE_EMULATE = "2.8"


@pytest.mark.parametrize("client_name", ALL_CLIENTS)
def test_group_resume_on_kafka_2_8_versions(client_name: str, broker, topic: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, f"e{i}".encode()) for i in range(8)])
    group = f"em-{uuid.uuid4().hex[:8]}"
    first = group_consume(client_name, bs, topic, group, 8)
    assert sorted(first.values) == sorted(f"e{i}".encode() for i in range(8))
    assert committed(bs, group, topic, 2) == {0: 4, 1: 4}
    produce(bs, topic, [(i % 2, f"e{i}".encode()) for i in range(8, 10)])
    again = group_consume(client_name, bs, topic, group, 2)
    assert sorted(again.values) == [b"e8", b"e9"]
