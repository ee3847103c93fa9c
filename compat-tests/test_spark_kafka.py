"""Spark's built-in Kafka connector (``format("kafka")``, spark-sql-kafka-0-10) against a kafkalite process,
and the same jobs through kafkalite's own PySpark data source (``format("kafkalite")``), with the same results.

Every test runs once per format. The connector's jars come from ``tools/bootstrap.sh eco`` through
``spark.jars`` (nothing is downloaded at run time). One SparkSession (local[2], 512 MB driver) for the module;
the streaming test runs its driver as a subprocess so it can be SIGKILLed mid-run and resumed from its
checkpoint.

What is checked, exactly (every row's partition, offset, key, value, timestamp and headers):
- batch reads bounded by JSON offsets (-2 earliest, -1 latest), by per-partition timestamps and by one global
  timestamp;
- headers, including repeated names and a null header value;
- ``kafka.isolation.level=read_committed`` over a topic with committed, aborted and open transactions (and
  what read_uncommitted shows of the same topic);
- the sink with key, value, headers, topic and partition columns, read back with confluent-kafka;
- a streaming query with ``maxOffsetsPerTrigger`` whose driver is SIGKILLed after two micro-batches and
  restarted on its checkpoint: the batches continue where the checkpoint says, each of the size Spark's rate
  limit gives, and the file sink holds every record exactly once;
- ``minPartitions``: offset ranges split as Spark's KafkaOffsetRangeCalculator splits them;
- ``failOnDataLoss`` after retention deleted the first records: true fails with Spark's message, false reads
  what is left;
- Java client settings a Spark job carries (``kafka.default.api.timeout.ms``, ``kafka.max.poll.records``,
  ``kafka.buffer.memory``, ...) taken by both for a batch read and a write, and the ``kafka.*`` keys Spark refuses
  refused by both in Spark's words;
- ``kafka.``-prefixed Java security options (SASL_SSL, SCRAM-SHA-512, a PEM truststore) for the sink and the
  source, and a wrong password failing the job with the authentication error.
The last three are marked ``ecosystem`` (``make ecosystem``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import eco

from conftest import missing

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

FORMATS = ["kafka", "kafkalite"]
IN = "eco-in"
PARTS = 3
PER_PART = 30
T0 = 1_700_000_000_000  # record j of partition p has timestamp T0 + 1000 * j + p
WAIT_S = 240.0  # a hang bound on 2 shared cores, not a speed assertion

Row = tuple[int, int, str | None, str, int, list[tuple[str, bytes | None]]]


def _headers(p: int, j: int) -> list[tuple[str, bytes | None]]:
    if j % 3 == 0:
        return []
    if j % 3 == 1:
        return [("h", f"p{p}j{j}".encode())]
    return [("a", b"1"), ("a", None), ("b", bytes([0, 255, p, j]))]  # repeated name, null value, binary


def _record(p: int, j: int) -> Row:
    key = None if j % 7 == 4 else f"k{p}-{j}"
    return (p, j, key, f"v{p}-{j}", T0 + 1000 * j + p, _headers(p, j))


RECORDS: dict[tuple[int, int], Row] = {(p, j): _record(p, j) for p in range(PARTS) for j in range(PER_PART)}


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    """Records here are stamped in 2023 (T0): time retention is off unless the test sets its own (both brokers
    check retention 30 s after they start, log.initial.task.delay.ms, and would delete them mid-module)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"retention.ms": "-1"} if config is None else config
    for f in admin.create_topics([NewTopic(name, partitions, 1, config=config)]).values():
        f.result(timeout=30)


def produce(bootstrap: str, topic: str, rows: list[Row]) -> None:
    """Each row to its partition, idempotently, checking that row (p, j) is stored at offset j."""
    got: list[tuple[int, int]] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        (errors.append(err) if err else got.append((msg.partition(), msg.offset())))

    pr = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for p, _j, key, value, ts, headers in rows:
        pr.produce(topic, key=key, value=value, partition=p, timestamp=ts, headers=headers,
                   on_delivery=on_delivery)
    assert pr.flush(60) == 0
    assert not errors, errors
    assert sorted(got) == sorted((r[0], r[1]) for r in rows)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    reason = eco.spark_missing()
    if reason:
        missing(reason)
    s = eco.make_spark("eco-spark-kafka")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def source(broker: Any) -> str:
    create_topic(broker.bootstrap, IN, PARTS)
    produce(broker.bootstrap, IN, [RECORDS[(p, j)] for j in range(PER_PART) for p in range(PARTS)])
    return broker.bootstrap


