"""Batch reads through the ``kafkalite`` PySpark source against an embedded kafkalite broker.

One SparkSession (local[2]) for the module. The 100,000-record test checks every row — partition, offset, key,
value, headers, timestamp, timestamp type — against what the producer was told was stored.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("pyspark", "confluent_kafka")   # the module imports them: a loud skip, or a failure under CI=true

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafkalite.spark.options import offsets_to_json  # noqa: E402

N = 100_000
PARTS = 3
T0 = 1_700_000_000_000  # ms; record i gets T0 + i


def make_spark(master: str = "local[2]") -> Any:
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkalite.spark

    spark = (SparkSession.builder.master(master).appName("kafkalite-tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "1g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafkalite.spark.register(spark)
    return spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark()
    yield s
    s.stop()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Time retention off: the records are stamped in 2023 (T0) and retention's first pass, 30 s after the broker
    starts (log.initial.task.delay.ms, as Kafka), would delete them while the module's Spark reads run."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1, config={"retention.ms": "-1"})]).values():
        f.result(timeout=30)


def record(i: int) -> dict[str, Any]:
    """Record i: some keys null, some values null or empty, headers on most, including repeated keys."""
    key = None if i % 10 == 3 else f"key-{i}".encode()
    value = None if i % 97 == 5 else (b"" if i % 89 == 1 else f"value-{i}-".encode() * (1 + i % 4))
    if i % 5 == 0:
        headers = None
    elif i % 5 == 1:
        headers = [("trace", f"t{i}".encode())]
    else:
        headers = [("a", b"1"), ("b", bytes([i % 256])), ("a", b"again")]
    return {"key": key, "value": value, "headers": headers, "partition": i % PARTS, "timestamp": T0 + i}


@pytest.fixture(scope="module")
def produced(broker: Any) -> dict[tuple[int, int], dict[str, Any]]:
    """100,000 records over 3 partitions, keyed by (partition, offset).

    Record i goes to partition i % 3; one idempotent producer keeps each partition in produce order, so its
    offset is i // 3. The producer reports every failed delivery (none may fail) and the log end offsets
    are checked, so the mapping is what the broker stored, not an assumption.
    """
    create_topic(broker.bootstrap_servers, "batch100k", PARTS)
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20, "enable.idempotence": True,
                  "delivery.report.only.error": True, "on_delivery": lambda err, msg: errors.append(err)})
    stored: dict[tuple[int, int], dict[str, Any]] = {}
    for i in range(N):
        rec = record(i)
        stored[(i % PARTS, i // PARTS)] = rec
        while True:
            try:
                p.produce("batch100k", value=rec["value"], key=rec["key"], partition=rec["partition"],
                          timestamp=rec["timestamp"], headers=rec["headers"])
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    assert not errors
    from kafkalite.spark.admin import OffsetReader

    tps = [("batch100k", part) for part in range(PARTS)]
    ends = OffsetReader({"bootstrap.servers": broker.bootstrap_servers}).latest(tps)
    assert ends == {("batch100k", part): len(range(part, N, PARTS)) for part in range(PARTS)}
    return stored


def test_batch_read_100k_matches_what_was_produced(spark: Any, broker: Any,
                                                    produced: dict[tuple[int, int], dict[str, Any]]) -> None:
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", "batch100k")
          .option("includeHeaders", "true")
          .load())
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                          "headers"]
    table = df.toArrow()
    assert table.num_rows == N
    cols = {name: table.column(name).to_pylist() for name in ("key", "value", "topic", "partition", "offset",
                                                             "timestampType", "headers")}
    stamps = table.column("timestamp").cast("int64").to_pylist()  # microseconds since the epoch
    seen = set()
    for r in range(N):
        where = (cols["partition"][r], cols["offset"][r])
        assert where not in seen
        seen.add(where)
        rec = produced[where]
        assert cols["topic"][r] == "batch100k"
        assert cols["key"][r] == rec["key"]
        assert cols["value"][r] == rec["value"]
        assert stamps[r] == rec["timestamp"] * 1000
        assert cols["timestampType"][r] == 0  # CreateTime
        got_headers = cols["headers"][r]
        want = None if not rec["headers"] else [{"key": k, "value": v} for k, v in rec["headers"]]
        assert got_headers == want
    assert seen == set(produced)


def test_batch_read_without_headers_and_spark_sql(spark: Any, broker: Any, produced: dict) -> None:
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", "batch100k").load())
    assert "headers" not in df.columns
    from pyspark.sql import functions as F

    counts = {r["partition"]: (r["n"], r["lo"], r["hi"]) for r in df.groupBy("partition").agg(
        F.count(F.lit(1)).alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect()}
    expected: dict[int, list[int]] = {}
    for part, off in produced:
        expected.setdefault(part, []).append(off)
    assert counts == {p: (len(o), min(o), max(o)) for p, o in expected.items()}


def test_specific_offsets_min_partitions_and_assign(spark: Any, broker: Any, produced: dict) -> None:
    start = {("batch100k", 0): 10, ("batch100k", 1): -2, ("batch100k", 2): 30_000}
    end = {("batch100k", 0): 110, ("batch100k", 1): 5, ("batch100k", 2): -1}
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", "batch100k")
          .option("startingOffsets", offsets_to_json(start))
          .option("endingOffsets", offsets_to_json(end))
          .option("minPartitions", "7").load())
    assert df.rdd.getNumPartitions() >= 7
    capped = (spark.read.format("kafkalite")
              .option("kafka.bootstrap.servers", broker.bootstrap_servers)
              .option("subscribe", "batch100k")
              .option("startingOffsets", offsets_to_json(start))
              .option("endingOffsets", offsets_to_json(end))
              .option("maxRecordsPerPartition", "25").load())
    pieces = [len(rs) for rs in capped.select("offset").rdd.glom().collect()]
    last2 = max(off for part, off in produced if part == 2) + 1
    assert len(pieces) == 4 + 1 + -(-(last2 - 30_000) // 25) and max(pieces) <= 25   # ceil(size / 25) each
    assert sum(pieces) == 100 + 5 + last2 - 30_000
    got = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
    want = sorted([(0, o) for o in range(10, 110)] + [(1, o) for o in range(5)]
                  + [(2, o) for o in range(30_000, last2)])
    assert got == want

    assigned = (spark.read.format("kafkalite")
                .option("kafka.bootstrap.servers", broker.bootstrap_servers)
                .option("assign", '{"batch100k":[1]}')
                .option("endingOffsets", '{"batch100k":{"1":3}}').load())
    assert [(r["partition"], r["offset"], r["value"]) for r in assigned.collect()] == [
        (1, o, produced[(1, o)]["value"]) for o in range(3)]


def test_starting_offsets_by_timestamp(spark: Any, broker: Any, produced: dict) -> None:
    # Records' CreateTime is T0 + i, partition i % 3: timestamp T0 + 99_990 is record 99_990 (partition 0).
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", "batch100k")
          .option("startingTimestamp", str(T0 + 99_990)).load())
    got = sorted(int(r["value"].split(b"-")[1]) for r in df.select("value").collect() if r["value"])
    want = sorted(i for i in range(99_990, N) if record(i)["value"])
    assert got == want


def test_empty_range_and_option_errors(spark: Any, broker: Any, produced: dict) -> None:
    create_topic(broker.bootstrap_servers, "empty", 2)
    df = (spark.read.format("kafkalite")
          .option("kafka.bootstrap.servers", broker.bootstrap_servers)
          .option("subscribe", "empty").load())
    assert df.count() == 0
    with pytest.raises(Exception, match="can't be latest for batch"):
        (spark.read.format("kafkalite").option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("subscribe", "empty").option("startingOffsets", "latest").load().collect())


def test_log_append_time_topic(spark: Any, broker: Any) -> None:
    """timestampType is Kafka's TimestampType id: 1 for LogAppendTime, with the broker's append time."""
    import time

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topic = NewTopic("lat", 1, 1, config={"message.timestamp.type": "LogAppendTime"})
    for f in admin.create_topics([topic]).values():
        f.result(timeout=30)
    before_ms = int(time.time() * 1000)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(5):
        p.produce("lat", value=b"%d" % i, timestamp=1000 + i)  # CreateTime the broker must override
    assert p.flush(30) == 0
    rows = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("subscribe", "lat").load().selectExpr("timestampType", "unix_millis(timestamp) AS ms")
            .collect())
    assert [r["timestampType"] for r in rows] == [1] * 5
    assert all(r["ms"] >= before_ms - 1000 for r in rows)
