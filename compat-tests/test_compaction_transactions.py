"""Compaction of a transactional topic, as Kafka's log cleaner does it.

confluent-kafka's transactional producer writes three transactions over the same keys onto a compacted topic
(commit, abort, commit over half the keys), a second producer aborts one over keys of its own, then plain
filler rolls them out of the active segment. After the broker's cleaner ran:
- no record of an aborted transaction is left in the log files (Kafka's cleaner removes them, and they never
  supersede an older committed value of their key);
- the committed records are compacted by key like any other: one record per key, its latest committed value;
- a read_committed and a read_uncommitted consumer read exactly what the files hold, and the same records.
Against Apache Kafka 4.4 (KAFKALITE_COMPAT_BROKER=kafka) the same files are written and cleaned by Kafka itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness.broker import BrokerProcess
from harness.topics import create_topic

OVERRIDES = {"log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0",
             "log.cleaner.backoff.ms": "200", "log.segment.delete.delay.ms": "0"}
TOPIC = "compacted-txn"
SEGMENT = 16_000
PAD = b"p" * 200
KEYS = [b"k%03d" % i for i in range(50)]
OTHER = [b"o%03d" % i for i in range(20)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("broker-compaction-txn")
    args = [a for k, v in OVERRIDES.items() for a in ("--override", f"{k}={v}")]
    b = BrokerProcess(base / "data", base / "broker.log", extra_args=args)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def on_disk(data_dir: Path) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record in the partition's log files (markers left out); read while
    the cleaner may rename files: listed again if one went."""
    from kafkalite_storage.batch import batch_records, iter_batches

    for attempt in range(100):
        out = []
        try:
            for f in sorted(p for p in (data_dir / f"{TOPIC}-0").iterdir() if p.name.endswith(".log")):
                data = f.read_bytes()
                for pos, h in iter_batches(data):
                    if not h.is_control:
                        out += [(r.offset, r.key, r.value) for r in batch_records(data[pos : pos + h.size])]
        except FileNotFoundError:
            if attempt == 99:
                raise
            time.sleep(0.05)
            continue
        return sorted(out)
    raise AssertionError("unreachable")


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def read_all(bootstrap: str, isolation: str, end: int) -> list[tuple[int, bytes | None, bytes | None]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-compact-{isolation}-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "isolation.level": isolation, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        last = -1
        while last < end - 1 and time.monotonic() < deadline:
            for m in c.consume(num_messages=500, timeout=0.5):
                if m.error():
                    continue
                out.append((m.offset(), m.key(), m.value()))
            last = max([o for o, _k, _v in out] + [c.position([TopicPartition(TOPIC, 0)])[0].offset - 1])
        return out
    finally:
        c.close()


@pytest.fixture(scope="module")
def cleaned(broker: BrokerProcess) -> dict[str, Any]:
    from confluent_kafka import Producer

    bs = broker.bootstrap
    create_topic(bs, TOPIC, 1, {"cleanup.policy": "compact", "internal.segment.bytes": str(SEGMENT),
                                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3600000"})
    latest: dict[bytes, bytes] = {}
    p = Producer({"bootstrap.servers": bs, "transactional.id": "txn-compact-a", "linger.ms": 5})
    p.init_transactions(30)
    for tag, keys, commit in ((b"c1", KEYS, True), (b"ab", KEYS, False), (b"c2", KEYS[:25], True)):
        p.begin_transaction()
        for k in keys:
            p.produce(TOPIC, tag + b"-" + k + PAD, key=k, partition=0)
        assert p.flush(30) == 0
        if commit:
            p.commit_transaction(30)
            latest.update({k: tag + b"-" + k + PAD for k in keys})
        else:
            p.abort_transaction(30)
    q = Producer({"bootstrap.servers": bs, "transactional.id": "txn-compact-b", "linger.ms": 5})
    q.init_transactions(30)
    q.begin_transaction()
    for k in OTHER:
        q.produce(TOPIC, b"ab-" + k + PAD, key=k, partition=0)
    assert q.flush(30) == 0
    q.abort_transaction(30)
    filler = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(150):   # in small batches: a segment rolls only between batches
        k = b"f%04d" % i
        filler.produce(TOPIC, b"f" * 300, key=k, partition=0)
        latest[k] = b"f" * 300
        if i % 10 == 9:
            assert filler.flush(30) == 0

    def done() -> list | None:
        got = on_disk(broker.data_dir)
        return got if not any(v is not None and v.startswith(b"ab-") for _o, _k, v in got) and \
            len({k for _o, k, _v in got if k in KEYS}) == sum(1 for _o, k, _v in got if k in KEYS) else None

    files = wait_for(done, "the cleaner to remove the aborted records and compact the committed ones")
    return {"latest": latest, "files": files}


def test_aborted_records_are_removed_and_committed_ones_compacted(cleaned: dict) -> None:
    files, latest = cleaned["files"], cleaned["latest"]
    txn_part = {k: v for _o, k, v in files if k in KEYS or k in OTHER}
    assert txn_part == {k: latest[k] for k in KEYS}   # one per key, the latest committed value; OTHER gone
    assert sorted(k for _o, k, _v in files if k in KEYS) == KEYS


def test_readers_of_both_isolation_levels_read_the_files(broker: BrokerProcess, cleaned: dict) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "txn-compact-marks"})
    try:
        _low, end = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    finally:
        c.close()
    files = on_disk(broker.data_dir)   # a later cleaning may have removed more superseded filler: read again
    committed = read_all(broker.bootstrap, "read_committed", end)
    uncommitted = read_all(broker.bootstrap, "read_uncommitted", end)
    assert committed == uncommitted
    want = {(o, k, v) for o, k, v in files}
    assert set(committed) == want and len(committed) == len(want)
    assert {k: v for _o, k, v in committed if k in KEYS} == {k: cleaned["latest"][k] for k in KEYS}
