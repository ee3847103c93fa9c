"""PySpark source and sink for Kafka topics, on PySpark 4's Python Data Source API.

The connector is a Kafka *client* (confluent-kafka), so it reads and writes kafkalite and any other
Kafka-compatible broker, with the options, row schema and offsets JSON of Spark's built-in ``kafka`` format::

    import kafkalite.spark
    kafkalite.spark.register(spark)
    df = (spark.readStream.format("kafkalite")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders")
          .load())

Spark refuses to let a Python data source take the name ``kafka``, hence ``kafkalite``. This package imports
nothing of the broker.
"""
from __future__ import annotations

from typing import Any

FORMAT = "kafkalite"

__all__ = ["FORMAT", "register"]


def register(spark: Any) -> None:
    """Make ``spark.read/readStream/write/writeStream.format("kafkalite")`` available in ``spark``."""
    # optional: pyspark (the spark extra), only when registering
    from kafkalite.spark.source import KafkaLiteDataSource

    spark.dataSource.register(KafkaLiteDataSource)
