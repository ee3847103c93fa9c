"""MirrorMaker 2 (a dedicated ``connect-mirror-maker``, connect-mirror from ``tools/bootstrap.sh eco``) mirroring one
kafkalite (alias ``A``) into another (``B``) with the default replication policy.

- MirrorSourceConnector: ``A``'s topic arrives on ``B`` as ``A.<topic>`` with its partitions, its non-default
  configs, and every record's key, value, headers and timestamp at the same partition and offset;
- MirrorHeartbeatConnector: heartbeats from ``A`` to ``B`` in ``B``'s ``heartbeats`` topic;
- MirrorCheckpointConnector with ``sync.group.offsets.enabled``: the committed offsets of a consumer group on ``A``
  are translated through the offset syncs and committed on ``B``, so the group's consumer moved to ``B`` resumes
  exactly where it left off on ``A`` (it reads exactly the records produced after it stopped).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import connect

from conftest import missing

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

WAIT_S = connect.WAIT_S
TOPIC, GROUP, PARTS = "mm-orders", "mm-group", 2
T0 = 1_700_000_000_000


@pytest.fixture
def mm2s() -> Iterator[list[connect.MirrorMaker]]:
    started: list[connect.MirrorMaker] = []
    yield started
    for m in started:
        m.kill()


def mm2_properties(a: str, b: str, **extra: str) -> dict[str, str]:
    """A -> B only; replication factors of 1 (one broker each); short intervals so a test sees checkpoints and
    offset syncs within seconds; an offset sync for every record (offset.lag.max=0), so checkpoints translate
    exactly."""
    return {
        "clusters": "A, B", "A.bootstrap.servers": a, "B.bootstrap.servers": b,
        "A->B.enabled": "true", "B->A.enabled": "false", "A->B.topics": "mm-.*", "A->B.groups": "mm-.*",
        "replication.factor": "1", "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "refresh.topics.interval.seconds": "2", "refresh.groups.interval.seconds": "2",
        "sync.topic.configs.interval.seconds": "2", "emit.checkpoints.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1", "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1", "offset.lag.max": "0",
        **extra,
    }


def produce(bootstrap: str, start: int, end: int) -> None:
    """Record i: partition i % 2, key k<i>, value v<i>, timestamp T0 + i, header (i, 8-byte big-endian i)."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(start, end):
        p.produce(TOPIC, key=f"k{i}", value=f"v{i}", partition=i % PARTS, timestamp=T0 + i,
                  headers=[("i", struct.pack(">q", i)), ("src", b"A")])
    assert p.flush(60) == 0


def expected(start: int, end: int) -> list[tuple[int, int, bytes, bytes, int, list[tuple[str, bytes]]]]:
    return sorted(((i % PARTS, i // PARTS, f"k{i}".encode(), f"v{i}".encode(), T0 + i,
                    [("i", struct.pack(">q", i)), ("src", b"A")]) for i in range(start, end)),
                  key=lambda r: (r[0], r[1]))


def read(bootstrap: str, topic: str, parts: int, group: str | None = None, want: int | None = None,
         ) -> list[tuple[int, int, bytes, bytes, int, list[tuple[str, bytes]]]]:
    """Every record of ``topic`` (assigned from offset 0), or with ``group`` what a subscriber of that group
    reads from its committed offsets until ``want`` records came (then it closes without committing)."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group or "mm-check", "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "earliest"}
    c = Consumer(conf)
    if group is None:
        c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    else:
        c.subscribe([topic])
    out: list[Any] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (len(eof) < parts if want is None else len(out) < want):
        for m in c.consume(500, 0.5):
            if m.error():
                eof.add(m.partition())
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1], m.headers() or []))
    c.close()
    return sorted(out, key=lambda r: (r[0], r[1]))


def wait_for(cond: Callable[[], Any], what: str, mm: connect.MirrorMaker) -> Any:
    deadline = time.monotonic() + WAIT_S
    while not (v := cond()):
        assert mm.alive(), f"MirrorMaker exited:\n{mm.tail()}"
        assert time.monotonic() < deadline, f"{what} not reached in {WAIT_S}s:\n{mm.tail()}"
        time.sleep(0.5)
    return v


def topics(bootstrap: str) -> dict[str, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    return {t: len(m.partitions) for t, m in md.topics.items()}


def test_mirror_topic_configs_records_heartbeats_and_group_offsets(
        broker_factory: Callable[..., Any], tmp_path: Path, mm2s: list[connect.MirrorMaker]) -> None:
    reason = connect.connect_missing()
    if reason:
        missing(reason)
    a, b = broker_factory().bootstrap, broker_factory().bootstrap
    admin_a, admin_b = AdminClient({"bootstrap.servers": a}), AdminClient({"bootstrap.servers": b})
    admin_a.create_topics([NewTopic(TOPIC, PARTS, 1, config={"retention.ms": "123456789"})])[TOPIC].result(30)
    produce(a, 0, 120)
    # the group reads everything there is on A, commits, and goes away
    consumed = read(a, TOPIC, PARTS, group=GROUP, want=120)
    assert consumed == expected(0, 120)
    c = Consumer({"bootstrap.servers": a, "group.id": GROUP})
    c.commit(offsets=[TopicPartition(TOPIC, p, 60) for p in range(PARTS)], asynchronous=False)
    c.close()

    mm = connect.MirrorMaker(tmp_path / "mm2", mm2_properties(a, b))
    mm2s.append(mm)
    mm.start()
    remote = f"A.{TOPIC}"
    wait_for(lambda: topics(b).get(remote) == PARTS, f"{remote} with {PARTS} partitions on B", mm)
    wait_for(lambda: len(read(b, remote, PARTS)) == 120, "120 mirrored records", mm)
    # same partition, same offset, same key, value, timestamp and headers
    assert read(b, remote, PARTS) == expected(0, 120)

    # the topic's non-default config follows (sync.topic.configs)
    def remote_retention() -> bool:
        res = ConfigResource(ConfigResource.Type.TOPIC, remote)
        return admin_b.describe_configs([res])[res].result(30)["retention.ms"].value == "123456789"

    wait_for(remote_retention, "retention.ms synced to B", mm)

    # checkpoints: B's copy of the group has the translated offsets (60 on each partition of A.mm-orders)
    def group_on_b() -> bool:
        cb = Consumer({"bootstrap.servers": b, "group.id": GROUP})
        got = cb.committed([TopicPartition(remote, p) for p in range(PARTS)], timeout=30)
        cb.close()
        return [(t.partition, t.offset) for t in got] == [(p, 60) for p in range(PARTS)]

    wait_for(group_on_b, f"{GROUP}'s offsets translated onto B", mm)
    ckpt = read(b, "A.checkpoints.internal", 1)
    assert ckpt, "no checkpoint records on B"
    # heartbeats from A, emitted into B's heartbeats topic
    assert "heartbeats" in topics(b)
    beats = read(b, "heartbeats", topics(b)["heartbeats"])
    assert beats, "no heartbeats on B"

    # more records on A while the group is away; the consumer moved to B resumes exactly after what it read on A
    produce(a, 120, 200)
    wait_for(lambda: len(read(b, remote, PARTS)) == 200, "200 mirrored records", mm)
    assert read(b, remote, PARTS) == expected(0, 200)
    moved = read(b, remote, PARTS, group=GROUP, want=80)
    assert moved == expected(120, 200)
