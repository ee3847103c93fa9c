"""Option parsing, offsets JSON and offset-range planning of the Spark connector (no Spark, no broker)."""
from __future__ import annotations

import json

import pytest

from kafkalite.tests.support.requires import require

require("pyspark")   # the module imports them: a loud skip, or a failure under CI=true

from kafkalite.spark.options import (  # noqa: E402
    EARLIEST,
    LATEST,
    KafkaOptionError,
    OffsetSpec,
    SinkOptions,
    SourceOptions,
    offsets_to_json,
    parse_offsets_json,
)
from kafkalite.spark.ranges import (  # noqa: E402
    DataLossError,
    OffsetRange,
    make_ranges,
    rate_limit,
    report_data_loss,
    resolve,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a"}


def test_offsets_json_is_sparks_text() -> None:
    offs = {("b", 0): 7, ("a", 10): 3, ("a", 2): -2}
    assert offsets_to_json(offs) == '{"a":{"2":-2,"10":3},"b":{"0":7}}'
    assert parse_offsets_json('{"a":{"2":-2,"10":3},"b":{"0":7}}') == offs


@pytest.mark.parametrize("bad", ["", "[1]", '{"a": 3}', '{"a": {"x": 1}}', '{"a": {"0": "1"}}'])
def test_bad_offsets_json(bad: str) -> None:
    with pytest.raises(KafkaOptionError, match="Expected e.g."):
        parse_offsets_json(bad)


def test_defaults_batch_and_stream() -> None:
    batch = SourceOptions.parse(BASE, streaming=False)
    assert batch.starting == OffsetSpec("earliest") and batch.ending == OffsetSpec("latest")
    assert batch.fail_on_data_loss and not batch.include_headers
    stream = SourceOptions.parse(BASE, streaming=True)
    assert stream.starting == OffsetSpec("latest") and stream.ending is None


def test_options_are_case_insensitive_and_kafka_params_pass_through() -> None:
    opts = SourceOptions.parse({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubscribePattern": "ord.*",
                                "kafka.client.id": "me", "MAXOFFSETSPERTRIGGER": "10",
                                "includeHeaders": "TRUE", "failOnDataLoss": "false"}, streaming=True)
    assert opts.kafka == {"bootstrap.servers": "h:1", "client.id": "me"}
    assert opts.subscription.kind == "subscribePattern"
    assert opts.max_offsets_per_trigger == 10 and opts.include_headers and not opts.fail_on_data_loss
    conf = opts.consumer_config(role="x")
    assert conf["client.id"] == "me" and conf["isolation.level"] == "read_uncommitted"
    assert conf["enable.auto.commit"] is False and conf["group.id"].startswith("spark-kafka-source-")


@pytest.mark.parametrize(("options", "streaming", "message"), [
    ({"subscribe": "a"}, False, "kafka.bootstrap.servers"),
    ({"kafka.bootstrap.servers": "h:1"}, False, "One of the following options must be specified"),
    ({**BASE, "assign": '{"a":[0]}'}, False, "Only one of the following options"),
    ({**BASE, "startingOffsets": "latest"}, False, "^starting offset can't be latest for batch queries on Kafka$"),
    ({**BASE, "startingOffsets": '{"a":{"0":-1}}'}, False,
     "^startingOffsets for a-0 can't be latest for batch queries on Kafka$"),
    ({**BASE, "endingOffsets": "earliest"}, False, "^ending offset can't be earliest for batch queries on Kafka$"),
    ({**BASE, "endingOffsets": '{"a":{"0":-2}}'}, False,
     "^ending offset for a-0 can't be earliest for batch queries on Kafka$"),
    ({**BASE, "endingOffsets": "latest"}, True, "^ending offset not valid in streaming queries$"),
    ({**BASE, "endingOffsetsByTimestamp": '{"a":{"0":5}}'}, True, "^ending timestamp not valid in streaming"),
    ({**BASE, "startingTimestamp": "soon"}, True, "^Expected a single long value, got soon$"),
    ({**BASE, "kafka.auto.offset.reset": "earliest"}, True, "^\nKafka option 'auto.offset.reset' is not supported"),
    ({**BASE, "kafka.enable.auto.commit": "true"}, True, "^Kafka option 'enable.auto.commit' is not supported$"),
    ({**BASE, "kafka.interceptor.classes": "x"}, True, "^Kafka option 'interceptor.classes' is not supported$"),
    ({**BASE, "kafka.key.deserializer": "x"}, True, "^Kafka option 'key.deserializer' is not supported as keys "),
    ({"subscribe": "a", "kafka.value.deserializer": "x"}, True, "^Kafka option 'value.deserializer' is not"),
    ({**BASE, "minPartitions": "0"}, False, "^minPartitions must be positive$"),
    ({**BASE, "subscribe": None, "assign": "a:0"}, False,
     "^No topicpartitions to assign as specified value for option 'assign' is 'a:0'$"),
    ({**BASE, "maxOffsetsPerTrigger": "0"}, True, "must be a positive integer"),
    ({**BASE, "failOnDataLoss": "maybe"}, True, "must be 'true' or 'false'"),
    ({**BASE, "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, True,
     "^The value of minOffsetPerTrigger\\(10\\) is higher than the maxOffsetsPerTrigger\\(5\\).$"),
])
def test_invalid_options(options: dict[str, str | None], streaming: bool, message: str) -> None:
    """Spark's words, and Spark's order (the refused kafka.* keys before a missing bootstrap.servers)."""
    given = {k: v for k, v in options.items() if v is not None}
    with pytest.raises(KafkaOptionError, match=message):
        SourceOptions.parse(given, streaming=streaming)


def test_subscriptions_select_partitions() -> None:
    meta = {"orders": 2, "orders-eu": 1, "payments": 3, "__consumer_offsets": 50}
    sub = SourceOptions.parse({**BASE, "subscribe": "orders, payments,missing"}, streaming=True).subscription
    assert sub.select(meta) == [("orders", 0), ("orders", 1), ("payments", 0), ("payments", 1), ("payments", 2)]
    pat = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribePattern": "orders.*"},
                              streaming=True).subscription
    assert pat.select(meta) == [("orders", 0), ("orders", 1), ("orders-eu", 0)]
    everything = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "subscribePattern": ".*"},
                                     streaming=True).subscription
    assert ("__consumer_offsets", 0) not in everything.select(meta)  # internal topics are never matched
    asg = SourceOptions.parse({"kafka.bootstrap.servers": "h:1", "assign": '{"payments":[2,0]}'},
                              streaming=True).subscription
    assert asg.select(meta) == [("payments", 0), ("payments", 2)]


