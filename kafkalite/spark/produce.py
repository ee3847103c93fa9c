"""Rows of Arrow batches -> Kafka records, through any confluent-kafka producer: what the at-least-once sink and the
exactly-once sink's tasks (:mod:`kafkalite.spark.eos`) both send with."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkalite.spark.options import KafkaOptionError, SinkOptions


def _column(batch: pa.RecordBatch, name: str) -> list[Any] | None:
    for i, field in enumerate(batch.schema):
        if field.name.lower() == name:
            return batch.column(i).to_pylist()
    return None


def produce_rows(producer: Any, batches: Iterator[pa.RecordBatch], opts: SinkOptions, errors: list[Any]) -> int:
    """``produce()`` every row of ``batches`` (without flushing); ``errors`` is filled by the producer's
    ``on_delivery`` callback, and the first one seen fails the write."""
    from confluent_kafka import KafkaException

    produce, poll = producer.produce, producer.poll
    rows = 0
    for batch in batches:
        n = batch.num_rows
        values = _column(batch, "value") or [None] * n
        keys = _column(batch, "key") or [None] * n
        topics = [opts.topic] * n if opts.topic is not None else _column(batch, "topic") or [None] * n
        part_col = _column(batch, "partition")
        header_col = _column(batch, "headers")
        if (part_col is None or part_col.count(None) == n) and (header_col is None or not any(header_col)):
            # the common shape (key, value, a topic; the partitioner chooses): one produce() per row and
            # nothing else, a quarter less CPU per row than the general loop below
            if None in topics:
                raise KafkaOptionError("Null topic present in the data. Use the topic option for setting a "
                                       "topic.")
            _produce_plain(produce, poll, topics, values, keys)
            rows += n
            if errors:
                raise KafkaException(errors[0])
            continue
        parts = part_col or [None] * n
        headers = header_col or [None] * n
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise KafkaOptionError("Null topic present in the data. Use the topic option for setting a "
                                       "topic.")
            part = parts[i]
            hdrs = headers[i]
            kwargs: dict[str, Any] = {}
            if hdrs:
                kwargs["headers"] = [(h["key"], h["value"]) for h in hdrs]
            while True:
                try:
                    produce(topic, values[i], keys[i], -1 if part is None else part, **kwargs)
                    break
                except BufferError:
                    poll(0.05)
            if i % 1000 == 999:
                poll(0)
        rows += n
        if errors:
            raise KafkaException(errors[0])
    return rows


def _produce_plain(produce: Any, poll: Any, topics: list[Any], values: list[Any], keys: list[Any]) -> None:
    """``produce(topic, value, key)`` for each row; a full queue is drained by ``poll`` and the row retried.
    ``poll(0)`` once at the end serves delivery reports (only errors are reported: delivery.report.only.error)."""
    for topic, value, key in zip(topics, values, keys, strict=True):
        try:
            produce(topic, value, key)
        except BufferError:
            while True:
                poll(0.05)
                try:
                    produce(topic, value, key)
                    break
                except BufferError:
                    continue
    poll(0)
