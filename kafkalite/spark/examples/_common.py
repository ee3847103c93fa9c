"""What the examples' ``main()`` share: a Spark session, topics, JSON events in, records out."""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import kafkalite.spark


def spark_session(app: str, master: str = "local[2]") -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName(app)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafkalite.spark.register(spark)
    return spark


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1, config=config or {})]).values():
        f.result(timeout=30)


def produce(bootstrap: str, topic: str, records: list[tuple[str | None, Any]], partition: int = -1) -> None:
    """``(key, value)`` pairs in order; a dict value is sent as JSON, ``None`` as a tombstone."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": True})
    for key, value in records:
        body = json.dumps(value).encode() if isinstance(value, dict) else value
        p.produce(topic, body, key.encode() if key is not None else None, partition)
    if p.flush(60):
        raise RuntimeError("records not acknowledged")


def read_topic(bootstrap: str, topic: str, partitions: int = 1, timeout_s: float = 120.0) -> list[tuple[str, Any]]:
    """Every record of ``topic`` as a read_committed consumer sees it: ``(key, JSON value)``, in offset order
    per partition."""
    from confluent_kafka import Consumer, KafkaError
    from confluent_kafka import TopicPartition as KTP

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "examples-verify", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_committed"})
    c.assign([KTP(topic, p, 0) for p in range(partitions)])
    out: list[tuple[str, Any]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"did not reach the end of {topic}")
            for m in c.consume(1000, 0.5):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(str(m.error()))
                    at_end.add(m.partition())
                else:
                    at_end.discard(m.partition())
                    out.append((m.key().decode() if m.key() is not None else None, json.loads(m.value())))
    finally:
        c.close()
    return out
