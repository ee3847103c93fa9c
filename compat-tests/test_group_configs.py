"""Group configs (ConfigResource type GROUP, KIP-848 / KIP-932) through the clients' own admin calls, against a
broker emulating Kafka 4.3: confluent-kafka 2.16's AdminClient (ConfigResource("GROUP", ...), which
librdkafka sends as resource type 32); and the effect that matters most: a share group whose share.auto.offset.reset
is set to earliest reads a topic from its beginning with confluent-kafka's ShareConsumer, while a group left at
the broker's default (latest) does not see the records already there.

Java kafka-clients 3.9.1 is not used: ConfigResource.Type.GROUP arrived in Kafka 4.0's clients.
"""
from __future__ import annotations

import time
import uuid

from harness.topics import create_topic

from kafkalite.tests.support.requires import require

KAFKALITE_EMULATE = "4.3"
KAFKALITE_ARGS = ["--override", "share.coordinator.state.topic.num.partitions=3"]


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_group_configs_confluent_and_share_consumer_reads_from_the_beginning(broker, topic) -> None:
    require("confluent_kafka")   # a loud skip, or a failure under CI=true
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(5):
        p.produce(topic, value=b"old%d" % i)
    assert p.flush(30) == 0

    early, late = _name("early"), _name("late")
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource("GROUP", early, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(timeout=30)
    desc = ConfigResource("GROUP", early)
    entries = admin.describe_configs([desc])[desc].result(timeout=30)
    assert (entries["share.auto.offset.reset"].value, entries["share.auto.offset.reset"].source) == ("earliest", 8)
    assert entries["share.isolation.level"].source == 5

    def offsets(group: str, fresh: bool) -> list[int]:
        """Offsets a new share consumer of ``group`` gets first; with ``fresh`` a new record is produced each
        round (a group starting at latest sees only records written after its share-partition starts)."""
        c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": group})
        c.subscribe([topic])
        got: list[int] = []
        try:
            deadline = time.monotonic() + 60
            while not got and time.monotonic() < deadline:
                if fresh:
                    p.produce(topic, value=b"new")
                    assert p.flush(30) == 0
                for m in c.poll(0.5):
                    assert m.error() is None, m.error()
                    got.append(m.offset())
        finally:
            c.close()
        return sorted(got)

    assert offsets(early, False)[:5] == [0, 1, 2, 3, 4]
    first_late = offsets(late, True)
    assert first_late and min(first_late) >= 5, first_late   # the broker default, latest: old records skipped
