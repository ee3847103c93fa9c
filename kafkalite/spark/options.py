"""Source and sink options, with the names and rules of Spark's built-in Kafka connector.

Spark's ``kafka`` format (``KafkaSourceProvider``) takes:

- ``kafka.<key>``: passed to the Kafka client with the prefix removed; ``kafka.bootstrap.servers`` is required.
  A few keys are refused because the connector manages them itself (``auto.offset.reset``,
  ``enable.auto.commit``, the (de)serializers, ``interceptor.classes``).
- exactly one of ``subscribe`` (comma-separated topics), ``subscribePattern`` (a Java regex that must match the
  whole topic name) and ``assign`` (JSON ``{"topicA":[0,1],"topicB":[2,4]}``);
- ``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or JSON ``{"topicA":{"0":23,"1":-1}}``
  where -2 means earliest and -1 latest. Batch queries may not start at ``latest`` nor end at ``earliest``;
  streaming queries have no ending offsets. ``startingTimestamp`` / ``startingOffsetsByTimestamp`` (JSON of
  millisecond timestamps per partition) take precedence over ``startingOffsets``, likewise for ending.
- ``failOnDataLoss`` (default true), ``includeHeaders`` (default false), ``minPartitions``, ``maxRecordsPerPartition``,
  ``maxOffsetsPerTrigger``, ``minOffsetsPerTrigger`` + ``maxTriggerDelay``, ``kafkaConsumer.pollTimeoutMs``.

The option map Spark hands a Python data source is case-insensitive; we look keys up in lower case.
"""
from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.spark import javaconf

EARLIEST = -2
LATEST = -1

TopicPartition = tuple[str, int]

# Spark's KafkaSourceProvider refuses these kafka.* keys, with these words (IllegalArgumentException); every other
# key goes to the client (javaconf.py says how each reaches librdkafka)
_UNSUPPORTED_SOURCE_KEYS = {
    "auto.offset.reset": (
        "\nKafka option 'auto.offset.reset' is not supported.\n"
        "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
        "to specify where to start. Structured Streaming manages which offsets are consumed\n"
        "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
        "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
        "'startingoffsets' only applies when a new Streaming query is started, and\n"
        "that resuming will always pick up from where the query left off. See the docs for more\n"
        "details.\n"),
    "key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte arrays "
                        "with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
                          "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize "
                          "the values.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}
_UNSUPPORTED_SINK_KEYS = {
    "key.serializer": "Kafka option 'key.serializer' is not supported as keys are serialized with "
                      "ByteArraySerializer.",
    "value.serializer": "Kafka option 'value.serializer' is not supported as value are serialized with "
                        "ByteArraySerializer.",
}

OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'


class KafkaOptionError(ValueError):
    """An option is missing, malformed or not allowed (Spark raises IllegalArgumentException)."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def kafka_params(options: Mapping[str, str], *, sink: bool = False) -> dict[str, str]:
    """The ``kafka.*`` options with the prefix removed (Java client settings); refuses the keys Spark refuses,
    in Spark's order (the refused keys, then a missing ``bootstrap.servers``)."""
    params = {k[len("kafka."):]: v for k, v in _lower(options).items() if k.startswith("kafka.")}
    refused = _UNSUPPORTED_SINK_KEYS if sink else _UNSUPPORTED_SOURCE_KEYS
    for key, message in refused.items():
        if key in params:
            raise KafkaOptionError(message)
    if "bootstrap.servers" not in params:
        raise KafkaOptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
            if not sink else "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer")
    return params


_SECURITY_PREFIXES = ("security.", "sasl.", "ssl.")


def librdkafka_params(params: Mapping[str, str]) -> dict[str, str]:
    """``params``, Java client settings as Spark's connector takes them, as librdkafka settings
    (:mod:`kafkalite.spark.javaconf`: same names pass, Java names with an equivalent are renamed or converted,
    Java-only ones are dropped with one logged line)."""
    try:
        return javaconf.translate(params)
    except ValueError as exc:
        raise KafkaOptionError(f"Invalid value for a kafka.* option: {exc}") from exc