def rows(df: Any, headers: bool = True) -> list[Row]:
    """(partition, offset, key, value, timestamp ms, headers) of every row, ordered by partition and offset."""
    cols = ["partition", "offset", "CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v",
            "unix_millis(timestamp) AS ts"] + (["headers"] if headers else [])
    out: list[Row] = []
    for r in df.selectExpr(*cols).collect():
        hs = [(h["key"], None if h["value"] is None else bytes(h["value"])) for h in (r["headers"] or [])] \
            if headers else []
        out.append((r["partition"], r["offset"], r["k"], r["v"], r["ts"], hs))
    return sorted(out, key=lambda x: (x[0], x[1]))


def expect(ranges: dict[int, range]) -> list[Row]:
    return [RECORDS[(p, j)] for p in sorted(ranges) for j in ranges[p]]


def reader(spark: Any, fmt: str, bootstrap: str, topic: str, **options: str) -> Any:
    r = spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


# -- batch reads -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_json_offsets_with_headers(spark: Any, source: str, fmt: str) -> None:
    df = reader(spark, fmt, source, IN, includeHeaders="true",
                startingOffsets=json.dumps({IN: {"0": 5, "1": -2, "2": 10}}),
                endingOffsets=json.dumps({IN: {"0": 15, "1": -1, "2": 12}}))
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                          "headers"]
    assert rows(df) == expect({0: range(5, 15), 1: range(PER_PART), 2: range(10, 12)})
    assert {(r["topic"], r["timestampType"]) for r in df.select("topic", "timestampType").collect()} == {(IN, 0)}
    # without includeHeaders there is no headers column; earliest..latest is every record
    plain = reader(spark, fmt, source, IN)
    assert plain.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert rows(plain, headers=False) == [(*r[:5], []) for r in expect({p: range(PER_PART) for p in range(3)})]


@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_offsets_by_timestamp(spark: Any, source: str, fmt: str) -> None:
    # per partition: the first offset whose timestamp is >= the given one; an ending timestamp past the last
    # record means latest
    start = {IN: {"0": T0 + 7000, "1": T0 + 3500, "2": T0 + 20002}}
    end = {IN: {"0": T0 + 9000, "1": T0 + 6000, "2": T0 + 40000}}
    df = reader(spark, fmt, source, IN, includeHeaders="true", startingOffsetsByTimestamp=json.dumps(start),
                endingOffsetsByTimestamp=json.dumps(end))
    assert rows(df) == expect({0: range(7, 9), 1: range(4, 6), 2: range(20, PER_PART)})
    # one timestamp for every partition
    df = reader(spark, fmt, source, IN, includeHeaders="true", startingTimestamp=str(T0 + 25000),
                endingTimestamp=str(T0 + 27000))
    assert rows(df) == expect({0: range(25, 27), 1: range(25, 27), 2: range(25, 27)})


@pytest.fixture
def txn_topic(broker: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """One partition: 5 committed (offsets 0-4, marker 5), 4 aborted (6-9, marker 10), 3 committed (11-13,
    marker 14), then 2 in a transaction left open while the test reads (15-16), aborted after it (well within
    its timeout: a transaction the coordinator times out fences its producer, as Kafka does)."""
    name = f"eco-txn-{request.node.callspec.params['fmt']}"
    create_topic(broker.bootstrap, name, 1)
    pr = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"{name}-producer",
                   "transaction.timeout.ms": 300_000})
    pr.init_transactions(30)
    for prefix, n, commit in (("a", 5, True), ("b", 4, False), ("c", 3, True)):
        pr.begin_transaction()
        for i in range(n):
            pr.produce(name, key=f"{prefix}{i}", value=f"{prefix}-value-{i}", partition=0, timestamp=T0 + i)
        pr.flush(30)
        (pr.commit_transaction if commit else pr.abort_transaction)(30)
    pr.begin_transaction()
    for i in range(2):
        pr.produce(name, key=f"d{i}", value=f"d-value-{i}", partition=0, timestamp=T0 + i)
    pr.flush(30)
    yield name
    pr.abort_transaction(30)