def test_sink_options_default_to_java_producer_behaviour() -> None:
    conf = SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "topic": "t"}).producer_config()
    assert conf["partitioner"] == "murmur2_random" and conf["enable.idempotence"] is True
    with pytest.raises(KafkaOptionError, match="'value.serializer' is not supported"):
        SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "kafka.value.serializer": "x"})


JAVA_CONSUMER = {
    "kafka.default.api.timeout.ms": "60000", "kafka.request.timeout.ms": "30000", "kafka.max.poll.records": "7",
    "kafka.fetch.max.wait.ms": "250", "kafka.receive.buffer.bytes": "-1", "kafka.send.buffer.bytes": "131072",
    "kafka.partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor",
    "kafka.session.timeout.ms": "45000", "kafka.heartbeat.interval.ms": "50000", "kafka.client.id": "me",
    "kafka.metadata.max.age.ms": "60000", "kafka.retry.backoff.ms": "100", "kafka.check.crcs": "true",
    "kafka.fetch.min.bytes": "1", "kafka.max.partition.fetch.bytes": "1048576", "kafka.metrics.num.samples": "2",
    "kafka.exclude.internal.topics": "true", "kafka.no.such.setting.anywhere": "x",
    "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
    "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
                              'password="p";',
    "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": "/ca.pem",
    "kafka.ssl.endpoint.identification.algorithm": "", "kafka.ssl.enabled.protocols": "TLSv1.3",
}


