"""Time and size retention and DeleteRecords with real clients.

The broker runs its retention check every 200 ms and deletes `.deleted` files at once, topics roll every
2000 bytes (Kafka 4.x's test-only topic config internal.segment.bytes: segment.bytes may not go below 1 MiB),
so each produce call below (one batch of five 300-byte records) fills its own segment.
- time: records stamped an hour ago, then a last call stamped now, are kept under the 7-day default; lowering
  retention.ms to 60 s (an admin client) deletes every segment before the first that holds a young record.
  Old files leave the disk, the kept segments are byte for byte what they were, ListOffsets EARLIEST answers
  the new start, and consumers asked to start at offset 0 get OFFSET_OUT_OF_RANGE and
  (auto.offset.reset=earliest) read from the new log start offset.
- size: retention.bytes keeps the newest segments that fit; consumers from "earliest" read exactly those.
- DeleteRecords (confluent-kafka and kafka-python admin) moves the start in the middle of a segment.
- an expired *active* segment (records stamped in 2023, Kafka's default segment.bytes, so every record is in the
  active segment): once retention.ms applies, the broker rolls a new segment at the log end offset and deletes
  the old one: EARLIEST = LATEST, only `<log end offset>.log` stays, new records continue at that offset, and a
  restart keeps it.
Every test runs against Apache Kafka 4.4 too (KAFKALITE_COMPAT_BROKER=kafka) with the same outcome. (Kafka deletes
an expired active segment: the time fixture's last call is stamped now, so that its segment is kept.)
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.broker import BrokerProcess
from harness.clients import Client
from harness.records import Rec

OVERRIDES = {"log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0",
             "log.cleaner.backoff.ms": "200",
             "log.segment.delete.delay.ms": "0", "log.flush.offset.checkpoint.interval.ms": "500"}
PRODUCERS = ("kafka-python", "confluent-kafka", "java")  # one partition each
CALLS, PER_CALL = 6, 5
TOTAL = CALLS * PER_CALL


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("broker-retention")
    args = [a for k, v in OVERRIDES.items() for a in ("--override", f"{k}={v}")]
    b = BrokerProcess(base / "data", base / "broker.log", extra_args=args)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def segment_files(data_dir: Path, topic: str, partition: int) -> list[str]:
    d = data_dir / f"{topic}-{partition}"
    return sorted(n.name for n in d.iterdir() if ".log" in n.name or ".index" in n.name)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def value(p: int, i: int) -> bytes:
    return b"p%d-record-%03d-" % (p, i) + b"v" * 300


@pytest.fixture(scope="module")
def time_topic(broker: BrokerProcess, get_client: Callable[[str], Client]) -> dict[str, Any]:
    topic = "retention-time"
    get_client("java").create_topic(broker.bootstrap, topic, len(PRODUCERS), {"internal.segment.bytes": "2000"})
    hour_ago = int(time.time() * 1000) - 3_600_000
    young = (CALLS - 1) * PER_CALL   # the last call's records are stamped now: not expired
    for p, name in enumerate(PRODUCERS):
        client = get_client(name)
        for call in range(CALLS):
            now = int(time.time() * 1000)
            recs = [Rec(b"k%d" % i, value(p, i), timestamp=hour_ago + i if i < young else now + i, partition=p)
                    for i in range(call * PER_CALL, (call + 1) * PER_CALL)]
            client.produce(broker.bootstrap, topic, recs)
    before = {p: segment_files(broker.data_dir, topic, p) for p in range(len(PRODUCERS))}
    # each call's batch (~1.6 kB; clients may split one) fills a 2000-byte segment (Kafka refuses a batch larger
    # than the segment: RECORD_LIST_TOO_LARGE), the next call rolls; retention deletes every segment before the
    # one holding the first young record (Kafka's rule: the first segment it may not delete stops it)
    bases = {p: sorted(int(n[:20]) for n in before[p] if n.endswith(".log")) for p in before}
    active = {p: max(b for b in bases[p] if b <= young) for p in before}
    for p in range(len(PRODUCERS)):
        assert len(bases[p]) >= CALLS and active[p] > 0
    kept = {p: {b: sha(broker.data_dir / f"{topic}-{p}" / f"{b:020d}.log") for b in bases[p] if b >= active[p]}
            for p in range(len(PRODUCERS))}
    time.sleep(0.6)  # a few retention passes: nothing is older than the 7-day default
    assert {p: segment_files(broker.data_dir, topic, p) for p in range(len(PRODUCERS))} == before
    get_client("kafka-python").alter_config(broker.bootstrap, topic, {"retention.ms": "60000"})
    confluent = get_client("confluent-kafka")
    for p in range(len(PRODUCERS)):
        wait_for(lambda p=p: confluent.list_offsets(broker.bootstrap, topic, p, "earliest") == active[p],
                 f"retention of partition {p}")
        # renamed .deleted first, removed once file.delete.delay.ms (0 here) has passed
        wait_for(lambda p=p: [n for n in segment_files(broker.data_dir, topic, p) if ".log" in n]
                 == [f"{b:020d}.log" for b in bases[p] if b >= active[p]],
                 f"old segments of partition {p} to leave the disk")
    return {"topic": topic, "kept": kept, "start": active}


def test_old_segments_leave_the_disk_and_kept_ones_are_untouched(broker: BrokerProcess, time_topic: dict,
                                                                 get_client: Callable[[str], Client]) -> None:
    topic, start = time_topic["topic"], time_topic["start"]
    for p in range(len(PRODUCERS)):
        files = segment_files(broker.data_dir, topic, p)
        assert not [n for n in files if int(n[:20]) < start[p]], files  # no .log, .index, .deleted left
        for base, digest in time_topic["kept"][p].items():
            assert sha(broker.data_dir / f"{topic}-{p}" / f"{base:020d}.log") == digest
        for name in ("kafka-python", "java"):
            c = get_client(name)
            assert c.list_offsets(broker.bootstrap, topic, p, "earliest") == start[p]
            assert c.list_offsets(broker.bootstrap, topic, p, "latest") == TOTAL


@pytest.mark.parametrize("client_name", ["kafka-python", "confluent-kafka", "java", "aiokafka", "kafkajs"])
def test_consumer_below_log_start_resets_to_it(broker: BrokerProcess, time_topic: dict, client: Client) -> None:
    """Fetch at 0 -> OFFSET_OUT_OF_RANGE -> auto.offset.reset=earliest -> the new log start offset."""
    topic, start = time_topic["topic"], time_topic["start"]
    want = [(p, i, value(p, i)) for p in range(len(PRODUCERS)) for i in range(start[p], TOTAL)]
    got = client.consume(broker.bootstrap, topic, list(range(len(PRODUCERS))), len(want), start=0, timeout_s=30)
    assert sorted((r.partition, r.offset, r.value) for r in got) == want


@pytest.mark.parametrize("client_name", ["kcat", "confluent-kafka"])
def test_consumer_from_earliest_starts_at_log_start(broker: BrokerProcess, time_topic: dict,
                                                    client: Client) -> None:
    topic, start = time_topic["topic"], time_topic["start"]
    want = [(p, i) for p in range(len(PRODUCERS)) for i in range(start[p], TOTAL)]
    got = client.consume(broker.bootstrap, topic, list(range(len(PRODUCERS))), len(want), start="earliest",
                         timeout_s=30)
    assert sorted((r.partition, r.offset) for r in got) == want


def test_size_retention(broker: BrokerProcess, get_client: Callable[[str], Client]) -> None:
    topic = "retention-size"
    limit = 4000
    get_client("confluent-kafka").create_topic(broker.bootstrap, topic, 1,
                                               {"internal.segment.bytes": "2000", "retention.bytes": str(limit)})
    java = get_client("java")
    for call in range(10):
        java.produce(broker.bootstrap, topic, [Rec(b"k", value(0, i), partition=0)
                                               for i in range(call * PER_CALL, (call + 1) * PER_CALL)])

    def on_disk() -> tuple[list[int], list[int]]:
        d = broker.data_dir / f"{topic}-0"
        logs = sorted(n for n in d.iterdir() if n.name.endswith(".log"))
        return [int(n.name[:20]) for n in logs], [n.stat().st_size for n in logs]

    def settled() -> tuple[list[int], list[int]] | None:
        bases, sizes = on_disk()
        # Kafka's rule: the oldest segment goes while the log would still hold retention.bytes without it
        return (bases, sizes) if bases[0] > 0 and sum(sizes) - sizes[0] < limit else None

    bases, sizes = wait_for(settled, "size retention")
    assert sum(sizes) >= limit and len(bases) < 10
    start = bases[0]
    for name in ("kafka-python", "confluent-kafka"):
        c = get_client(name)
        assert c.list_offsets(broker.bootstrap, topic, 0, "earliest") == start
        got = c.consume(broker.bootstrap, topic, [0], 10 * PER_CALL - start, timeout_s=30)
        assert [r.offset for r in got] == list(range(start, 10 * PER_CALL))


def test_delete_records(broker: BrokerProcess, get_client: Callable[[str], Client]) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = "retention-delete-records"
    confluent = get_client("confluent-kafka")
    confluent.create_topic(broker.bootstrap, topic, 2, {"internal.segment.bytes": "2000"})
    for p in range(2):
        for call in range(3):
            confluent.produce(broker.bootstrap, topic, [Rec(b"k", value(p, i), partition=p)
                                                        for i in range(call * PER_CALL, (call + 1) * PER_CALL)])
    adm = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = adm.delete_records([TopicPartition(topic, 0, 7)])
    (fut,) = res.values()
    assert fut.result(30).low_watermark == 7
    from kafka import KafkaAdminClient
    from kafka.structs import TopicPartition as KTP

    kadm = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        kadm.delete_records({KTP(topic, 1): 11})
    finally:
        kadm.close()
    for p, start in ((0, 7), (1, 11)):
        for name in ("kafka-python", "confluent-kafka", "java"):
            c = get_client(name)
            assert c.list_offsets(broker.bootstrap, topic, p, "earliest") == start
        got = get_client("java").consume(broker.bootstrap, topic, [p], 15 - start, start=0, timeout_s=30)
        assert [r.offset for r in got] == list(range(start, 15))
    # the segment below the new start is gone; the one holding it stays whole
    files = segment_files(broker.data_dir, topic, 0)
    assert f"{0:020d}.log" not in files and f"{5:020d}.log" in files


STAMPED_2023 = 1_690_000_000_000   # 2023-07-22, far past a day's retention.ms


def test_expired_active_segment_is_rolled_and_deleted(broker: BrokerProcess,
                                                      get_client: Callable[[str], Client]) -> None:
    topic = "retention-expired-active"
    confluent = get_client("confluent-kafka")
    confluent.create_topic(broker.bootstrap, topic, 1, {"retention.ms": "-1"})   # kept while producing
    get_client("java").produce(broker.bootstrap, topic, [Rec(b"k", b"old-%d" % i, timestamp=STAMPED_2023 + i,
                                                             partition=0) for i in range(10)])
    part = broker.data_dir / f"{topic}-0"
    assert [n.name for n in part.iterdir() if n.name.endswith(".log")] == [f"{0:020d}.log"]   # the active one
    assert [confluent.list_offsets(broker.bootstrap, topic, 0, s) for s in ("earliest", "latest")] == [0, 10]
    get_client("kafka-python").alter_config(broker.bootstrap, topic, {"retention.ms": "86400000"})
    wait_for(lambda: confluent.list_offsets(broker.bootstrap, topic, 0, "earliest") == 10,
             "retention of the expired active segment")
    # the new active segment is named by its base offset, the log end offset; the old files leave the disk
    # (log.segment.delete.delay.ms=0)
    wait_for(lambda: sorted(n.name for n in part.iterdir() if ".log" in n.name) == [f"{10:020d}.log"],
             "the old segment to leave the disk")
    for name in ("kafka-python", "java"):
        c = get_client(name)
        assert [c.list_offsets(broker.bootstrap, topic, 0, s) for s in ("earliest", "latest")] == [10, 10]
    confluent.produce(broker.bootstrap, topic, [Rec(b"k", b"new-%d" % i, partition=0) for i in range(3)])
    got = get_client("java").consume(broker.bootstrap, topic, [0], 3, start="earliest", timeout_s=30)
    assert [(r.offset, r.value) for r in got] == [(10 + i, b"new-%d" % i) for i in range(3)]
    broker.restart()
    wait_for(lambda: [confluent.list_offsets(broker.bootstrap, topic, 0, s) for s in ("earliest", "latest")]
             == [10, 13], "the offsets after a restart")
    got = get_client("kafka-python").consume(broker.bootstrap, topic, [0], 3, start=0, timeout_s=30)
    assert [r.offset for r in got] == [10, 11, 12]   # offset 0 is out of range: auto.offset.reset=earliest
