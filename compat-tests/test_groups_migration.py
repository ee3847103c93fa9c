"""Online conversion between a classic group and a KIP-848 consumer group, with real clients (Kafka 4.0's
``group.consumer.migration.policy=bidirectional``, kafkalite/coordinator/consumer/migration.py).

A classic group of two members consumes; a member with ``group.protocol=consumer`` joins and the group converts
to a consumer group while the two others keep speaking JoinGroup/SyncGroup/Heartbeat (served by the consumer
group with the server-side assignor: they revoke partitions for the newcomer); then each classic member restarts
with the consumer protocol; then a classic member joins the consumer group, the consumer-protocol members leave,
and the last one leaving converts the group back to a classic group. Members commit
synchronously after each batch and on revocation and leave cleanly, so every record is read exactly once across
all of it, and no partition is ever owned by two members at once. Each step checks the group type ListGroups
reports. confluent-kafka 2.16.1 (librdkafka) and the Java client 3.9.1 (eager range assignor when classic).
"""
from __future__ import annotations

import signal
import uuid

import pytest
from harness.broker import BrokerProcess
from harness.topics import create_topic
from test_groups_consumer_protocol import (
    PARTITIONS,
    Member,
    _listed,
    assert_never_shared,
    commit_start_offsets,
    covers,
    diagnose,
    start_member,
    values,
    wait_for,
)
from test_groups_consumer_protocol import kip848_broker as kip848_broker
from test_groups_support import produce


def _type(bs: str, group: str) -> str:
    return str(_listed(bs, group).type.name)


def _member_types(b: BrokerProcess, group: str) -> list[int]:
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import ConsumerGroupDescribeRequest

    with RawClient(b.host, b.port) as c:
        return sorted(m.member_type for m in c.request(ConsumerGroupDescribeRequest(group_ids=[group]), 1)
                      .groups[0].members)


# The Java client 3.9.1 as a consumer-protocol member (AsyncKafkaConsumer) sometimes starts a partition it is given
# ~150 ms after its first one at offset 0 (auto.offset.reset) although the group holds a committed offset for it,
# and reads that partition's records again (12-14 of 120). Seen under load against kafkalite (b-consumer/a-consumer
# given [4] then [4, 5], or [3] then [3, 5]: partition 5 read from 0 while the broker had answered every commit of
# it, the last at 14) and the same way against Apache Kafka 4.4 (KAFKALITE_COMPAT_BROKER=kafka: 132 read, 120
# distinct, partition 5 from 0 right after [4] -> [4, 5]); the 4.4.0 client (java4) never did in 42 loaded runs on
# both brokers. A client fault, not the broker's: not counted as a pass while the 3.9.1 client is the one tested.
_JAVA39_RESET = pytest.mark.xfail(strict=False, reason="Java 3.9.1 consumer-protocol member sometimes resets a "
                                                       "newly added partition to offset 0 (also on Kafka 4.4)")


@pytest.mark.parametrize("kind", ["confluent-kafka", pytest.param("java", marks=_JAVA39_RESET), "java4"])
def test_classic_group_upgrades_online_and_downgrades_back(kind: str, kip848_broker: BrokerProcess,
                                                           topic: str) -> None:
    bs = kip848_broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    group = f"mig-{uuid.uuid4().hex[:8]}"
    commit_start_offsets(bs, group, topic, PARTITIONS)   # (why: its docstring)
    sent: list[str] = []
    members: list[Member] = []

    def more(tag: str, n: int = 12) -> None:
        batch = [f"{tag}{i}" for i in range(n)]
        produce(bs, topic, [(i % PARTITIONS, v.encode()) for i, v in enumerate(batch)])
        sent.extend(batch)

    def all_read(what: str) -> None:
        wait_for(lambda: len(values(members)) >= len(sent), 90, f"{what}: {len(sent)} records", members)

    def start(name: str, protocol: str) -> Member:
        m = start_member(kind, bs, topic, group, name, protocol=protocol)
        members.append(m)
        return m

    try:
        more("a", 60)
        a = start("a-classic", "classic")
        b = start("b-classic", "classic")
        wait_for(lambda: covers([a, b], topic), 90, "two classic members to split the partitions", members)
        all_read("classic group")
        assert _type(bs, group) == "CLASSIC"

        # upgrade: a consumer-protocol member joins the live classic group; a and b stay classic inside the
        # consumer group and give up partitions for it (revoked before the new member gets them)
        n = start("n-consumer", "consumer")
        wait_for(lambda: covers([a, b, n], topic), 90, "two classic members and a consumer member", members)
        assert _type(bs, group) == "CONSUMER"
        assert _member_types(kip848_broker, group) == [0, 0, 1]   # ConsumerGroupDescribe v1: classic, consumer
        more("b")
        all_read("after the upgrade")

        # b, then a, restart with the consumer protocol
        b.stop(signal.SIGTERM)
        b2 = start("b-consumer", "consumer")
        wait_for(lambda: covers([a, n, b2], topic), 90, "b back on the consumer protocol", members)
        more("c")
        a.stop(signal.SIGTERM)
        a2 = start("a-consumer", "consumer")
        wait_for(lambda: covers([a2, n, b2], topic), 90, "three consumer-protocol members", members)
        assert _type(bs, group) == "CONSUMER"
        more("d")
        all_read("every member on the consumer protocol")

        # downgrade: a classic member joins the consumer group, then the consumer-protocol members leave; the
        # last one leaving converts the group back to a classic group
        c = start("c-classic", "classic")
        wait_for(lambda: covers([a2, n, b2, c], topic), 90, "a classic member to join the consumer group", members)
        more("e")
        all_read("a classic member in the consumer group")
        for m in (a2, n):
            m.stop(signal.SIGTERM)
        wait_for(lambda: covers([b2, c], topic), 90, "one consumer and one classic member", members)
        assert _type(bs, group) == "CONSUMER"
        b2.stop(signal.SIGTERM)
        wait_for(lambda: covers([c], topic), 90, "the classic member to own every partition", members)
        wait_for(lambda: _type(bs, group) == "CLASSIC", 30, "ListGroups to report a classic group", members)
        d = start("d-classic", "classic")
        wait_for(lambda: covers([c, d], topic), 90, "two classic members again", members)
        more("f")
        all_read("after the downgrade")
        assert _type(bs, group) == "CLASSIC"
        for m in (c, d):
            m.stop(signal.SIGTERM)
        got = values(members)
        assert got == sorted(sent), (f"every record read exactly once: {len(got)} read, {len(set(got))} distinct, "
                                     f"{len(sent)} sent\n{diagnose(members)}")
        assert_never_shared(members)
    finally:
        for m in members:
            m.stop(signal.SIGKILL, timeout=10)