def test_java_consumer_settings_become_librdkafkas(monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """Every kafka.* key Spark's source takes is taken: renamed where librdkafka has it under another name,
    dropped with one logged line where it is Java's alone (librdkafka itself accepts the result)."""
    from confluent_kafka import Consumer

    from kafkalite.spark import javaconf

    monkeypatch.setattr(javaconf, "_said", set())
    caplog.set_level("INFO", logger="kafkalite.spark")
    opts = SourceOptions.parse({**BASE, **JAVA_CONSUMER}, streaming=False)
    conf = opts.consumer_config(role="executor")
    opts.consumer_config(role="driver")  # a second client from the same options: nothing said twice
    assert {k: conf[k] for k in ("fetch.wait.max.ms", "socket.receive.buffer.bytes", "socket.send.buffer.bytes",
                                 "client.id", "metadata.max.age.ms", "retry.backoff.ms", "check.crcs",
                                 "fetch.min.bytes", "max.partition.fetch.bytes", "security.protocol",
                                 "sasl.mechanism", "sasl.username", "sasl.password", "ssl.ca.location",
                                 "ssl.endpoint.identification.algorithm")} == {
        "fetch.wait.max.ms": "250", "socket.receive.buffer.bytes": "0", "socket.send.buffer.bytes": "131072",
        "client.id": "me", "metadata.max.age.ms": "60000", "retry.backoff.ms": "100", "check.crcs": "true",
        "fetch.min.bytes": "1", "max.partition.fetch.bytes": "1048576", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p",
        "ssl.ca.location": "/ca.pem", "ssl.endpoint.identification.algorithm": "none"}
    dropped = {"default.api.timeout.ms", "request.timeout.ms", "max.poll.records", "partition.assignment.strategy",
               "session.timeout.ms", "heartbeat.interval.ms", "metrics.num.samples", "exclude.internal.topics",
               "no.such.setting.anywhere", "ssl.truststore.type", "ssl.enabled.protocols", "sasl.jaas.config",
               "ssl.truststore.location", "fetch.max.wait.ms", "receive.buffer.bytes", "send.buffer.bytes"}
    assert not dropped & set(conf)
    said = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert sorted(m.split("'")[1] for m in said) == sorted(
        f"kafka.{k}" for k in dropped - {"sasl.jaas.config", "ssl.truststore.location", "fetch.max.wait.ms",
                                         "receive.buffer.bytes", "send.buffer.bytes"})
    # librdkafka takes the translation as it is (security off: no CA file to open)
    plain = {k: v for k, v in conf.items() if not k.startswith(("ssl.", "sasl.", "security."))}
    Consumer(plain).close()


def test_java_producer_settings_become_librdkafkas() -> None:
    from confluent_kafka import Producer

    conf = SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "topic": "t", "kafka.max.block.ms": "1000",
                              "kafka.buffer.memory": "33554432", "kafka.compression.type": "lz4",
                              "kafka.compression.lz4.level": "9", "kafka.compression.zstd.level": "3",
                              "kafka.max.request.size": "2097152", "kafka.partitioner.ignore.keys": "true",
                              "kafka.acks": "all", "kafka.delivery.timeout.ms": "60000",
                              "kafka.batch.size": "32768"}).producer_config()
    assert {k: conf[k] for k in ("queue.buffering.max.kbytes", "compression.type", "compression.level",
                                 "message.max.bytes", "partitioner", "acks", "delivery.timeout.ms",
                                 "batch.size")} == {
        "queue.buffering.max.kbytes": "32768", "compression.type": "lz4", "compression.level": "9",
        "message.max.bytes": "2097152", "partitioner": "random", "acks": "all", "delivery.timeout.ms": "60000",
        "batch.size": "32768"}
    assert "max.block.ms" not in conf and "compression.zstd.level" not in conf
    Producer(conf).flush(0)


