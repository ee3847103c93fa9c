"""Executor side: read one offset range ``[from, until)`` of one partition into Arrow record batches.

This is Spark's ``KafkaDataConsumer`` for librdkafka. A consumer is ``assign()``ed at ``from`` (never
subscribed, never committing) and consumed until a record at or past ``until`` appears, or librdkafka reports
end-of-partition at or past ``until`` (the last offsets of a range can be transaction markers or compacted
away, which never arrive as records). Gaps are normal in compacted and transactional topics; a gap is data loss
only when the missing offsets now lie below the partition's log start offset (retention deleted them). A start
offset that is out of range surfaces as ``_AUTO_OFFSET_RESET`` because we set ``auto.offset.reset=error``.

Consumers are cached per worker process and configuration (Python workers are reused between tasks), as Spark
caches its Kafka consumers on executors.

Row conversion follows Spark's ``KafkaRecordToRowConverter``: timestamps in microseconds (Kafka's are
milliseconds), ``timestampType`` 0 = CreateTime and 1 = LogAppendTime (Kafka's ``TimestampType.id``), and
``headers`` is null for a record without headers.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KTP

from kafkalite.spark.ranges import OffsetRange, report_data_loss
from kafkalite.spark.schema import arrow_schema

log = logging.getLogger("kafkalite.spark")

BATCH_ROWS = 16_384
_TS_TYPE = {0: -1, 1: 0, 2: 1}  # librdkafka TIMESTAMP_NOT_AVAILABLE/CREATE_TIME/LOG_APPEND_TIME -> Kafka id

_cache_lock = threading.Lock()
# Consumer error events that only mean "the broker is away for now" (restarts, leader moves).
_TRANSIENT = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE,
                        KafkaError._TIMED_OUT, KafkaError.NOT_LEADER_FOR_PARTITION,
                        KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART})
_cache: dict[tuple[tuple[str, str], ...], list[Any]] = {}


def _cache_key(conf: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in conf.items() if k != "group.id"))


def _acquire(conf: dict[str, Any]) -> Any:
    with _cache_lock:
        pool = _cache.get(_cache_key(conf))
        if pool:
            return pool.pop()
    return Consumer(conf)


def _release(conf: dict[str, Any], consumer: Any, healthy: bool) -> None:
    try:
        consumer.unassign()
    except Exception:
        healthy = False
    if not healthy:
        with contextlib.suppress(Exception):
            consumer.close()
        return
    with _cache_lock:
        _cache.setdefault(_cache_key(conf), []).append(consumer)


class _Columns:
    """Column builders for one Arrow batch."""

    __slots__ = ("headers", "include_headers", "keys", "offsets", "stamps", "ts_types", "values")

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.stamps: list[int] = []
        self.ts_types: list[int] = []
        self.headers: list[list[dict[str, Any]] | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def to_batch(self, topic: str, partition: int) -> pa.RecordBatch:
        schema = arrow_schema(self.include_headers)
        n = len(self.offsets)
        arrays = [
            pa.array(self.keys, type=pa.binary()),
            pa.array(self.values, type=pa.binary()),
            pa.array([topic] * n, type=pa.string()),
            pa.array([partition] * n, type=pa.int32()),
            pa.array(self.offsets, type=pa.int64()),
            pa.array(self.stamps, type=pa.timestamp("us", tz="UTC")),
            pa.array(self.ts_types, type=pa.int32()),
        ]
        if self.include_headers:
            arrays.append(pa.array(self.headers, type=schema.field("headers").type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_range(rng: OffsetRange, conf: dict[str, Any], *, include_headers: bool, fail_on_data_loss: bool,
               poll_timeout_ms: int) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` as Arrow batches matching :func:`arrow_schema`."""
    consumer = _acquire(conf)
    healthy = False
    topic, partition, until = rng.topic, rng.partition, rng.until_offset
    nxt = rng.from_offset
    cols = _Columns(include_headers)
    low_cache: list[float] = []  # [log start offset, when it was asked]: gaps are common in compacted topics
    try:
        consumer.assign([KTP(topic, partition, nxt)])
        idle_since = time.monotonic()
        done = nxt >= until
        while not done:
            msgs = consumer.consume(num_messages=min(BATCH_ROWS, max(until - nxt, 1)), timeout=0.5)
            if not msgs:
                if (time.monotonic() - idle_since) * 1000 > poll_timeout_ms:
                    nxt = _timed_out(consumer, topic, partition, nxt, until, fail_on_data_loss, poll_timeout_ms)
                    if nxt >= until:
                        break
                    consumer.assign([KTP(topic, partition, nxt)])
                    idle_since = time.monotonic()
                continue
            before = nxt
            keys, values, offsets, stamps, types, headers = (
                cols.keys, cols.values, cols.offsets, cols.stamps, cols.ts_types, cols.headers)
            for m in msgs:
                err = m.error()
                if err is not None:
                    code = err.code()
                    if code == KafkaError._PARTITION_EOF:
                        if m.offset() >= until:
                            done = True
                            break
                        continue
                    if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        nxt = _out_of_range(consumer, topic, partition, nxt, until, fail_on_data_loss)
                        if nxt >= until:
                            done = True
                        else:
                            consumer.assign([KTP(topic, partition, nxt)])
                        break
                    if err.fatal() or not (err.retriable() or code in _TRANSIENT):
                        raise KafkaException(err)
                    continue  # the broker is restarting or unreachable: librdkafka reconnects by itself
                off = m.offset()
                if off < nxt:
                    continue
                if off >= until:
                    done = True
                    break
                if off > nxt:
                    _check_gap(consumer, topic, partition, nxt, off, fail_on_data_loss, low_cache)
                keys.append(m.key())
                values.append(m.value())
                offsets.append(off)
                ts_type, ts = m.timestamp()
                stamps.append(ts * 1000)
                types.append(_TS_TYPE.get(ts_type, -1))
                if include_headers:
                    h = m.headers()
                    headers.append([{"key": k, "value": v} for k, v in h] if h else None)
                nxt = off + 1
                if nxt >= until:
                    done = True
                    break
            if nxt != before:
                idle_since = time.monotonic()
            if len(cols) >= BATCH_ROWS:
                yield cols.to_batch(topic, partition)
                cols = _Columns(include_headers)
        if len(cols):
            yield cols.to_batch(topic, partition)
        healthy = True
    finally:
        _release(conf, consumer, healthy)


