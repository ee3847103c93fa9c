"""The ``kafkalite`` sink: batch and streaming writes of DataFrames to Kafka (Spark's Kafka sink contract).

Input columns, as in Spark's ``KafkaWriter``: ``value`` (required, string or binary), ``key`` (optional,
string or binary), ``topic`` (string; required unless the ``topic`` option is set, which then wins),
``partition`` (optional int; null lets the partitioner choose) and ``headers`` (optional
``array<struct<key: string, value: binary>>``).

Delivery is at-least-once, as Spark documents for its own sink: every task flushes its producer and fails if
any record was not acknowledged, but a task or micro-batch that Spark re-runs (after a failure or a query
restart before the batch was committed to the checkpoint) writes its rows again. The producer is idempotent by
default, so broker-level retries within one run never duplicate a row.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from kafkalite.spark.eos import abort_batch, commit_batch, maybe_fail_task, task_context, write_task
from kafkalite.spark.options import KafkaOptionError, SinkOptions
from kafkalite.spark.produce import produce_rows


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    rows: int


def validate_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """Spark's ``KafkaWriter.validateQuery`` rules, with its messages."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if topic_option is None:
        if "topic" not in fields:
            raise KafkaOptionError("topic option required when no 'topic' attribute is present. Use the topic "
                                   "option for setting a topic.")
        if not isinstance(fields["topic"], StringType):
            raise KafkaOptionError(f"Topic type must be a StringType, got {fields['topic'].simpleString()}")
    if "value" not in fields:
        raise KafkaOptionError("Required attribute 'value' not found")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], (StringType, BinaryType)):
            raise KafkaOptionError(f"{name.capitalize()} attribute type must be a StringType or BinaryType, got "
                                   f"{fields[name].simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise KafkaOptionError(f"Partition attribute type must be an IntegerType, got "
                               f"{fields['partition'].simpleString()}")
    if "headers" in fields:
        t = fields["headers"]
        ok = (isinstance(t, ArrayType) and isinstance(t.elementType, StructType)
              and [f.name for f in t.elementType.fields] == ["key", "value"]
              and isinstance(t.elementType.fields[0].dataType, StringType)
              and isinstance(t.elementType.fields[1].dataType, BinaryType))
        if not ok:
            raise KafkaOptionError("Headers attribute type must be an ArrayType of StructType(key: StringType, "
                                   f"value: BinaryType), got {t.simpleString()}")


class _Producer:
    """A cached producer plus the delivery errors seen since the last :meth:`take_errors`."""

    def __init__(self, conf: dict[str, Any]) -> None:
        from confluent_kafka import Producer

        self.errors: list[Any] = []
        conf = dict(conf)
        conf.setdefault("delivery.report.only.error", True)
        conf["on_delivery"] = self._on_delivery
        self.producer = Producer(conf)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(err)


_lock = threading.Lock()
_producers: dict[tuple[tuple[str, str], ...], _Producer] = {}


def _producer(conf: dict[str, Any]) -> _Producer:
    key = tuple(sorted((k, str(v)) for k, v in conf.items()))
    with _lock:
        p = _producers.get(key)
        if p is None:
            p = _producers[key] = _Producer(conf)
        return p


def write_batches(batches: Iterator[pa.RecordBatch], opts: SinkOptions, flush_timeout_s: float = 300.0) -> int:
    """Produce every row; return the row count once all were acknowledged, else raise."""
    from confluent_kafka import KafkaException

    wrapped = _producer(opts.producer_config())
    wrapped.errors.clear()
    producer = wrapped.producer
    rows = produce_rows(producer, batches, opts, wrapped.errors)
    left = producer.flush(flush_timeout_s)
    if wrapped.errors:
        raise KafkaException(wrapped.errors[0])
    if left:
        raise TimeoutError(f"{left} records were not acknowledged within {flush_timeout_s}s")
    return rows


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("kafkalite").mode("append").save()``."""

    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        validate_sink_schema(schema, opts.topic)
        if opts.exactly_once:
            raise KafkaOptionError("exactlyOnce=true applies to streaming writes (writeStream) only")
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return KafkaCommitMessage(rows=write_batches(iterator, self.opts))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("kafkalite")``: each micro-batch task produces and flushes its rows."""

    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        validate_sink_schema(schema, opts.topic)
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.opts.exactly_once:
            return write_task(iterator, self.opts)
        rows = write_batches(iterator, self.opts)
        if self.opts.test_hook_dir:
            _, batch, partition, _ = task_context()
            maybe_fail_task(self.opts, batch, partition)
        return KafkaCommitMessage(rows=rows)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: rows are already durable in Kafka when the tasks finish, nothing is left to commit.
        Exactly-once: commit every task's open transaction (see :mod:`kafkalite.spark.eos`)."""
        if self.opts.exactly_once:
            commit_batch(self.opts, list(messages), batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At-least-once: Kafka cannot take rows back; a re-run of the batch writes them again.
        Exactly-once: abort the successful tasks' open transactions, so their rows never reach read_committed
        readers and stop holding the last stable offset back."""
        if self.opts.exactly_once:
            abort_batch(self.opts, list(messages), batchId)
