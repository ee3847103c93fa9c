"""Streaming reads through the ``kafkalite`` PySpark source: triggers, read limits, checkpoint recovery.

Queries write to Spark's file sink (exactly-once through its metadata log), so "every record exactly once"
can be checked after query restarts and broker restarts by reading the sink back. The broker keeps its data
directory and port across restarts, as a real deployment would.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("pyspark", "confluent_kafka")   # the module imports them: a loud skip, or a failure under CI=true

from confluent_kafka import Producer  # noqa: E402

import kafkalite  # noqa: E402
from kafkalite.tests.clients.test_spark_batch import create_topic, make_spark  # noqa: E402

WAIT_S = 120.0  # generous: the CI machine is shared; this bounds a hang, it is not a speed assertion


class RestartableBroker:
    """An embedded broker that can be stopped and started again on the same port and data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.broker = kafkalite.Broker(data_dir=data_dir).start()
        self.port = self.broker.port
        self.bootstrap_servers = self.broker.bootstrap_servers

    def restart(self) -> None:
        self.broker.stop()
        try:
            self.broker = kafkalite.Broker(data_dir=self.data_dir, port=self.port).start()
        except (OSError, RuntimeError):  # the old listener's port may take a moment to be free again
            time.sleep(2.0)
            self.broker = kafkalite.Broker(data_dir=self.data_dir, port=self.port).start()

    def stop(self) -> None:
        self.broker.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestartableBroker]:
    b = RestartableBroker(tmp_path_factory.mktemp("stream-broker"))
    yield b
    b.stop()