@pytest.mark.parametrize("fmt", FORMATS)
def test_read_committed_over_transactions(spark: Any, broker: Any, txn_topic: str, fmt: str) -> None:
    df = reader(spark, fmt, broker.bootstrap, txn_topic, **{"kafka.isolation.level": "read_committed"})
    got = [(r[1], r[2], r[3]) for r in rows(df, headers=False)]
    assert got == [(i, f"a{i}", f"a-value-{i}") for i in range(5)] + \
        [(11 + i, f"c{i}", f"c-value-{i}") for i in range(3)]
    # read_uncommitted (the default) sees the aborted and the open transaction's records, never the markers
    df = reader(spark, fmt, broker.bootstrap, txn_topic)
    got = [(r[1], r[2]) for r in rows(df, headers=False)]
    assert got == [(i, f"a{i}") for i in range(5)] + [(6 + i, f"b{i}") for i in range(4)] + \
        [(11 + i, f"c{i}") for i in range(3)] + [(15 + i, f"d{i}") for i in range(2)]


# -- the sink --------------------------------------------------------------------------------------------------
def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[Any, ...]]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[tuple[Any, ...]]] = {p: [] for p in range(partitions)}
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while len(eof) < partitions and time.monotonic() < deadline:
        for m in c.consume(100, 1.0):
            if m.error():
                eof.add(m.partition())
                continue
            out[m.partition()].append((m.offset(), m.key(), m.value(), m.headers() or []))
    c.close()
    assert len(eof) == partitions, f"no end of partition seen on {topic}"
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_sink_key_value_headers_topic_partition(spark: Any, broker: Any, fmt: str) -> None:
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

    ta, tb = f"eco-sink-{fmt}-a", f"eco-sink-{fmt}-b"
    create_topic(broker.bootstrap, ta, 2)
    create_topic(broker.bootstrap, tb, 3)
    schema = StructType([
        StructField("key", BinaryType()), StructField("value", BinaryType()),
        StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                     StructField("value", BinaryType())]))),
        StructField("topic", StringType()), StructField("partition", IntegerType())])
    data = []
    for i in range(24):
        topic, part = (ta, i % 2) if i % 2 == 0 else (tb, i % 3)
        key = None if i % 5 == 0 else f"k{i}".encode()
        headers = [("n", str(i).encode())] + ([("x", None), ("n", b"again")] if i % 4 == 0 else [])
        data.append((key, f"v{i}".encode(), headers, topic, part))
    # one Spark partition: the rows reach Kafka in this order. "append" is the one save mode both take: Spark's
    # connector refuses overwrite/ignore, and Spark lets a Python data source take only append/overwrite (not
    # the default errorifexists; MATRIX.md)
    df = spark.createDataFrame(data, schema).coalesce(1)
    df.write.format(fmt).mode("append").option("kafka.bootstrap.servers", broker.bootstrap).save()
    got = {ta: _read_all(broker.bootstrap, ta, 2), tb: _read_all(broker.bootstrap, tb, 3)}
    want: dict[str, dict[int, list[tuple[Any, ...]]]] = {ta: {0: [], 1: []}, tb: {0: [], 1: [], 2: []}}
    for key, value, headers, topic, part in data:
        want[topic][part].append((len(want[topic][part]), key, value, headers))
    assert got == want


