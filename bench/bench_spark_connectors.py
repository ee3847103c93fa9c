"""Spark's own Kafka connector (``format("kafka")``, spark-sql-kafka-0-10 from ``tools/bootstrap.sh eco``) vs
kafkalite's PySpark data source (``format("kafkalite")``) on one job, in one run, against one kafkalite process.

One topic, 3 partitions, N records (10-byte keys, 100-byte values). One SparkSession (local[2]) holds both
formats. Alternately, best of ``--repeats``:

* **read**: ``spark.read.format(F)...load()`` written to Spark's ``noop`` sink: every record becomes a row;
* **write**: a cached DataFrame of the N (key, value) rows written with ``df.write.format(F)`` to a fresh
  3-partition topic (``mode("append")``, the one save mode both take); the rows written are counted back
  from the topic's end offsets.

Each format reads and writes once untimed first (JVM classes, Python workers, cached consumers). Reported:
rows/s of each and ``ratio = kafkalite / kafka`` (the goal: >= 1.0, no slower than Spark's own).

    python -m bench.bench_spark_connectors [--quick] [--records N] [--repeats R]
"""
from __future__ import annotations

import argparse
import glob
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any

BENCH_TIMEOUT = 900
TOPIC = "bench-connectors"
ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("kafka", "kafkalite")
_out = itertools.count()


def _create(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # held until the futures are done
    for f in admin.create_topics([NewTopic(name, 3, 1)]).values():
        f.result(timeout=30)


def _fill(bootstrap: str, n: int) -> None:
    from confluent_kafka import Producer

    _create(bootstrap, TOPIC)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    value = b"x" * 100
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"%010d" % i, partition=i % 3)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def _spark() -> Any:
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkalite.spark

    jars = sorted(glob.glob(str(ROOT / ".deps" / "eco" / "spark-kafka" / "*.jar")))
    if not any("spark-sql-kafka" in j for j in jars):
        raise SystemExit("Spark's Kafka connector is not in .deps/eco/spark-kafka: run tools/bootstrap.sh eco")
    spark = (SparkSession.builder.master("local[2]").appName("bench-spark-connectors")
             .config("spark.jars", ",".join(jars))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "1g").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafkalite.spark.register(spark)
    return spark


def _read(spark: Any, fmt: str, bootstrap: str) -> float:
    df = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC).load()
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def _write(rows: Any, fmt: str, bootstrap: str, n: int) -> float:
    from kafkalite.spark.admin import OffsetReader

    out = f"bench-connectors-out-{next(_out)}"
    _create(bootstrap, out)
    t0 = time.perf_counter()
    rows.write.format(fmt).mode("append").option("kafka.bootstrap.servers", bootstrap).option("topic", out).save()
    dt = time.perf_counter() - t0
    ends = OffsetReader({"bootstrap.servers": bootstrap}).latest([(out, p) for p in range(3)])
    assert sum(ends.values()) == n, (fmt, ends, n)
    return dt


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--records", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    opts = ap.parse_args(sys.argv[1:])
    n = opts.records or (50_000 if opts.quick else 200_000)
    repeats = opts.repeats or (2 if opts.quick else 3)

    from bench import _brokers

    broker = _brokers.start("kafkalite")
    spark = None
    try:
        _fill(broker.bootstrap, n)
        spark = _spark()
        rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
                .option("subscribe", TOPIC).load().selectExpr("key", "value").cache())
        assert rows.count() == n
        for fmt in FORMATS:  # warm-up, untimed
            count = (spark.read.format(fmt).option("kafka.bootstrap.servers", broker.bootstrap)
                     .option("subscribe", TOPIC).load().count())
            assert count == n, (fmt, count, n)
            _write(rows, fmt, broker.bootstrap, n)
        read: dict[str, list[float]] = {f: [] for f in FORMATS}
        write: dict[str, list[float]] = {f: [] for f in FORMATS}
        for _ in range(repeats):
            for fmt in FORMATS:
                read[fmt].append(_read(spark, fmt, broker.bootstrap))
                write[fmt].append(_write(rows, fmt, broker.bootstrap, n))
        rps = {f"{kind}_{fmt}_rows_per_s": round(n / min(times[fmt]))
               for kind, times in (("read", read), ("write", write)) for fmt in FORMATS}
        result: dict[str, Any] = {
            "records": n, "partitions": 3, "value_bytes": 100, "repeats": repeats, **rps,
            "ratio_read_kafkalite_vs_kafka": round(min(read["kafka"]) / min(read["kafkalite"]), 3),
            "ratio_write_kafkalite_vs_kafka": round(min(write["kafka"]) / min(write["kafkalite"]), 3),
            "target_ratio": 1.0,
            "read_seconds": {f: [round(x, 3) for x in read[f]] for f in FORMATS},
            "write_seconds": {f: [round(x, 3) for x in write[f]] for f in FORMATS},
        }
        for kind in ("read", "write"):
            for fmt in FORMATS:
                print(f"{kind:5} {fmt:9} {rps[f'{kind}_{fmt}_rows_per_s']:12,} rows/s")
            print(f"{kind:5} ratio kafkalite/kafka {result[f'ratio_{kind}_kafkalite_vs_kafka']:.2f} (goal >= 1.0)")
        return result
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()


if __name__ == "__main__":
    main()
