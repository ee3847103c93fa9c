"""Fraud-style windowed aggregation: card transactions counted per card and 10-second event-time window.

Input: topic ``card_tx``, JSON ``{"card": "A", "amount": 12.5, "ts": <epoch ms>}`` where ``ts`` is the event
time (when the card was used), which may be well before the record reached Kafka. Output: topic
``card_windows``, one record per (card, window) once the window is final, keyed by card:
``{"card", "start", "end", "n", "total", "suspicious"}`` with ``suspicious = n >= 3``.

Event time and late data, as Spark defines them for ``withWatermark("event_time", "10 seconds")``:

- after each micro-batch Spark sets the watermark to (max event time seen) - 10 s; the next batch uses it;
- in append mode a window is emitted once, when the watermark passes its end, and its state is dropped;
- an event that arrives late but whose window is still open (window end > watermark) is counted;
- an event whose window end is at or below the watermark is too late and dropped (Spark counts it in the
  progress metric ``numRowsDroppedByWatermark``).

The sink is the ``kafkalite`` sink with ``exactlyOnce=true``: each window result reaches read_committed
readers once, across crashes and restarts of the query.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import kafkalite
from kafkalite.spark.examples._common import create_topic, produce, read_topic, spark_session

IN_TOPIC, OUT_TOPIC = "card_tx", "card_windows"
WINDOW, DELAY = "10 seconds", "10 seconds"
SUSPICIOUS = 3


def start(spark: Any, bootstrap: str, checkpoint: str, *, in_topic: str = IN_TOPIC, out_topic: str = OUT_TOPIC,
          max_per_trigger: int | None = None, available_now: bool = False) -> Any:
    """Start the query; ``max_per_trigger``/``available_now`` bound its micro-batches (tests, backfills)."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", in_topic).option("startingOffsets", "earliest"))
    if max_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_per_trigger))
    tx = (reader.load()
          .select(F.from_json(F.col("value").cast("string"), "card STRING, amount DOUBLE, ts LONG").alias("t"))
          .select("t.card", "t.amount", F.timestamp_millis("t.ts").alias("event_time")))
    windows = (tx.withWatermark("event_time", DELAY)
               .groupBy(F.window("event_time", WINDOW), "card")
               .agg(F.count("*").alias("n"), F.sum("amount").alias("total")))
    out = windows.select(
        F.col("card").alias("key"),
        F.to_json(F.struct("card", F.unix_millis(F.col("window.start")).alias("start"),
                           F.unix_millis(F.col("window.end")).alias("end"), "n",
                           F.round("total", 2).alias("total"),
                           (F.col("n") >= SUSPICIOUS).alias("suspicious"))).alias("value"))
    writer = (out.writeStream.outputMode("append").format("kafkalite")
              .option("kafka.bootstrap.servers", bootstrap).option("topic", out_topic)
              .option("exactlyOnce", "true").option("checkpointLocation", checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


# A crafted stream (seconds after T0, card, amount), in batches of 4 (``maxOffsetsPerTrigger=4`` on one
# partition makes the batch boundaries exact). Spark (3.4+) gives each stateful operator two watermarks per
# batch: windows are emitted (evicted) when they end at or before the watermark computed after the previous
# batch, and an event is dropped as too late when its window ended at or before the watermark of the batch
# before that one, i.e. when the window was already emitted. Watermark = max event time so far - 10 s.
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BATCHES = [
    [(1, "A", 10.0), (2, "A", 20.0), (3, "A", 30.0), (5, "B", 5.0)],        # max 5: watermark -5
    [(12, "A", 1.0), (14, "B", 2.0), (25, "A", 3.0), (26, "B", 4.0)],       # max 26: watermark 16
    [(27, "A", 5.0), (28, "B", 6.0), (29, "A", 7.0),                        # emits [0,10) (ends <= 16)
     (11, "A", 8.0)],   # 18 s late, but its window [10,20) is still open: counted; max 29: watermark 19
    [(4, "A", 99.0),    # too late: its window [0,10) was emitted in the previous batch: dropped
     (9, "B", 99.0),    # too late: dropped
     (18, "A", 9.0),    # late (18 < 19) but window [10,20) not yet emitted: counted
     (100, "Z", 1.0)],                                                       # max 100: watermark 90
    # then, the input drained and the watermark moved, Spark runs one micro-batch without data
    # (spark.sql.streaming.noDataMicroBatches.enabled): it emits every window ending <= 90. Z's window
    # [100,110) stays open: nothing has moved the watermark past 110 yet.
]
# What the query must write, exactly: (card, window start s, end s, transactions, total, suspicious).
EXPECTED = [("A", 0, 10, 3, 60.0, True), ("B", 0, 10, 1, 5.0, False),
            ("A", 10, 20, 3, 18.0, True), ("B", 10, 20, 1, 2.0, False),   # A: 12, 11 (late), 18 (late)
            ("A", 20, 30, 3, 15.0, True), ("B", 20, 30, 2, 10.0, False)]
TOO_LATE = 2


def events() -> list[tuple[str, dict[str, Any]]]:
    return [(card, {"card": card, "amount": amount, "ts": T0 + sec * 1000})
            for batch in BATCHES for sec, card, amount in batch]


def run(spark: Any, bootstrap: str, checkpoint: str, *, in_topic: str = IN_TOPIC,
        out_topic: str = OUT_TOPIC) -> tuple[list[tuple[str, int, int, int, float, bool]], int]:
    """Write the crafted stream to a fresh one-partition ``in_topic``, run the query over it (4 events per
    micro-batch) and return the windows a read_committed reader sees in ``out_topic`` — (card, start s, end s,
    count, total, suspicious), ordered by window then card — and the number of events Spark dropped as too
    late."""
    create_topic(bootstrap, in_topic, 1)
    create_topic(bootstrap, out_topic, 1)
    produce(bootstrap, in_topic, events(), partition=0)
    q = start(spark, bootstrap, checkpoint, in_topic=in_topic, out_topic=out_topic, max_per_trigger=4,
              available_now=True)
    q.awaitTermination(600)
    if q.isActive or q.exception() is not None:
        raise RuntimeError(f"the query did not finish: {q.exception()}")
    dropped = sum(op.get("numRowsDroppedByWatermark", 0) for p in q.recentProgress
                  for op in p.get("stateOperators", []))
    windows = [(w["card"], (w["start"] - T0) // 1000, (w["end"] - T0) // 1000, w["n"], w["total"],
                w["suspicious"]) for _, w in read_topic(bootstrap, out_topic)]
    return sorted(windows, key=lambda w: (w[1], w[0])), dropped


def main() -> None:
    with kafkalite.Broker() as broker, tempfile.TemporaryDirectory() as tmp:
        bs = broker.bootstrap_servers
        spark = spark_session("fraud-windows")
        windows, dropped = run(spark, bs, str(Path(tmp) / "ckpt"))
        for card, start_s, end_s, n, total, suspicious in windows:
            print(f"card {card} window [{start_s:>3}s, {end_s:>3}s): {n} tx, total {total}"
                  f"{'  SUSPICIOUS' if suspicious else ''}")
        print(f"events dropped as too late: {dropped}")
        spark.stop()


if __name__ == "__main__":
    main()