# -- kafka.* options: what Spark's connector takes, the kafkalite data source takes --------------------------
# Java client settings a Spark job carries (Java's consumer takes them, or warns about the ones it does not
# know); the kafkalite source maps the ones librdkafka has and drops the rest with a logged line. Timeouts are
# generous: 2 shared cores, not a speed assertion
JAVA_CONSUMER_OPTIONS = {
    "kafka.default.api.timeout.ms": "180000", "kafka.request.timeout.ms": "120000", "kafka.max.poll.records": "100",
    "kafka.fetch.max.wait.ms": "100", "kafka.receive.buffer.bytes": "-1", "kafka.send.buffer.bytes": "131072",
    "kafka.partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor",
    "kafka.session.timeout.ms": "45000", "kafka.exclude.internal.topics": "true",
    "kafka.client.dns.lookup": "use_all_dns_ips", "kafka.metadata.max.age.ms": "60000", "kafka.check.crcs": "true",
    "kafka.metrics.recording.level": "INFO", "kafka.retry.backoff.max.ms": "1000",
    "kafka.socket.connection.setup.timeout.max.ms": "30000", "kafka.client.id": "eco-java-options",
}
JAVA_PRODUCER_OPTIONS = {
    "kafka.max.block.ms": "180000", "kafka.buffer.memory": "16777216", "kafka.delivery.timeout.ms": "300000",
    "kafka.request.timeout.ms": "120000", "kafka.compression.type": "lz4", "kafka.compression.lz4.level": "9",
    "kafka.max.request.size": "2097152", "kafka.acks": "all", "kafka.batch.size": "32768", "kafka.linger.ms": "5",
    "kafka.metrics.num.samples": "3", "kafka.send.buffer.bytes": "-1",
}
# what Spark refuses (KafkaSourceProvider), in its words: the kafkalite source refuses the same
SPARK_REFUSES = {
    "kafka.auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported.",
    "kafka.key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
                              "arrays with ByteArrayDeserializer.",
    "kafka.enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "kafka.interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_java_client_options_taken_and_sparks_refusals(spark: Any, source: str, broker: Any, fmt: str) -> None:
    df = reader(spark, fmt, source, IN, includeHeaders="true", endingOffsets=json.dumps({IN: {"0": 10, "1": 5,
                                                                                               "2": 10}}),
                **JAVA_CONSUMER_OPTIONS)
    assert rows(df) == expect({0: range(10), 1: range(5), 2: range(10)})
    # the sink with the Java producer's settings: every row in its partition, in order
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    topic = f"eco-java-options-{fmt}"
    create_topic(broker.bootstrap, topic, 2)
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("partition", IntegerType())])
    data = [(f"k{i}".encode(), f"v{i}".encode(), i % 2) for i in range(20)]
    w = spark.createDataFrame(data, schema).coalesce(1).write.format(fmt).mode("append") \
        .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic)
    for k, v in JAVA_PRODUCER_OPTIONS.items():
        w = w.option(k, v)
    w.save()
    assert _read_all(broker.bootstrap, topic, 2) == {
        p: [(j, f"k{i}".encode(), f"v{i}".encode(), []) for j, i in enumerate(range(p, 20, 2))] for p in range(2)}
    for key, words in SPARK_REFUSES.items():
        with pytest.raises(Exception) as err:
            reader(spark, fmt, source, IN, **{key: "x"}).collect()
        assert words in str(err.value), str(err.value)[-3000:]


