"""Writes through the ``kafkalite`` PySpark sink: a 100,000-row streaming write lands exactly once per row.

The rows are read back with a plain confluent-kafka consumer, not through the connector, so the sink is
checked independently of the source.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("pyspark", "confluent_kafka")   # the module imports them: a loud skip, or a failure under CI=true

from confluent_kafka import Consumer, KafkaError  # noqa: E402
from confluent_kafka import TopicPartition as KTP  # noqa: E402

from kafkalite.tests.clients.test_spark_batch import create_topic, make_spark  # noqa: E402

N = 100_000


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark()
    yield s
    s.stop()


def consume_all(bootstrap: str, topic: str, partitions: int) -> list[Any]:
    """Every record of ``topic`` (read to the end of each partition) with a plain consumer."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    c.assign([KTP(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    at_end: set[int] = set()
    idle = 0
    while len(at_end) < partitions and idle < 60:
        msgs = c.consume(10_000, 1.0)
        idle = 0 if msgs else idle + 1
        for m in msgs:
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                at_end.add(m.partition())
            else:
                at_end.discard(m.partition())
                out.append(m)
    c.close()
    assert len(at_end) == partitions, "did not reach the end of every partition"
    return out


def test_streaming_write_100k_rows_exactly_once(spark: Any, broker: Any, tmp_path: Path) -> None:
    create_topic(broker.bootstrap_servers, "sink100k", 3)
    src = tmp_path / "src"
    spark.range(N).repartition(4).write.parquet(str(src))
    rows = (spark.readStream.schema("id long").parquet(str(src))
            .selectExpr("CAST(id AS STRING) AS key",
                        "CAST(concat('order-', id) AS BINARY) AS value",
                        "array(named_struct('key', 'src', 'value', CAST(id % 7 AS STRING)::binary)) AS headers"))
    q = (rows.writeStream.format("kafkalite")
         .option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("topic", "sink100k")
         .option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert not q.isActive and q.exception() is None

    msgs = consume_all(broker.bootstrap_servers, "sink100k", 3)
    keys = [int(m.key()) for m in msgs]
    assert len(keys) == N and sorted(keys) == list(range(N))  # every row once, none twice
    for m in msgs:
        i = int(m.key())
        assert m.value() == f"order-{i}".encode()
        assert m.headers() == [("src", str(i % 7).encode())]
    # Keys are partitioned with murmur2 like Java's producer (Spark's sink): all 3 partitions get rows.
    assert {m.partition() for m in msgs} == {0, 1, 2}


def test_batch_write_topic_partition_columns_and_nulls(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap_servers, "bw-a", 2)
    create_topic(broker.bootstrap_servers, "bw-b", 1)
    df = spark.createDataFrame(
        [("bw-a", 1, None, "v1"), ("bw-b", None, "k2", None), ("bw-a", 0, "k3", "v3"), ("bw-a", 1, "k4", "")],
        "topic string, partition int, key string, value string")
    df.write.format("kafkalite").mode("append").option("kafka.bootstrap.servers", broker.bootstrap_servers).save()
    a = consume_all(broker.bootstrap_servers, "bw-a", 2)
    b = consume_all(broker.bootstrap_servers, "bw-b", 1)
    assert sorted((m.partition(), m.key() or b"<null>", m.value()) for m in a) == [
        (0, b"k3", b"v3"), (1, b"<null>", b"v1"), (1, b"k4", b"")]
    assert [(m.key(), m.value()) for m in b] == [(b"k2", None)]


def test_sink_schema_errors(spark: Any, broker: Any) -> None:
    no_topic = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception, match="topic option required"):
        no_topic.write.format("kafkalite").mode("append").option(
            "kafka.bootstrap.servers", broker.bootstrap_servers).save()
    bad_value = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match="Value attribute type must be a StringType or BinaryType"):
        bad_value.write.format("kafkalite").mode("append").option(
            "kafka.bootstrap.servers", broker.bootstrap_servers).option("topic", "x").save()
