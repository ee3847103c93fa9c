"""Spark's own Kafka connector (``format("kafka")``, spark-sql-kafka-0-10 from ``tools/bootstrap.sh eco``) vs
kafkalite's PySpark data source (``format("kafkalite")``) on one job, in one run, against one kafkalite process.

One topic, 3 partitions, N records (10-byte keys, 100-byte values). One SparkSession (local[2]) holds both
formats. Alternately, best of ``--repeats``:

* **read**: ``spark.read.format(F)...load()`` written to Spark's ``noop`` sink: every record becomes a row;
* **write**: a cached DataFrame of the N (key, value) rows written with ``df.write.format(F)`` to a fresh
  3-partition topic (``mode("append")``, the one save mode both take); the rows written are counted back
  from the topic's end offsets.

Each format reads and writes once untimed first (JVM classes, Python workers, cached consumers). Reported, as
medians over the repeats: rows/s of each and ``ratio = kafkalite / kafka`` (the goal: >= 1.0, no slower than
Spark's own), and the profile of each write: CPU seconds of the Spark JVM, of the Python workers (children of the
JVM) and of the broker. A third writer, ``noop-python`` (a Python data source whose writer only iterates the
Arrow batches it is handed), gives the floor any Python data source pays for Spark's JVM -> Arrow -> Python
hand-off. CPU seconds barely move when other work shares the cores; wall times do.

    python -m bench.bench_spark_connectors [--quick] [--records N] [--repeats R]
"""
from __future__ import annotations

import argparse
import glob
import itertools
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench import _proc

BENCH_TIMEOUT = 900
TOPIC = "bench-connectors"
ROOT = Path(__file__).resolve().parents[1]
FORMATS = ("kafka", "kafkalite")
WRITERS = ("noop-python", *FORMATS)
_out = itertools.count()


def _noop_source() -> Any:
    """A Python data source named ``noop-python`` whose writer only walks the Arrow batches (pickled by value:
    defined here, in a function)."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class NoopWriter(DataSourceArrowWriter):
        def write(self, iterator: Any) -> WriterCommitMessage:
            for _batch in iterator:
                pass
            return WriterCommitMessage()

    class NoopPython(DataSource):
        @classmethod
        def name(cls) -> str:
            return "noop-python"

        def writer(self, schema: Any, overwrite: bool) -> Any:
            return NoopWriter()

    return NoopPython


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
    spark.dataSource.register(_noop_source())
    return spark


def _read(spark: Any, fmt: str, bootstrap: str) -> float:
    df = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC).load()
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def _write(rows: Any, fmt: str, bootstrap: str, n: int) -> float:
    from kafkalite.spark.admin import OffsetReader

    out = f"bench-connectors-out-{next(_out)}"
    if fmt != "noop-python":
        _create(bootstrap, out)
    t0 = time.perf_counter()
    rows.write.format(fmt).mode("append").option("kafka.bootstrap.servers", bootstrap).option("topic", out).save()
    dt = time.perf_counter() - t0
    if fmt != "noop-python":
        ends = OffsetReader({"bootstrap.servers": bootstrap}).latest([(out, p) for p in range(3)])
        assert sum(ends.values()) == n, (fmt, ends, n)
    return dt


def _cpu(jvm: int, broker: int) -> dict[str, float]:
    """CPU seconds so far: the Spark JVM alone, its descendants (PySpark's daemon and Python workers), the
    broker."""
    workers = sum(_proc.tree_cpu_s(p) for p in _proc.descendants(jvm) if _proc._ppid(p) == jvm)
    return {"jvm": _proc.tree_cpu_s(jvm) - workers, "python_workers": workers, "broker": _proc.tree_cpu_s(broker)}


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
        for fmt in WRITERS:
            _write(rows, fmt, broker.bootstrap, n)
        from pyspark import SparkContext

        jvm = SparkContext._gateway.proc.pid  # type: ignore[union-attr]
        read: dict[str, list[float]] = {f: [] for f in FORMATS}
        write: dict[str, list[float]] = {f: [] for f in WRITERS}
        cpu: dict[str, list[dict[str, float]]] = {f: [] for f in WRITERS}
        for _ in range(repeats):
            for fmt in FORMATS:
                read[fmt].append(_read(spark, fmt, broker.bootstrap))
            for fmt in WRITERS:
                before = _cpu(jvm, broker.proc.pid)
                write[fmt].append(_write(rows, fmt, broker.bootstrap, n))
                after = _cpu(jvm, broker.proc.pid)
                cpu[fmt].append({k: after[k] - before[k] for k in after})
        med = statistics.median
        rps = {f"{kind}_{fmt}_rows_per_s": round(n / med(times[fmt]))
               for kind, times in (("read", read), ("write", write)) for fmt in times}
        write_cpu = {f: {k: round(med(c[k] for c in cpu[f]), 3) for k in cpu[f][0]} for f in WRITERS}
        result: dict[str, Any] = {
            "records": n, "partitions": 3, "value_bytes": 100, "repeats": repeats, "statistic": "median", **rps,
            "ratio_read_kafkalite_vs_kafka": round(med(read["kafka"]) / med(read["kafkalite"]), 3),
            "ratio_write_kafkalite_vs_kafka": round(med(write["kafka"]) / med(write["kafkalite"]), 3),
            "target_ratio": 1.0,
            "write_cpu_seconds": write_cpu,
            "read_seconds": {f: [round(x, 3) for x in read[f]] for f in FORMATS},
            "write_seconds": {f: [round(x, 3) for x in write[f]] for f in WRITERS},
        }
        for kind, names in (("read", FORMATS), ("write", WRITERS)):
            for fmt in names:
                extra = ""
                if kind == "write":
                    c = write_cpu[fmt]
                    extra = (f"   cpu s: jvm {c['jvm']:.2f} python {c['python_workers']:.2f} "
                             f"broker {c['broker']:.2f}")
                print(f"{kind:5} {fmt:11} {rps[f'{kind}_{fmt}_rows_per_s']:12,} rows/s{extra}")
            print(f"{kind:5} ratio kafkalite/kafka {result[f'ratio_{kind}_kafkalite_vs_kafka']:.2f} (goal >= 1.0)")
        return result
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()


if __name__ == "__main__":
    main()