# -- streaming: maxOffsetsPerTrigger, a SIGKILLed driver, its checkpoint ------------------------------------
def _start_job(fmt: str, bootstrap: str, topic: str, ckpt: Path, out: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    with open(log, "ab") as f:
        return subprocess.Popen([sys.executable, "-m", "harness.spark_stream_job", fmt, bootstrap, topic,
                                 str(ckpt), str(out), "30"], cwd=eco.HERE, env=env, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver and the JVM it started (its own session: the group is ours)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


# the kafkalite source's streaming is also covered by kafkalite/tests/clients/test_spark_stream.py: its run
# here (two more Spark driver starts) is in `make ecosystem`, not `make test`
@pytest.mark.parametrize("fmt", ["kafka", pytest.param("kafkalite", marks=pytest.mark.ecosystem)])
def test_stream_rate_limited_resumes_after_driver_sigkill(spark: Any, broker: Any, tmp_path: Path,
                                                          fmt: str) -> None:
    topic, per_part = f"eco-stream-{fmt}", 100
    create_topic(broker.bootstrap, topic, PARTS)
    produce(broker.bootstrap, topic, [(p, j, f"k{p}-{j}", f"v{p}-{j}", T0 + j, [])
                                      for j in range(per_part) for p in range(PARTS)])
    ckpt, out, log = tmp_path / "ckpt", tmp_path / "out", tmp_path / "driver.log"
    job = _start_job(fmt, broker.bootstrap, topic, ckpt, out, log)
    try:
        deadline = time.monotonic() + WAIT_S
        while eco.committed_batches(ckpt) < 2 if ckpt.exists() else True:
            assert job.poll() is None, f"driver exited early ({job.returncode}):\n{log.read_text()[-4000:]}"
            assert time.monotonic() < deadline, f"no 2 micro-batches in {WAIT_S}s:\n{log.read_text()[-4000:]}"
            time.sleep(0.1)
    finally:
        _kill(job)
    killed_at = eco.committed_batches(ckpt)
    assert 2 <= killed_at < 10, f"the driver was to die mid-run: {killed_at} batches committed"
    job = _start_job(fmt, broker.bootstrap, topic, ckpt, out, log)
    try:
        assert job.wait(WAIT_S) == 0, log.read_text()[-4000:]
    finally:
        _kill(job)
    # Spark's rate limit shares 30 offsets among 3 equal backlogs: 10 each, 10 batches, ids 0..9 across the kill
    ends = eco.read_offsets_log(ckpt)
    assert ends == [{topic: {str(p): 10 * (b + 1) for p in range(PARTS)}} for b in range(10)]
    assert eco.committed_batches(ckpt) == 10
    got = sorted((r["partition"], r["offset"], r["k"], r["v"]) for r in spark.read.parquet(str(out)).collect())
    assert got == [(p, j, f"k{p}-{j}", f"v{p}-{j}") for p in range(PARTS) for j in range(per_part)]


# -- minPartitions ---------------------------------------------------------------------------------------------
@pytest.mark.ecosystem
@pytest.mark.parametrize("fmt", FORMATS)
def test_min_partitions_splits_offset_ranges(spark: Any, source: str, fmt: str) -> None:
    """Spark's KafkaOffsetRangeCalculator: with fewer offset ranges than minPartitions each range is split into
    max(round(size / total * minPartitions), 1) pieces, piece i starting at start + size * i / pieces."""
    df = reader(spark, fmt, source, IN, minPartitions="9",
                startingOffsets=json.dumps({IN: {"0": 0, "1": 20, "2": 25}}))
    # sizes 30, 10, 5 of 45: 6, 2 and 1 pieces
    pieces = df.select("partition", "offset").rdd.glom().collect()
    assert len(pieces) == 9
    got = sorted((rs[0]["partition"], rs[0]["offset"], rs[-1]["offset"] + 1, len(rs)) for rs in pieces if rs)
    assert got == sorted([(0, 5 * i, 5 * i + 5, 5) for i in range(6)] + [(1, 20, 25, 5), (1, 25, 30, 5),
                                                                        (2, 25, 30, 5)])
    assert rows(df, headers=False) == [(*r[:5], []) for r in expect({0: range(30), 1: range(20, 30),
                                                                     2: range(25, 30)})]
    # as many ranges as minPartitions or more: one Spark partition per Kafka partition
    assert reader(spark, fmt, source, IN, minPartitions="3").rdd.getNumPartitions() == 3


@pytest.mark.ecosystem
@pytest.mark.parametrize("fmt", FORMATS)
def test_max_records_per_partition_splits_offset_ranges(spark: Any, source: str, fmt: str) -> None:
    """Spark 4.2's maxRecordsPerPartition: each range in ceil(size / max) pieces; with minPartitions above the
    count that gives, pieces whose share of minPartitions rounds to one stay whole, the others are cut again. A
    batch read decides whether to cut on the offsets as the options state them (latest is -1): with
    endingOffsets latest, maxRecordsPerPartition alone cuts nothing."""
    starting = json.dumps({IN: {"0": 0, "1": 20, "2": 25}})   # sizes 30, 10, 5
    ending = json.dumps({IN: {"0": 30, "1": 30, "2": 30}})

    def cuts(df: Any) -> list[tuple[int, int, int]]:
        return sorted((rs[0]["partition"], rs[0]["offset"], rs[-1]["offset"] + 1)
                      for rs in df.select("partition", "offset").rdd.glom().collect() if rs)

    df = reader(spark, fmt, source, IN, maxRecordsPerPartition="7", startingOffsets=starting)
    assert cuts(df) == [(0, 0, 30), (1, 20, 30), (2, 25, 30)]
    df = reader(spark, fmt, source, IN, maxRecordsPerPartition="7", startingOffsets=starting, endingOffsets=ending)
    assert cuts(df) == [(0, 0, 6), (0, 6, 12), (0, 12, 18), (0, 18, 24), (0, 24, 30), (1, 20, 25), (1, 25, 30),
                        (2, 25, 30)]
    assert rows(df, headers=False) == [(*r[:5], []) for r in expect({0: range(30), 1: range(20, 30),
                                                                     2: range(25, 30)})]
    # 8 pieces < 12: the 6-offset pieces (share 1.6 -> 2) are halved, the 5-offset ones (1.33 -> 1) kept
    df = reader(spark, fmt, source, IN, maxRecordsPerPartition="7", minPartitions="12", startingOffsets=starting)
    assert cuts(df) == sorted([(0, 3 * i, 3 * i + 3) for i in range(10)] + [(1, 20, 25), (1, 25, 30), (2, 25, 30)])


# -- failOnDataLoss after retention deleted records -------------------------------------------------------------
RETENTION_ARGS = ["--override", "log.retention.check.interval.ms=200", "--override", "log.initial.task.delay.ms=0",
                  "--override", "log.segment.delete.delay.ms=0"]
DATA_LOSS = "Some data may have been lost because they are not available in Kafka any more"


@pytest.fixture(scope="module")
def lossy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A broker checking retention every 200 ms, and a one-partition topic whose records 0-19 retention deleted
    (two batches stamped in 2023, 10 s apart, then one stamped now, each in a segment of its own under
    segment.ms=1000: Kafka rolls when a batch's timestamp is past the segment's first by segment.ms; lowering
    retention.ms to a day deletes the two old segments; the active one holds young records and stays)."""
    from conftest import _LIVE, _start_broker

    b = _start_broker(tmp_path_factory.mktemp("broker-lossy"), None, RETENTION_ARGS)
    try:
        name = "eco-lossy"
        create_topic(b.bootstrap, name, 1, {"retention.ms": "-1", "segment.ms": "1000"})
        now = int(time.time() * 1000)
        for k in range(3):
            ts = T0 + 10_000 * k if k < 2 else now
            produce(b.bootstrap, name, [(0, 10 * k + j, f"k{10 * k + j}", f"v{10 * k + j}", ts + j, [])
                                        for j in range(10)])
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        res = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=[
            ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result(30)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lossy-check"})
        deadline = time.monotonic() + 60
        while c.get_watermark_offsets(TopicPartition(name, 0), timeout=10) != (20, 30):
            assert time.monotonic() < deadline, c.get_watermark_offsets(TopicPartition(name, 0), timeout=10)
            time.sleep(0.2)
        c.close()
        yield b.bootstrap, name
    finally:
        b.kill()
        _LIVE.remove(b)


@pytest.mark.ecosystem
@pytest.mark.parametrize("fmt", FORMATS)
def test_fail_on_data_loss_after_retention(spark: Any, lossy: tuple[str, str], fmt: str) -> None:
    bs, name = lossy
    start = json.dumps({name: {"0": 0}})
    # failOnDataLoss=true (the default): offsets 0-19 are gone, the job fails with Spark's message
    with pytest.raises(Exception) as err:
        reader(spark, fmt, bs, name, startingOffsets=start).collect()
    assert DATA_LOSS in str(err.value), str(err.value)[-3000:]
    # false: the records still there, nothing else
    df = reader(spark, fmt, bs, name, startingOffsets=start, failOnDataLoss="false")
    assert [(r[1], r[2], r[3]) for r in rows(df, headers=False)] == [(j, f"k{j}", f"v{j}") for j in range(20, 30)]


# -- kafka.-prefixed security options: SASL_SSL with SCRAM-SHA-512 -------------------------------------------
@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The broker with a PLAINTEXT listener (to create the SCRAM user) and a SASL_SSL one (SCRAM-SHA-512 only),
    its TLS material from ``kafkalite certs``. The same server.properties serves Apache Kafka (the reference run):
    PEM stores named (Kafka's default type is JKS) and the listener's SCRAM login module, which Kafka requires
    and kafkalite does without."""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion
    from harness.broker import BrokerProcess

    from conftest import _LIVE, _broker_missing
    from kafkalite.cli.certs import write_certs

    if why := _broker_missing():
        missing(why)
    base = tmp_path_factory.mktemp("broker-secured")
    certs = write_certs(base / "certs")
    ports = {"PLAINTEXT": _free_port(), "SASL_SSL": _free_port()}
    props = base / "server.properties"
    props.write_text("\n".join([
        "listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "sasl.enabled.mechanisms=SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "ssl.keystore.type=PEM", "ssl.truststore.type=PEM",
        f"ssl.keystore.location={certs['broker.pem']}", f"ssl.truststore.location={certs['ca.pem']}"]) + "\n")

    class Secured(BrokerProcess):
        def _command(self) -> list[str]:
            if self.kind == "kafka":   # harness/reference.py takes the file as Kafka's server.properties
                self.extra_args = ["--config", str(props)]
                return super()._command()
            cmd = super()._command()
            i = cmd.index("--listen")
            return [*cmd[:i], *cmd[i + 2:], "--config", str(props)]

    b = Secured(base / "data", base / "broker.log")
    _LIVE.append(b)
    try:
        b.start()
        plain, sasl = (f"127.0.0.1:{ports[n]}" for n in ("PLAINTEXT", "SASL_SSL"))
        admin = AdminClient({"bootstrap.servers": plain})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "spark", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"spark-pw")]).values():
            f.result(30)
        create_topic(plain, "eco-secured", 2)
        yield {"plain": plain, "sasl": sasl, "ca": str(certs["ca.pem"])}
    finally:
        b.kill()
        _LIVE.remove(b)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.ecosystem
