"""The example pipelines of ``kafkalite.spark.examples``, each checked exactly (one SparkSession, local[2]).

- fraud: windowed counts with event time and a watermark over a crafted stream with late events (counted) and
  too-late events (dropped): the exact windows, counts and totals, and Spark's count of dropped events;
- state_join: a compacted topic read as a table (latest value per key, a key updated, a key tombstoned)
  joined to a stream of orders, across a restart: the exact joined output;
- to_parquet: Kafka to Parquet with a micro-batch that fails mid-way (a task fails while other tasks of the
  batch have written their files) and a restart: every input row in the Parquet output exactly once.
"""
from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("pyspark", "confluent_kafka")   # the module imports them: a loud skip, or a failure under CI=true

from pyspark.errors import StreamingQueryException  # noqa: E402

from kafkalite.spark.examples import fraud, state_join, to_parquet  # noqa: E402
from kafkalite.spark.examples._common import create_topic, produce  # noqa: E402
from kafkalite.tests.clients.test_spark_batch import make_spark  # noqa: E402

WAIT_S = 180.0  # bounds a hang; not a speed assertion


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark()
    s.conf.set("spark.sql.shuffle.partitions", "1")  # one stateful task per batch: the tests' time halves
    yield s
    s.stop()


def test_fraud_windows_with_watermark_and_late_events(spark: Any, broker: Any, tmp_path: Path) -> None:
    windows, dropped = fraud.run(spark, broker.bootstrap_servers, str(tmp_path / "ckpt"))
    assert windows == fraud.EXPECTED
    assert dropped == fraud.TOO_LATE == 2


def test_compacted_topic_as_table_joined_to_stream(spark: Any, broker: Any, tmp_path: Path) -> None:
    bs = broker.bootstrap_servers
    create_topic(bs, state_join.TABLE, 2, state_join.COMPACTED)
    create_topic(bs, state_join.STREAM, 2)
    create_topic(bs, state_join.OUT, 2)
    assert state_join.run(spark, bs, str(tmp_path / "ckpt")) == state_join.EXPECTED


def test_kafka_to_parquet_exactly_once_across_a_failed_batch(spark: Any, broker: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    bs, topic, n = broker.bootstrap_servers, "events-pq", 600
    create_topic(bs, topic, 3)
    for p in range(3):  # id i on partition i % 3 at offset i // 3
        produce(bs, topic, [e for e in to_parquet.events(n) if int(e[0]) % 3 == p], partition=p)
    hook = tmp_path / "fail"
    hook.touch()
    hook_path = str(hook)

    def check(i: int) -> bool:  # id 599: offset 199 of partition 2, in the 2nd and last batch (300 rows each)
        if i == 599 and os.path.exists(hook_path):
            raise RuntimeError("injected failure mid-batch")
        return True

    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run() -> Any:
        df = to_parquet.parse(spark, bs, topic=topic, max_per_trigger=300).where(F.udf(check, "boolean")("id"))
        q = to_parquet.write(df, out, ckpt, available_now=True)
        with contextlib.suppress(StreamingQueryException):  # q.exception() says it
            q.awaitTermination(WAIT_S)
        assert not q.isActive, "query hung"
        return q

    q = run()
    assert q.exception() is not None and "injected failure" in str(q.exception())
    first = [r.id for r in spark.read.parquet(out).collect()]
    # the batches before the failed one, each row once; nothing of the failed batch (its tasks for partitions
    # 0 and 1 may have written files: no _spark_metadata entry lists them)
    assert 0 < len(first) < n and len(set(first)) == len(first) and 599 not in first
    assert len([i for i in first if i % 3 == 2]) == len([i for i in first if i % 3 == 0])
    files_on_disk = {p.name for p in Path(out).rglob("*.parquet")}
    hook.unlink()
    q = run()
    assert q.exception() is None
    rows = spark.read.parquet(out).collect()
    assert Counter(r.id for r in rows) == Counter(range(n))  # every row once
    assert sorted((r.partition, r.offset) for r in rows) == sorted((i % 3, i // 3) for i in range(n))
    assert all(r.kind == to_parquet.KINDS[r.id % 3] and r.amount == r.id / 100 for r in rows)
    assert files_on_disk  # (the failed attempt's own files, if any, are not read: _spark_metadata decides)