def produce(bootstrap: str, topic: str, first: int, count: int, partitions: int = 3) -> None:
    """Records ``first .. first+count-1``: key and value are the decimal number, partition = number % n."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10, "enable.idempotence": True})
    for i in range(first, first + count):
        while True:
            try:
                p.produce(topic, value=str(i).encode(), key=str(i).encode(), partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def sink_values(spark: Any, out: Path) -> list[int]:
    if not (out / "_spark_metadata").exists():
        return []
    return sorted(int(r[0]) for r in spark.read.schema("v string").parquet(str(out)).select("v").collect())


def wait_for(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def stream(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (spark.readStream.format("kafkalite")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("startingOffsets", "earliest"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load().selectExpr("CAST(value AS STRING) AS v", "partition", "offset")


def committed_records(checkpoint: Path) -> int:
    """Records up to the newest micro-batch Spark committed (``commits/<id>`` exists), from ``offsets/<id>``.

    Read from the checkpoint files, so waiting costs no Spark job."""
    commits = checkpoint / "commits"
    ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.exists() else []
    if not ids:
        return 0
    offsets = json.loads((checkpoint / "offsets" / str(max(ids))).read_text().splitlines()[-1])
    return sum(sum(parts.values()) for parts in offsets.values())


def last_checkpoint_offsets(checkpoint: Path) -> dict[str, Any]:
    """The source offset of the newest batch in Spark's offset log (``offsets/<batch id>``)."""
    newest = max((checkpoint / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    lines = newest.read_text().splitlines()
    return json.loads(lines[-1])


def test_available_now_honours_max_offsets_and_resumes_from_checkpoint(spark: Any, broker: RestartableBroker,
                                                                       tmp_path: Path) -> None:
    create_topic(broker.bootstrap_servers, "an", 3)
    produce(broker.bootstrap_servers, "an", 0, 1200)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> Any:
        q = (stream(spark, broker.bootstrap_servers, "an", maxOffsetsPerTrigger="400")
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
        q.awaitTermination(WAIT_S)
        assert not q.isActive
        assert q.exception() is None
        return q

    q = run()
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 1200 and max(sizes) <= 400 and len(sizes) >= 3
    assert sink_values(spark, out) == list(range(1200))
    # The checkpoint holds Spark's KafkaSourceOffset structure: the next offset to read per partition.
    assert last_checkpoint_offsets(ckpt) == {"an": {"0": 400, "1": 400, "2": 400}}

    produce(broker.bootstrap_servers, "an", 1200, 600)
    run()
    assert sink_values(spark, out) == list(range(1800))
    assert last_checkpoint_offsets(ckpt) == {"an": {"0": 600, "1": 600, "2": 600}}


def test_processing_time_trigger_survives_query_and_broker_restarts(spark: Any, broker: RestartableBroker,
                                                                    tmp_path: Path) -> None:
    create_topic(broker.bootstrap_servers, "pt", 3)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def start() -> Any:
        return (stream(spark, broker.bootstrap_servers, "pt", maxOffsetsPerTrigger="700")
                .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
                .trigger(processingTime="300 milliseconds").start())

    q = start()
    produce(broker.bootstrap_servers, "pt", 0, 2000)
    wait_for(lambda: committed_records(ckpt) >= 2000, "the first 2000 records")
    assert max(p["numInputRows"] for p in q.recentProgress) <= 700

    # 1. Query restart: stop mid-stream, produce while it is down, start again from the checkpoint.
    produce(broker.bootstrap_servers, "pt", 2000, 1000)
    q.stop()
    produce(broker.bootstrap_servers, "pt", 3000, 1000)
    q = start()
    wait_for(lambda: committed_records(ckpt) >= 4000, "4000 records after the query restart")
    assert sink_values(spark, out) == list(range(4000))

    # 2. Broker restart under a running query: it reconnects and carries on from where it was.
    broker.restart()
    produce(broker.bootstrap_servers, "pt", 4000, 1000)
    wait_for(lambda: committed_records(ckpt) >= 5000, "5000 records after the broker restart")
    assert q.isActive and q.exception() is None

    # 3. Both at once: query down, broker restarted, more data, query back from its checkpoint.
    q.stop()
    broker.restart()
    produce(broker.bootstrap_servers, "pt", 5000, 500)
    q = start()
    wait_for(lambda: committed_records(ckpt) >= 5500, "5500 records after both restarts")
    q.stop()
    assert sink_values(spark, out) == list(range(5500))
    assert last_checkpoint_offsets(ckpt) == {"pt": {"0": 1834, "1": 1833, "2": 1833}}


def test_new_partitions_topics_and_pattern_subscription(spark: Any, broker: RestartableBroker,
                                                        tmp_path: Path) -> None:
    create_topic(broker.bootstrap_servers, "pat-a", 1)
    produce(broker.bootstrap_servers, "pat-a", 0, 10, partitions=1)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    q = (spark.readStream.format("kafkalite")
         .option("kafka.bootstrap.servers", broker.bootstrap_servers)
         .option("subscribePattern", "pat-.*").option("startingOffsets", "latest").load()
         .selectExpr("CAST(value AS STRING) AS v", "topic")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(processingTime="300 milliseconds").start())
    try:
        wait_for(lambda: bool(q.recentProgress), "the first micro-batch")
        produce(broker.bootstrap_servers, "pat-a", 10, 5, partitions=1)
        create_topic(broker.bootstrap_servers, "pat-b", 2)  # discovered later: read from its earliest offset
        produce(broker.bootstrap_servers, "pat-b", 100, 6, partitions=2)
        wait_for(lambda: len(sink_values(spark, out)) >= 11, "records of both topics")
        assert sink_values(spark, out) == [10, 11, 12, 13, 14, 100, 101, 102, 103, 104, 105]
    finally:
        q.stop()


def test_fail_on_data_loss_when_records_were_deleted(spark: Any, broker: RestartableBroker,
                                                     tmp_path: Path) -> None:
    """Records deleted before the query read them (DeleteRecords, as retention would): fail, or skip them."""
    from confluent_kafka import TopicPartition as KTP
    from confluent_kafka.admin import AdminClient

    create_topic(broker.bootstrap_servers, "loss", 1)
    produce(broker.bootstrap_servers, "loss", 0, 100, partitions=1)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    q = (stream(spark, broker.bootstrap_servers, "loss")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    q.awaitTermination(WAIT_S)
    assert q.exception() is None and sink_values(spark, out) == list(range(100))

    produce(broker.bootstrap_servers, "loss", 100, 100, partitions=1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for f in admin.delete_records([KTP("loss", 0, 150)]).values():
        f.result(timeout=30)

    q = (stream(spark, broker.bootstrap_servers, "loss")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    with pytest.raises(Exception, match='failOnDataLoss'):
        q.awaitTermination(WAIT_S)
    assert "Cannot fetch offset 100 of loss-0" in str(q.exception())
    assert sink_values(spark, out) == list(range(100))

    # Same checkpoint, failOnDataLoss=false: the deleted records are skipped with a warning.
    q = (stream(spark, broker.bootstrap_servers, "loss", failOnDataLoss="false")
         .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
         .trigger(availableNow=True).start())
    q.awaitTermination(WAIT_S)
    assert q.exception() is None
    assert sink_values(spark, out) == list(range(100)) + list(range(150, 200))