@pytest.mark.parametrize("fmt", FORMATS)
def test_sasl_ssl_scram_through_kafka_prefixed_options(spark: Any, secured: dict[str, Any], fmt: str) -> None:
    """The options a Spark user writes for Java's client (kafka.security.protocol, kafka.sasl.mechanism,
    kafka.sasl.jaas.config, a PEM truststore): the sink writes over SASL_SSL, the source reads it back over
    SASL_SSL; a wrong password fails the job with Kafka's authentication error."""
    from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

    def sec(password: str) -> dict[str, str]:
        return {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
                "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                          f'username="spark" password="{password}";',
                "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": secured["ca"]}

    topic = "eco-secured"
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("partition", IntegerType())])
    data = [(f"{fmt}-k{i}".encode(), f"{fmt}-v{i}".encode(), i % 2) for i in range(20)]
    w = spark.createDataFrame(data, schema).coalesce(1).write.format(fmt).mode("append") \
        .option("kafka.bootstrap.servers", secured["sasl"]).option("topic", topic)
    for k, v in sec("spark-pw").items():
        w = w.option(k, v)
    w.save()
    df = reader(spark, fmt, secured["sasl"], topic, **sec("spark-pw"))
    got = [(r[2], r[3], r[0]) for r in rows(df, headers=False) if r[2].startswith(fmt)]
    assert sorted(got) == sorted((k.decode(), v.decode(), p) for k, v, p in data)
    # the plaintext listener has the same records (one topic, two listeners)
    assert sorted(rows(reader(spark, fmt, secured["plain"], topic), headers=False)) == sorted(rows(df, headers=False))
    with pytest.raises(Exception) as err:
        reader(spark, fmt, secured["sasl"], topic, **sec("wrong")).collect()
    assert "Authentication failed" in str(err.value), str(err.value)[-3000:]
