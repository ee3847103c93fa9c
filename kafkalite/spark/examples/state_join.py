"""A compacted topic as a state table (latest value per key) joined to a stream.

``customers`` is a compacted topic (``cleanup.policy=compact``): key = customer id, value = JSON ``{"name",
"tier"}``, a null value (tombstone) deletes the customer. It is the changelog of a table, and the table is its
latest value per key — what Kafka's compaction keeps, and what a reader must compute itself anyway, since
compaction runs behind the head of the log and a reader also sees older values of a key that the cleaner has
not removed yet.

``orders`` is a stream of JSON ``{"order", "customer", "cents"}``. The query enriches each order with its
customer's current name and tier (a stream-static inner join: orders of unknown or deleted customers are
dropped) and writes ``{"order", "customer", "cents", "name", "tier"}`` to ``orders_enriched`` through the
exactly-once ``kafkalite`` sink.

When the table is read: the ``kafkalite`` batch read resolves ``endingOffsets=latest`` when Spark plans the
scan, and PySpark plans a Python data source's scan once per query (the same plan serves every micro-batch),
so the query joins against the table as it was when the query started; updates made while it runs apply from
its next start (``main()`` shows it: it restarts the query from its checkpoint after updating the table).
A pipeline that must see every update at once re-reads the table inside ``foreachBatch`` instead (the write
there is a batch write, at-least-once).
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import kafkalite
from kafkalite.spark.examples._common import create_topic, produce, read_topic, spark_session

TABLE, STREAM, OUT = "customers", "orders", "orders_enriched"
COMPACTED = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}


def latest_per_key(spark: Any, bootstrap: str, topic: str) -> Any:
    """The table a compacted topic stands for: the value of each key's last record, tombstoned keys left out.

    A key always lives in one partition, so its last record is its highest offset.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    log = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
           .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    last = Window.partitionBy("key").orderBy(F.col("offset").desc())
    return (log.where(F.col("key").isNotNull()).withColumn("rn", F.row_number().over(last))
            .where((F.col("rn") == 1) & F.col("value").isNotNull())
            .select(F.col("key").cast("string").alias("customer"),
                    F.from_json(F.col("value").cast("string"), "name STRING, tier STRING").alias("c"))
            .select("customer", "c.name", "c.tier"))


def start(spark: Any, bootstrap: str, checkpoint: str, *, table: str = TABLE, stream: str = STREAM,
          out: str = OUT) -> Any:
    from pyspark.sql import functions as F

    customers = latest_per_key(spark, bootstrap, table)
    orders = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", stream).option("startingOffsets", "earliest").load()
              .select(F.from_json(F.col("value").cast("string"), "order STRING, customer STRING, cents LONG")
                      .alias("o")).select("o.*"))
    enriched = orders.join(customers, "customer", "inner")
    return (enriched.select(F.col("order").alias("key"),
                            F.to_json(F.struct("order", "customer", "cents", "name", "tier")).alias("value"))
            .writeStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap).option("topic", out)
            .option("exactlyOnce", "true").option("checkpointLocation", checkpoint).start())


def _orders(lo: int, hi: int) -> list[tuple[str | None, Any]]:
    return [(f"o{i}", {"order": f"o{i}", "customer": f"c{1 + i % 4}", "cents": 100 * i}) for i in range(lo, hi)]


# Two runs of the query on one checkpoint: (table records written before it, orders written before it).
PHASES = [
    ([("c1", {"name": "Ada", "tier": "gold"}), ("c2", {"name": "Bob", "tier": "basic"}),
      ("c3", {"name": "Cy", "tier": "basic"}),
      ("c2", {"name": "Bob", "tier": "silver"})],         # c2 updated: the join must use "silver"
     _orders(0, 8)),                                       # c4 has no customer record: its orders drop out
    ([("c1", {"name": "Ada", "tier": "platinum"}),        # c1 updated while the first run was done
      ("c3", None)],                                       # c3 deleted (tombstone)
     _orders(8, 12)),
]
# The joined output, exactly: order -> (customer, cents, name, tier).
EXPECTED = {
    "o0": ("c1", 0, "Ada", "gold"), "o1": ("c2", 100, "Bob", "silver"), "o2": ("c3", 200, "Cy", "basic"),
    "o4": ("c1", 400, "Ada", "gold"), "o5": ("c2", 500, "Bob", "silver"), "o6": ("c3", 600, "Cy", "basic"),
    "o8": ("c1", 800, "Ada", "platinum"), "o9": ("c2", 900, "Bob", "silver"),
}


def run(spark: Any, bootstrap: str, checkpoint: str) -> dict[str, tuple[str, int, str, str]]:
    """Each phase: write its table records and orders, run the query until it has caught up, stop it. Returns
    the joined output as a read_committed consumer sees it: order -> (customer, cents, name, tier); an order
    written twice would raise."""
    for table_updates, orders in PHASES:
        produce(bootstrap, TABLE, table_updates)
        produce(bootstrap, STREAM, orders)
        q = start(spark, bootstrap, checkpoint)
        try:
            q.processAllAvailable()
        finally:
            q.stop()
    out: dict[str, tuple[str, int, str, str]] = {}
    for order, r in read_topic(bootstrap, OUT, 2):
        if order in out:
            raise AssertionError(f"order {order} written twice")
        out[order] = (r["customer"], r["cents"], r["name"], r["tier"])
    return out


def main() -> None:
    with kafkalite.Broker() as broker, tempfile.TemporaryDirectory() as tmp:
        bs = broker.bootstrap_servers
        create_topic(bs, TABLE, 2, COMPACTED)
        create_topic(bs, STREAM, 2)
        create_topic(bs, OUT, 2)
        spark = spark_session("state-join")
        for order, row in sorted(run(spark, bs, str(Path(tmp) / "ckpt")).items(), key=lambda kv: int(kv[0][1:])):
            print(order, row)
        spark.stop()


if __name__ == "__main__":
    main()