class FakeLookup:
    def __init__(self, early: dict, late: dict, stamps: dict | None = None) -> None:
        self.early, self.late, self.stamps = early, late, stamps or {}

    def earliest(self, tps):  # type: ignore[no-untyped-def]
        return {tp: self.early[tp] for tp in tps}

    def latest(self, tps):  # type: ignore[no-untyped-def]
        return {tp: self.late[tp] for tp in tps}

    def for_timestamps(self, stamps):  # type: ignore[no-untyped-def]
        return {tp: self.stamps.get((tp, ts), -1) for tp, ts in stamps.items()}


TPS = [("a", 0), ("a", 1)]
LOOKUP = FakeLookup({("a", 0): 5, ("a", 1): 0}, {("a", 0): 50, ("a", 1): 20},
                    {((("a", 0)), 1000): 12, ((("a", 1)), 1000): 3})


def test_resolve_specs() -> None:
    assert resolve(OffsetSpec("earliest"), TPS, LOOKUP, starting=True) == {("a", 0): 5, ("a", 1): 0}
    assert resolve(OffsetSpec("latest"), TPS, LOOKUP, starting=True) == {("a", 0): 50, ("a", 1): 20}
    spec = OffsetSpec("offsets", {("a", 0): EARLIEST, ("a", 1): LATEST})
    assert resolve(spec, TPS, LOOKUP, starting=True) == {("a", 0): 5, ("a", 1): 20}
    spec = OffsetSpec("offsets", {("a", 0): 7, ("a", 1): 9})
    assert resolve(spec, TPS, LOOKUP, starting=True) == {("a", 0): 7, ("a", 1): 9}
    assert resolve(OffsetSpec("timestamp", timestamp=1000), TPS, LOOKUP, starting=True) == {("a", 0): 12,
                                                                                           ("a", 1): 3}


def test_resolve_requires_every_partition_and_handles_missing_timestamps() -> None:
    with pytest.raises(KafkaOptionError, match="you must specify all TopicPartitions"):
        resolve(OffsetSpec("offsets", {("a", 0): 1}), TPS, LOOKUP, starting=True)
    late_ts = OffsetSpec("timestamps", {("a", 0): 1000, ("a", 1): 99999})
    with pytest.raises(KafkaOptionError, match="No offset matched"):
        resolve(late_ts, TPS, LOOKUP, starting=True)
    assert resolve(late_ts, TPS, LOOKUP, starting=True, strategy="latest") == {("a", 0): 12, ("a", 1): 20}
    assert resolve(late_ts, TPS, LOOKUP, starting=False) == {("a", 0): 12, ("a", 1): 20}


def test_rate_limit_is_proportional_and_never_starves() -> None:
    start = {("a", 0): 0, ("a", 1): 0, ("a", 2): 100}
    latest = {("a", 0): 900, ("a", 1): 100, ("a", 2): 101}
    end = rate_limit(start, latest, 100)
    assert end == {("a", 0): 89, ("a", 1): 9, ("a", 2): 101}
    assert sum(end[tp] - start[tp] for tp in start) <= 100
    assert rate_limit(start, latest, 10_000) == latest


def test_make_ranges_and_min_partitions() -> None:
    start = {("a", 0): 0, ("a", 1): 10, ("b", 0): 5}
    end = {("a", 0): 100, ("a", 1): 10, ("b", 0): 25}
    assert make_ranges(start, end) == [OffsetRange("a", 0, 0, 100), OffsetRange("b", 0, 5, 25)]
    split = make_ranges(start, end, min_partitions=6)
    assert len(split) >= 6
    for tp in [("a", 0), ("b", 0)]:
        pieces = sorted(r for r in split if (r.topic, r.partition) == tp)
        assert pieces[0].from_offset == start[tp] and pieces[-1].until_offset == end[tp]
        assert all(x.until_offset == y.from_offset for x, y in zip(pieces, pieces[1:], strict=False))