def security_params(params: Mapping[str, str]) -> dict[str, str]:
    """``bootstrap.servers`` and the security settings (librdkafka names): what any client of the sink needs."""
    return {k: v for k, v in librdkafka_params(params).items()
            if k == "bootstrap.servers" or k.startswith(_SECURITY_PREFIXES)}


def parse_offsets_json(text: str, *, what: str = "offsets") -> dict[TopicPartition, int]:
    """Spark's offsets JSON ``{"topic":{"0":23}}`` -> ``{("topic", 0): 23}``."""
    try:
        raw = json.loads(text)
        out: dict[TopicPartition, int] = {}
        for topic, parts in raw.items():
            for part, off in parts.items():
                if isinstance(off, bool) or not isinstance(off, int):
                    raise TypeError(off)
                out[(str(topic), int(part))] = off
        return out
    except Exception as exc:
        raise KafkaOptionError(f"Expected e.g. {OFFSETS_EXAMPLE}, got {text}") from exc


def offsets_to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{("t", 0): 5}`` -> ``{"t": {"0": 5}}``, topics and partitions in Spark's order (topic, then number)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, part), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(part)] = int(off)
    return out


def offsets_from_json_dict(raw: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {(t, int(p)): int(o) for t, parts in raw.items() for p, o in parts.items()}


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> str:
    """The exact text of Spark's ``KafkaSourceOffset.json`` (compact, sorted by topic and partition)."""
    return json.dumps(offsets_to_json_dict(offsets), separators=(",", ":"))


@dataclass(frozen=True)
class OffsetSpec:
    """Where a read starts or ends: ``kind`` is earliest, latest, offsets, timestamps or timestamp."""

    kind: str
    offsets: dict[TopicPartition, int] = field(default_factory=dict)  # offsets / per-partition timestamps
    timestamp: int | None = None  # the global startingTimestamp / endingTimestamp


@dataclass(frozen=True)
class Subscription:
    """``subscribe`` (topics), ``subscribePattern`` (pattern) or ``assign`` (partitions)."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def select(self, available: Mapping[str, int]) -> list[TopicPartition]:
        """Pick the partitions this subscription reads from ``{topic: partition count}`` metadata."""
        if self.kind == "assign":
            return sorted(self.partitions)
        if self.kind == "subscribe":
            topics = [t for t in self.topics if t in available]
        else:
            rx = re.compile(self.pattern)
            topics = [t for t in available if not t.startswith("__") and rx.fullmatch(t)]
        return sorted((t, p) for t in topics for p in range(available[t]))


def _bool(value: str | None, default: bool, name: str) -> bool:
    if value is None:
        return default
    v = value.strip().lower()
    if v not in ("true", "false"):
        raise KafkaOptionError(f"Option '{name}' must be 'true' or 'false', got '{value}'")
    return v == "true"


def _positive_int(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        n = int(value)
    except ValueError:
        raise KafkaOptionError(f"Invalid value '{value}' for option '{name}', must be a positive integer") from None
    if n <= 0:
        if name in ("minPartitions", "maxRecordsPerPartition"):   # Spark's words
            raise KafkaOptionError(f"{name} must be positive")
        raise KafkaOptionError(f"Invalid value '{value}' for option '{name}', must be a positive integer")
    return n


def _duration_ms(value: str) -> int:
    """Spark's time strings for maxTriggerDelay: ``15m``, ``30s``, ``500ms``, ``1h`` or plain milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h|d)?\s*", value.lower())
    if not m:
        raise KafkaOptionError(f"Invalid time value '{value}' for option 'maxTriggerDelay'")
    n, unit = int(m[1]), m[2] or "ms"
    return n * {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}[unit]


def _subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        names = "subscribe, subscribepattern, assign"   # Spark's STRATEGY_OPTION_KEYS, as it prints them
        if not given:
            raise KafkaOptionError(f"One of the following options must be specified for Kafka source: {names}. "
                                   "See the docs for more details.")
        raise KafkaOptionError(f"Only one of the following options can be specified for Kafka source: {names}. "
                               "See the docs for more details.")
    key = given[0]
    value = opts[key]
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise KafkaOptionError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return Subscription("subscribe", topics=topics)
    if key == "subscribepattern":
        if not value.strip():
            raise KafkaOptionError("Pattern to subscribe is empty as specified value for option "
                                   f"'subscribePattern' is '{value}'")
        return Subscription("subscribePattern", pattern=value.strip())
    if not value.strip().startswith("{"):
        raise KafkaOptionError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    try:
        raw = json.loads(value)
        parts = tuple(sorted((str(t), int(p)) for t, ps in raw.items() for p in ps))
    except Exception as exc:
        raise KafkaOptionError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {value}') from exc
    if not parts:
        raise KafkaOptionError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    return Subscription("assign", partitions=parts)


def _offset_spec(opts: Mapping[str, str], prefix: str, default: str) -> OffsetSpec:
    ts_global = opts.get(f"{prefix}timestamp")
    if ts_global is not None:
        try:
            return OffsetSpec("timestamp", timestamp=int(ts_global))
        except ValueError:
            raise KafkaOptionError(f"Expected a single long value, got {ts_global.strip()}") from None
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        return OffsetSpec("timestamps", offsets=parse_offsets_json(by_ts))
    value = opts.get(f"{prefix}offsets", default).strip()
    if value.lower() in ("earliest", "latest"):
        return OffsetSpec(value.lower())
    return OffsetSpec("offsets", offsets=parse_offsets_json(value))


@dataclass(frozen=True)
class SourceOptions:
    """Everything the source reads from its options, validated once on the driver."""

    kafka: dict[str, str]
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec | None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    poll_timeout_ms: int = 120_000
    timestamp_strategy: str = "error"
    group_id_prefix: str = "spark-kafka-source"

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        """Spark's checks in Spark's order and words (KafkaSourceProvider): a streaming query's ending options, or
        a batch query's starting/ending bounds; then the subscription, minPartitions, the kafka.* keys Spark
        refuses, kafka.bootstrap.servers, minOffsetsPerTrigger against maxOffsetsPerTrigger."""
        opts = _lower(options)
        starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
        if streaming:
            # Spark's words; it says nothing of endingTimestamp in a streaming query (ignored, as there)
            if "endingoffsets" in opts:
                raise KafkaOptionError("ending offset not valid in streaming queries")
            if "endingoffsetsbytimestamp" in opts:
                raise KafkaOptionError("ending timestamp not valid in streaming queries")
            ending = None
        else:
            ending = _offset_spec(opts, "ending", "latest")
            if starting.kind == "latest":
                raise KafkaOptionError("starting offset can't be latest for batch queries on Kafka")
            if starting.kind == "offsets":
                for (t, p), o in starting.offsets.items():
                    if o == LATEST:
                        raise KafkaOptionError(f"startingOffsets for {t}-{p} can't be latest for batch queries on "
                                               "Kafka")
            if ending.kind == "earliest":
                raise KafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
            if ending.kind == "offsets":
                for (t, p), o in ending.offsets.items():
                    if o == EARLIEST:
                        raise KafkaOptionError(f"ending offset for {t}-{p} can't be earliest for batch queries on "
                                               "Kafka")
        subscription = _subscription(opts)
        min_partitions = _positive_int(opts.get("minpartitions"), "minPartitions")
        max_records = _positive_int(opts.get("maxrecordsperpartition"), "maxRecordsPerPartition")
        kafka = kafka_params(options)
        strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
        if strategy not in ("error", "latest"):
            raise KafkaOptionError(f"Invalid value '{strategy}' for option 'startingOffsetsByTimestampStrategy'")
        min_per = _positive_int(opts.get("minoffsetspertrigger"), "minOffsetsPerTrigger")
        max_per = _positive_int(opts.get("maxoffsetspertrigger"), "maxOffsetsPerTrigger")
        if min_per is not None and max_per is not None and min_per > max_per:
            raise KafkaOptionError(f"The value of minOffsetPerTrigger({min_per}) is higher than the "
                                   f"maxOffsetsPerTrigger({max_per}).")
        return cls(
            kafka=kafka,
            subscription=subscription,
            starting=starting,
            ending=ending,
            fail_on_data_loss=_bool(opts.get("failondataloss"), True, "failOnDataLoss"),
            include_headers=_bool(opts.get("includeheaders"), False, "includeHeaders"),
            min_partitions=min_partitions,
            max_records_per_partition=max_records,
            max_offsets_per_trigger=max_per,
            min_offsets_per_trigger=min_per,
            max_trigger_delay_ms=_duration_ms(opts.get("maxtriggerdelay", "15m")),
            poll_timeout_ms=_positive_int(opts.get("kafkaconsumer.polltimeoutms"), "kafkaConsumer.pollTimeoutMs")
            or 120_000,
            timestamp_strategy=strategy,
            group_id_prefix=opts.get("groupidprefix", "spark-kafka-source"),
        )

    def consumer_config(self, *, role: str) -> dict[str, Any]:
        """librdkafka settings for a consumer that only ``assign()``s and never commits.

        Spark's Kafka source reads uncommitted data unless told otherwise (``kafka.isolation.level``);
        librdkafka defaults to read_committed, so we say so explicitly. The group id is never joined (assign
        only) but librdkafka insists on one.
        """
        conf: dict[str, Any] = {
            "group.id": f"{self.group_id_prefix}-{uuid.uuid4()}-{role}",
            "isolation.level": "read_uncommitted",
        }
        conf.update(librdkafka_params(self.kafka))
        conf.update({"enable.auto.commit": False, "enable.auto.offset.store": False,
                     "auto.offset.reset": "error", "enable.partition.eof": True})
        return conf


@dataclass(frozen=True)
class SinkOptions:
    """The sink's options: ``kafka.*`` for the producer and the optional ``topic`` that overrides the column."""

    kafka: dict[str, str]
    topic: str | None
    exactly_once: bool = False
    txn_prefix: str = "kafkalite-spark"
    marker_topic: str | None = None
    transaction_timeout_ms: int = 600_000
    test_hook_dir: str | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        """``exactlyOnce`` (default false), ``transactionalIdPrefix``, ``exactlyOnce.markerTopic`` (default: the
        ``topic`` option; one partition of it carries the batch markers as group offsets, never records) and
        ``kafka.transaction.timeout.ms`` (default 600000: how long a crashed query's open transactions hold
        read_committed readers back). ``testHookDir`` injects failures for tests."""
        opts = _lower(options)
        kafka = kafka_params(options, sink=True)
        exactly_once = _bool(opts.get("exactlyonce"), False, "exactlyOnce")
        marker = opts.get("exactlyonce.markertopic", opts.get("topic"))
        if exactly_once and marker is None:
            raise KafkaOptionError("exactlyOnce=true needs the 'topic' option or 'exactlyOnce.markerTopic' (an "
                                   "existing topic whose partition 0 keys the batch markers)")
        timeout = _positive_int(kafka.pop("transaction.timeout.ms", None), "kafka.transaction.timeout.ms")
        return cls(kafka=kafka, topic=opts.get("topic"), exactly_once=exactly_once,
                   txn_prefix=opts.get("transactionalidprefix", "kafkalite-spark"), marker_topic=marker,
                   transaction_timeout_ms=timeout or 600_000, test_hook_dir=opts.get("testhookdir"))

    def producer_config(self) -> dict[str, Any]:
        """Producer settings: Java's defaults where librdkafka's differ.

        Java's producer hashes keys with murmur2 and is idempotent by default; librdkafka uses CRC32 and is not.
        Matching Java keeps keyed rows in the partitions Spark's own sink would have chosen and lets broker
        retries happen without duplicates. Both can be overridden with ``kafka.partitioner`` /
        ``kafka.enable.idempotence``.
        """
        conf: dict[str, Any] = {"partitioner": "murmur2_random", "enable.idempotence": True,
                                "linger.ms": 5}
        conf.update(librdkafka_params(self.kafka))
        return conf

    def client_config(self) -> dict[str, Any]:
        """``bootstrap.servers`` and the security settings, for the exactly-once sink's helper consumers."""
        return security_params(self.kafka)

    def txn_client(self, **kw: Any) -> Any:
        """The sink's own transaction-coordinator client, with the same security settings as librdkafka's."""
        # our codec's client: exactly-once only (spark.source/sink import none)
        from kafkalite.spark.txnclient import Security, TxnClient

        return TxnClient(self.kafka["bootstrap.servers"], security=Security.from_params(self.kafka), **kw)
