"""Transactional reads through the ``kafkalite`` source: ``kafka.isolation.level=read_committed``.

A real transactional producer (confluent-kafka) writes committed and aborted transactions interleaved with
plain records, and a second one leaves a transaction open, holding the partition's last stable offset (LSO)
back. A read_committed read (batch, and streaming across a restart) must return exactly the committed and
non-transactional records below the LSO: no aborted record, no control record (the COMMIT/ABORT markers take
offsets too), nothing of the open transaction nor anything after it on its partition until it commits. A
read_uncommitted read of the same topic sees the aborted and open records (markers still never appear).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("CI"):  # CI installs the spark extra: a missing pyspark must fail, not skip
    import pyspark  # noqa: F401
else:
    pytest.importorskip("pyspark", reason="the spark extra is not installed (tools/bootstrap.sh spark)")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

import kafkalite  # noqa: E402
from kafkalite.tests.test_spark_batch import create_topic, make_spark  # noqa: E402

WAIT_S = 120.0


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    with kafkalite.Broker() as b:
        yield b


def _txn_producer(bs: str, txn_id: str) -> Any:
    p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id, "linger.ms": 2})
    p.init_transactions(30)
    return p


def _send(p: Any, topic: str, names: list[str]) -> None:
    for name in names:
        p.produce(topic, name.encode(), name.encode(), partition=int(name.rsplit("-", 1)[1]) % 2)
    assert p.flush(30) == 0


def _names(prefix: str, lo: int, hi: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(lo, hi)]


def _read(spark: Any, bs: str, topic: str, level: str) -> list[tuple[str, int, int]]:
    df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bs).option("subscribe", topic)
          .option("kafka.isolation.level", level).load())
    return sorted((r.value.decode(), r.partition, r.offset) for r in df.collect())


def _lso(bs: str, topic: str) -> dict[int, int]:
    from confluent_kafka import IsolationLevel
    from confluent_kafka import TopicPartition as KTP
    from confluent_kafka.admin import OffsetSpec

    admin = AdminClient({"bootstrap.servers": bs})  # kept referenced: its futures die with it
    fs = admin.list_offsets({KTP(topic, p): OffsetSpec.latest() for p in (0, 1)},
                            isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=30)
    return {k.partition: f.result(timeout=60).offset for k, f in fs.items()}


def test_read_committed_batch_and_stream(spark: Any, broker: Any, tmp_path: Path) -> None:
    bs, topic = broker.bootstrap_servers, "rc"
    create_topic(bs, topic, 2)
    a = _txn_producer(bs, "rc-a")
    plain = Producer({"bootstrap.servers": bs})
    committed = []
    for k, commit in enumerate((True, False, True, False, True)):
        a.begin_transaction()
        names = _names("commit" if commit else "abort", 10 * k, 10 * k + 10)
        _send(a, topic, names)
        (a.commit_transaction if commit else a.abort_transaction)(30)
        if commit:
            committed += names
        between = _names("plain", 10 * k, 10 * k + 4)  # non-transactional records between the transactions
        _send(plain, topic, between)
        committed += between
    # An open transaction on partition 0 holds its LSO back; later committed records above it are invisible.
    b = _txn_producer(bs, "rc-b")
    b.begin_transaction()
    open_names = ["open-0", "open-2", "open-4"]
    _send(b, topic, open_names)
    a.begin_transaction()
    late = _names("late", 0, 6)
    _send(a, topic, late)
    a.commit_transaction(30)
    late_visible = [n for n in late if int(n.rsplit("-", 1)[1]) % 2 == 1]  # partition 1 has no open txn
    lso = _lso(bs, topic)

    rows = _read(spark, bs, topic, "read_committed")
    assert sorted(n for n, _, _ in rows) == sorted(committed + late_visible)
    assert all(off < lso[p] for _, p, off in rows)
    everything = _read(spark, bs, topic, "read_uncommitted")
    names = [n for n, _, _ in everything]
    assert len(names) == 50 + 20 + 3 + 6 and not any(n.startswith(("\x00",)) for n in names)
    assert {n.split("-")[0] for n in names} == {"commit", "abort", "plain", "open", "late"}

    # Streaming, read_committed: the first run stops at the LSO; after the open transaction commits, a
    # restart from the checkpoint delivers the rest, each record once.
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> None:
        q = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bs)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("kafka.isolation.level", "read_committed").option("maxOffsetsPerTrigger", "45").load()
             .selectExpr("CAST(value AS STRING) AS v").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
        q.awaitTermination(WAIT_S)
        assert not q.isActive and q.exception() is None

    def sink() -> list[str]:
        return sorted(r.v for r in spark.read.schema("v string").parquet(str(out)).collect())

    run()
    assert sink() == sorted(committed + late_visible)
    b.commit_transaction(30)
    run()
    assert sink() == sorted(committed + late + open_names)