def _cuts(ranges: list[OffsetRange]) -> list[tuple[str, int, int, int]]:
    return [(r.topic, r.partition, r.from_offset, r.until_offset) for r in ranges]


def test_ranges_as_spark_plans_them() -> None:
    """Spark 4.2's KafkaOffsetRangeCalculator, worked by hand: maxRecordsPerPartition first (ceil(size / max)
    pieces), then minPartitions over the result, a range whose share rounds to one kept whole."""
    start = {("a", 0): 0, ("b", 0): 5}
    end = {("a", 0): 100, ("b", 0): 25}
    # minPartitions 6: b's share is 20/120*6 = 1 -> whole; a gets the other 5
    assert _cuts(make_ranges(start, end, min_partitions=6)) == [
        ("a", 0, 0, 20), ("a", 0, 20, 40), ("a", 0, 40, 60), ("a", 0, 60, 80), ("a", 0, 80, 100), ("b", 0, 5, 25)]
    # maxRecordsPerPartition 30: a in ceil(100/30) = 4 pieces, b in 1
    assert _cuts(make_ranges(start, end, max_records_per_partition=30)) == [
        ("a", 0, 0, 25), ("a", 0, 25, 50), ("a", 0, 50, 75), ("a", 0, 75, 100), ("b", 0, 5, 25)]
    # both: 5 pieces < 8, so each 25-offset piece of a (share 1.67 -> 2) is halved again, b (1.33 -> 1) kept
    assert _cuts(make_ranges(start, end, min_partitions=8, max_records_per_partition=30)) == [
        ("a", 0, 0, 12), ("a", 0, 12, 25), ("a", 0, 25, 37), ("a", 0, 37, 50), ("a", 0, 50, 62), ("a", 0, 62, 75),
        ("a", 0, 75, 87), ("a", 0, 87, 100), ("b", 0, 5, 25)]
    # enough pieces already: minPartitions changes nothing
    assert len(make_ranges(start, end, min_partitions=3, max_records_per_partition=30)) == 5
    # halves round up as Java's Math.round does: a's share 30/40*6 = 4.5 -> 5 pieces (Python's round: 4)
    start, end = {("a", 0): 0, ("b", 0): 0}, {("a", 0): 30, ("b", 0): 10}
    assert [r.size for r in make_ranges(start, end, min_partitions=6)] == [6, 6, 6, 6, 6, 5, 5]


def test_max_records_per_partition_must_be_positive() -> None:
    base = {"subscribe": "t", "kafka.bootstrap.servers": "h:1"}
    assert SourceOptions.parse({**base, "maxRecordsPerPartition": "7"}, streaming=False).max_records_per_partition == 7
    for bad in ("0", "-3"):
        with pytest.raises(KafkaOptionError, match="^maxRecordsPerPartition must be positive$"):
            SourceOptions.parse({**base, "maxRecordsPerPartition": bad}, streaming=True)


def test_report_data_loss() -> None:
    with pytest.raises(DataLossError, match='set the source option "failOnDataLoss" to "false"'):
        report_data_loss(True, "gone.")
    report_data_loss(False, "gone.")  # only logs


def test_offsets_json_round_trip_through_json_module() -> None:
    # The engine serialises our offset dicts with json.dumps; the structure is Spark's.
    from kafkalite.spark.options import offsets_from_json_dict, offsets_to_json_dict

    offs = {("t", 0): 1, ("t", 1): 2}
    assert offsets_from_json_dict(json.loads(json.dumps(offsets_to_json_dict(offs)))) == offs


