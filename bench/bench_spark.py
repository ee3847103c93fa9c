"""Batch-read throughput of the ``kafkalite`` PySpark source vs a plain confluent-kafka consumer, same run.

A kafkalite broker runs as a subprocess (``bench._brokers``); one topic with 3 partitions is filled with N
records (100-byte values, 10-byte keys). Then, alternately and best of ``--repeats``:

* **consumer**: one confluent-kafka ``Consumer`` assigned to the 3 partitions reads to the end, touching
  key, value, offset and timestamp of each message (what a row needs);
* **connector**: ``spark.read.format("kafkalite")...load()`` written to Spark's ``noop`` sink (local[2]),
  i.e. every record becomes a Spark row through the connector's Arrow batches; Python workers are warmed up
  first so the JVM/worker start-up is not counted.

Reported: rows/s of both and ``ratio = connector / consumer`` (target >= 0.5). The consumer uses one core;
the connector may use two (local[2]), which is what a user gets on this machine.

Then the sink, alternately ``--repeats`` times each: a streaming query (``Trigger.AvailableNow``, one
micro-batch) copies the topic to a fresh 3-partition topic through the ``kafkalite`` sink, at-least-once
(default) vs ``exactlyOnce=true`` (transactions committed by the driver); rows/s are timed from ``start()`` to
the query's end (so they include the per-query planning both modes pay), the medians give
``ratio_eos_vs_at_least_once``.

    python -m bench.bench_spark [--quick] [--records N] [--repeats R]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

BENCH_TIMEOUT = 900
TOPIC = "bench-spark"


def _fill(bootstrap: str, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 3, 1)]).values():
        f.result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "compression.type": "none"})
    value = b"x" * 100
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"%010d" % i, partition=i % 3)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def _consumer_read(bootstrap: str, n: int) -> float:
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as KTP

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-plain", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    t0 = time.perf_counter()
    c.assign([KTP(TOPIC, p, 0) for p in range(3)])
    rows = 0
    eof: set[int] = set()
    while len(eof) < 3:
        for m in c.consume(10_000, 1.0):
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            m.key(), m.value(), m.offset(), m.timestamp()
            rows += 1
    dt = time.perf_counter() - t0
    c.close()
    assert rows == n, (rows, n)
    return dt


def _spark() -> Any:
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkalite.spark

    spark = (SparkSession.builder.master("local[2]").appName("bench-spark")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafkalite.spark.register(spark)
    return spark


def _connector_read(spark: Any, bootstrap: str, n: int) -> float:
    df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", TOPIC).load())
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def _sink_write(spark: Any, bootstrap: str, n: int, run: str, exactly_once: bool, tmp: str) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    out = f"bench-sink-{run}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(out, 3, 1)]).values():
        f.result(timeout=30)
    t0 = time.perf_counter()
    q = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", TOPIC).option("startingOffsets", "earliest").load().selectExpr("key", "value")
         .writeStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap).option("topic", out)
         .option("exactlyOnce", str(exactly_once).lower())
         .option("checkpointLocation", os.path.join(tmp, run)).trigger(availableNow=True).start())
    q.awaitTermination(BENCH_TIMEOUT)
    dt = time.perf_counter() - t0
    assert not q.isActive and q.exception() is None, q.exception()
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    assert rows == n, (rows, n)
    return dt


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--records", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    opts = ap.parse_args(sys.argv[1:])
    n = opts.records or (60_000 if opts.quick else 300_000)
    repeats = opts.repeats or (2 if opts.quick else 3)

    from bench import _brokers

    broker = _brokers.start("kafkalite")
    spark = None
    try:
        t0 = time.perf_counter()
        _fill(broker.bootstrap, n)
        fill_s = time.perf_counter() - t0
        spark = _spark()
        # Warm-up: starts the Python workers and caches a consumer in each.
        count = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", broker.bootstrap)
                 .option("subscribe", TOPIC).load().count())
        assert count == n, (count, n)
        plain, conn = [], []
        for _ in range(repeats):
            plain.append(_consumer_read(broker.bootstrap, n))
            conn.append(_connector_read(spark, broker.bootstrap, n))
        plain_rps, conn_rps = n / min(plain), n / min(conn)
        import statistics
        import tempfile

        alo, eos = [], []
        with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
            _sink_write(spark, broker.bootstrap, n, "warm-up", False, tmp)  # first streaming query: JIT, workers
            for i in range(repeats):
                alo.append(_sink_write(spark, broker.bootstrap, n, f"alo-{i}", False, tmp))
                eos.append(_sink_write(spark, broker.bootstrap, n, f"eos-{i}", True, tmp))
        alo_rps, eos_rps = n / statistics.median(alo), n / statistics.median(eos)
        result = {
            "records": n,
            "partitions": 3,
            "value_bytes": 100,
            "produce_rows_per_s": round(n / fill_s),
            "consumer_rows_per_s": round(plain_rps),
            "connector_rows_per_s": round(conn_rps),
            "ratio_connector_vs_consumer": round(conn_rps / plain_rps, 3),
            "target_ratio": 0.5,
            "consumer_seconds": [round(x, 3) for x in plain],
            "connector_seconds": [round(x, 3) for x in conn],
            "sink_at_least_once_rows_per_s": round(alo_rps),
            "sink_exactly_once_rows_per_s": round(eos_rps),
            "ratio_eos_vs_at_least_once": round(eos_rps / alo_rps, 3),
            "sink_at_least_once_seconds": [round(x, 3) for x in alo],
            "sink_exactly_once_seconds": [round(x, 3) for x in eos],
        }
        print(f"consumer  {plain_rps:12,.0f} rows/s  (best of {repeats}: {min(plain):.2f}s)")
        print(f"connector {conn_rps:12,.0f} rows/s  (best of {repeats}: {min(conn):.2f}s)")
        print(f"ratio     {conn_rps / plain_rps:.2f}  (target >= 0.5)")
        print(f"sink at-least-once {alo_rps:12,.0f} rows/s, exactly-once {eos_rps:12,.0f} rows/s (medians of "
              f"{repeats}); ratio {eos_rps / alo_rps:.2f}")
        return result
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()


if __name__ == "__main__":
    main()
