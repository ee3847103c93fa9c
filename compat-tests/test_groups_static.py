"""Static membership (group.instance.id, KIP-345) with Java kafka-clients and confluent-kafka.

A static member closes without leaving the group; restarted with the same instance id it takes its old
place: no rebalance (same generation), its old assignment, and it resumes at the committed offsets.
"""
from __future__ import annotations

import uuid

import pytest
from harness.topics import create_topic
from test_groups_support import admin, group_consume, produce


@pytest.mark.parametrize("client_name", ["java", "confluent-kafka"])
def test_static_member_restart_keeps_generation(client_name: str, broker, topic: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, f"s{i}".encode()) for i in range(10)])
    group = f"st-{uuid.uuid4().hex[:8]}"
    first = group_consume(client_name, bs, topic, group, 10, instance_id="inst-a")
    assert len(first.records) == 10
    adm = admin(bs)
    d1 = adm.describe_consumer_groups([group])[group].result(30)
    assert d1.state.name == "STABLE" and len(d1.members) == 1  # closed, but a static member stays
    assert d1.members[0].group_instance_id == "inst-a"
    produce(bs, topic, [(i % 2, f"s{i}".encode()) for i in range(10, 14)])
    again = group_consume(client_name, bs, topic, group, 4, instance_id="inst-a")
    assert sorted(again.values) == sorted(f"s{i}".encode() for i in range(10, 14))
    d2 = adm.describe_consumer_groups([group])[group].result(30)
    assert d2.state.name == "STABLE" and len(d2.members) == 1
    assert d2.members[0].member_id != d1.members[0].member_id  # the new incarnation replaced the old
    assert {tp.partition for tp in d2.members[0].assignment.topic_partitions} == {0, 1}
