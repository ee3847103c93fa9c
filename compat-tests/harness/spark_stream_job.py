"""A Spark Structured Streaming driver that compat-tests/test_spark_kafka.py runs as a subprocess, SIGKILLs
mid-run and runs again on the same checkpoint.

    python -m harness.spark_stream_job FORMAT BOOTSTRAP TOPIC CHECKPOINT OUT MAX_OFFSETS_PER_TRIGGER

It reads TOPIC from the earliest offsets through FORMAT (``kafka``: Spark's connector; ``kafkalite``: ours),
``maxOffsetsPerTrigger`` per micro-batch, under ``Trigger.AvailableNow`` (every record present at the start,
in rate-limited batches, then the query ends), into a Parquet file sink (exactly once through its metadata
log). It prints ``started`` once the query runs and ``done`` when it ended; an error exits non-zero.
"""

from __future__ import annotations

import sys

from harness.eco import make_spark


def main(argv: list[str]) -> int:
    fmt, bootstrap, topic, checkpoint, out, max_offsets = argv
    spark = make_spark(f"eco-stream-{fmt}")
    df = (spark.readStream.format(fmt)
          .option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic)
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", max_offsets)
          .load())
    q = (df.selectExpr("partition", "offset", "CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    print("started", flush=True)
    q.awaitTermination()
    if q.exception() is not None:
        print(f"query failed: {q.exception()}", file=sys.stderr, flush=True)
        return 1
    print("done", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