def test_sink_schema_validation() -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    from kafkalite.spark.sink import validate_sink_schema

    def schema(**cols: object) -> StructType:
        return StructType([StructField(name, t) for name, t in cols.items()])  # type: ignore[arg-type]

    header = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
    validate_sink_schema(schema(topic=StringType(), key=StringType(), value=BinaryType(), partition=IntegerType(),
                                headers=header), None)
    validate_sink_schema(schema(value=StringType()), "t")
    cases = [
        (schema(value=StringType()), None, "topic option required"),
        (schema(topic=LongType(), value=StringType()), None, "Topic type must be a StringType"),
        (schema(key=StringType()), "t", "Required attribute 'value' not found"),
        (schema(value=IntegerType()), "t", "Value attribute type must be"),
        (schema(key=LongType(), value=StringType()), "t", "Key attribute type must be"),
        (schema(value=StringType(), partition=LongType()), "t", "Partition attribute type must be an IntegerType"),
        (schema(value=StringType(), headers=ArrayType(StringType())), "t", "Headers attribute type must be"),
    ]
    for sch, topic, message in cases:
        with pytest.raises(KafkaOptionError, match=message):
            validate_sink_schema(sch, topic)


@pytest.mark.e2e
def test_connector_imports_nothing_of_the_broker() -> None:
    """The connector is a Kafka client: loading it must not pull in the broker, wire or storage."""
    import subprocess
    import sys

    code = ("import sys, kafkalite.spark, kafkalite.spark.source, kafkalite.spark.sink; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('wire', 'storage', 'trio') "
            "or (m.startswith('kafkalite.') and not m.startswith('kafkalite.spark'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_stream_reader_limits_and_available_now_without_spark() -> None:
    """The driver-side stream reader logic, with a fake metadata client in place of the broker."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    from kafkalite.spark.source import KafkaStreamReader

    class Meta(FakeLookup):
        def topic_partition_counts(self) -> dict[str, int]:
            return {"a": len({p for (_, p) in self.late})}

    meta = Meta({("a", 0): 0, ("a", 1): 0}, {("a", 0): 100, ("a", 1): 300})
    opts = SourceOptions.parse({**BASE, "maxOffsetsPerTrigger": "40", "startingOffsets": "earliest"},
                               streaming=True)
    reader = KafkaStreamReader(opts)
    reader.lookup = meta  # type: ignore[assignment]
    start = reader.initialOffset()
    assert start == {"a": {"0": 0, "1": 0}}
    assert reader.getDefaultReadLimit() == ReadMaxRows(40)
    assert reader.latestOffset(start, ReadMaxRows(40)) == {"a": {"0": 10, "1": 30}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 100, "1": 300}}
    assert [(p.range.from_offset, p.range.until_offset) for p in reader.partitions(start, {"a": {"0": 10, "1": 30}})] \
        == [(0, 10), (0, 30)]
    reader.prepareForTriggerAvailableNow()
    meta.late = {("a", 0): 500, ("a", 1): 500, ("a", 2): 9}  # more data and a new partition after the target
    assert reader.latestOffset(start, ReadAllAvailable()) == {"a": {"0": 100, "1": 300}}

    begin = {"a": {"0": 0, "1": 0, "2": 0}}  # 1009 records available
    wait = KafkaStreamReader(SourceOptions.parse({**BASE, "minOffsetsPerTrigger": "2000"}, streaming=True))
    wait.lookup = meta  # type: ignore[assignment]
    assert wait.getDefaultReadLimit() == ReadMinRows(2000)
    assert wait.latestOffset(begin, ReadMinRows(2000)) == begin  # not enough yet: no new batch
    enough = KafkaStreamReader(SourceOptions.parse({**BASE, "minOffsetsPerTrigger": "1000"}, streaming=True))
    enough.lookup = meta  # type: ignore[assignment]
    assert enough.latestOffset(begin, ReadMinRows(1000)) == {"a": {"0": 500, "1": 500, "2": 9}}
    overdue = KafkaStreamReader(SourceOptions.parse({**BASE, "minOffsetsPerTrigger": "2000",
                                                     "maxTriggerDelay": "0s"}, streaming=True))
    overdue.lookup = meta  # type: ignore[assignment]
    assert overdue.latestOffset(begin, ReadMinRows(2000)) == {"a": {"0": 500, "1": 500, "2": 9}}
