"""Kafka to Parquet files, each input row exactly once across a query killed mid-batch and restarted.

``events`` holds JSON ``{"id", "kind", "amount"}``. The query writes them as Parquet files under ``out/``,
with the Kafka partition and offset of each row, partitioned by ``kind``.

Exactly-once comes from Spark's file sink and the checkpoint, not from Kafka: every micro-batch's tasks write
new files, and the driver then appends the batch's list of files to ``out/_spark_metadata/<batch id>`` before
recording the batch in the checkpoint's commit log. A batch interrupted before that (a task that fails every
attempt, the driver killed) is re-run from the same Kafka offsets after the restart; the files its first
attempt left behind are in no metadata entry. Readers that go through Spark (``spark.read.parquet(out)``,
which reads ``_spark_metadata`` when it exists) therefore see each row once; a tool that lists the directory
itself can see an interrupted attempt's files as well.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import kafkalite
from kafkalite.spark.examples._common import create_topic, produce, spark_session

TOPIC = "events"
KINDS = ("view", "cart", "buy")


def parse(spark: Any, bootstrap: str, *, topic: str = TOPIC, max_per_trigger: int | None = None) -> Any:
    """The events as rows: id, kind, amount, and where each came from (partition, offset)."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    if max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
    return (reader.load()
            .select(F.from_json(F.col("value").cast("string"), "id LONG, kind STRING, amount DOUBLE").alias("e"),
                    "partition", "offset")
            .select("e.*", "partition", "offset"))


def write(df: Any, out: str, checkpoint: str, *, available_now: bool = False) -> Any:
    w = (df.writeStream.format("parquet").partitionBy("kind").option("path", out)
         .option("checkpointLocation", checkpoint))
    if available_now:
        w = w.trigger(availableNow=True)
    return w.start()


def start(spark: Any, bootstrap: str, out: str, checkpoint: str, **kw: Any) -> Any:
    available_now = kw.pop("available_now", False)
    return write(parse(spark, bootstrap, **kw), out, checkpoint, available_now=available_now)


def events(n: int) -> list[tuple[str | None, Any]]:
    return [(str(i), {"id": i, "kind": KINDS[i % 3], "amount": i / 100}) for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=3000)
    args = ap.parse_args()
    with kafkalite.Broker() as broker, tempfile.TemporaryDirectory() as tmp:
        bs = broker.bootstrap_servers
        create_topic(bs, TOPIC, 3)
        produce(bs, TOPIC, events(args.events))
        spark = spark_session("kafka-to-parquet")
        out, ckpt = str(Path(tmp) / "out"), str(Path(tmp) / "ckpt")
        q = start(spark, bs, out, ckpt, max_per_trigger=args.events // 3)
        q.processAllAvailable()
        q.stop()
        rows = spark.read.parquet(out)
        print(f"{rows.count()} rows, {rows.select('id').distinct().count()} distinct ids, by kind:")
        rows.groupBy("kind").count().orderBy("kind").show()
        spark.stop()


if __name__ == "__main__":
    main()