def _low_watermark(consumer: Any, topic: str, partition: int) -> tuple[int, int]:
    low, high = consumer.get_watermark_offsets(KTP(topic, partition), timeout=30, cached=False)
    return int(low), int(high)


def _check_gap(consumer: Any, topic: str, partition: int, expected: int, got: int, fail: bool,
               low_cache: list[float]) -> None:
    """Records ``[expected, got)`` were skipped: data loss only if retention removed them.

    Compaction and transaction markers leave gaps too; the log start offset is asked at most once a second
    so reading a compacted partition does not cost a request per gap."""
    now = time.monotonic()
    if low_cache and now - low_cache[1] < 1.0 and expected >= low_cache[0]:
        return
    low, _ = _low_watermark(consumer, topic, partition)
    low_cache[:] = [low, now]
    if expected < low:
        report_data_loss(fail, f"Cannot fetch records in [{expected}, {min(got, low)}) of {topic}-{partition}.")


def _out_of_range(consumer: Any, topic: str, partition: int, nxt: int, until: int, fail: bool) -> int:
    """The offset we asked for is gone: fail, or skip to what is still there (Spark's failOnDataLoss)."""
    low, high = _low_watermark(consumer, topic, partition)
    if nxt < low:
        report_data_loss(fail, f"Cannot fetch offset {nxt} of {topic}-{partition}: the earliest available "
                               f"offset is {low}.")
        return low
    # Beyond the end: the log was truncated (e.g. the topic was recreated).
    report_data_loss(fail, f"Cannot fetch offset {nxt} of {topic}-{partition}: the latest offset is {high}.")
    return until


def _timed_out(consumer: Any, topic: str, partition: int, nxt: int, until: int, fail: bool,
               poll_timeout_ms: int) -> int:
    low, high = _low_watermark(consumer, topic, partition)
    if nxt < low:
        report_data_loss(fail, f"Cannot fetch offset {nxt} of {topic}-{partition}: the earliest available "
                               f"offset is {low}.")
        return low
    if high < until:
        report_data_loss(fail, f"Cannot fetch records in [{high}, {until}) of {topic}-{partition}: the latest "
                               f"offset is {high}.")
        return until
    if high >= until and nxt >= high:
        return until
    raise TimeoutError(f"Cannot fetch record for offset {nxt} of {topic}-{partition} in {poll_timeout_ms} "
                       "milliseconds")
