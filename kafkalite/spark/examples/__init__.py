"""Runnable example pipelines on the ``kafkalite`` Spark format (``make spark-examples``).

Each module has a ``start(...)`` that builds and starts the streaming query (what a user copies) and a
``main()`` that runs it end to end against an embedded broker and prints the result:

- :mod:`.fraud` — windowed counts per card with event time and a watermark; late events within the watermark
  are counted, later ones dropped; window results to Kafka through the exactly-once sink.
- :mod:`.state_join` — a compacted topic read as a table (latest value per key, tombstones delete) joined to a
  stream of orders (stream-static join, the table re-read every micro-batch).
- :mod:`.to_parquet` — Kafka to Parquet files; Spark's file sink commits each batch's files in its
  ``_spark_metadata`` log, so a query killed mid-batch and restarted leaves every input row exactly once.

    python -m kafkalite.spark.examples.fraud        # (or state_join, to_parquet)
"""
