"""The ``kafkalite`` data source: batch and streaming reads of Kafka topics (Spark's Kafka source contract).

Streaming offsets are the JSON Spark's own Kafka source checkpoints (``KafkaSourceOffset``):
``{"topic": {"0": 42, "1": 7}}``, the next offset to read per partition. The engine writes the end offset of
each micro-batch to the checkpoint's offset log before running it and replays ``[start, end)`` on restart, so
a restarted query re-reads exactly the ranges it had planned; nothing is committed to Kafka.

Partitions that appear while a query runs are read from their earliest offset; partitions that vanish, and
offsets that retention deleted before they were read, are data loss: the query fails with
``failOnDataLoss=true`` (the default) and logs a warning and skips otherwise, as Spark does.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kafkalite.spark.admin import OffsetReader
from kafkalite.spark.fetch import read_range
from kafkalite.spark.options import (
    EARLIEST,
    LATEST,
    KafkaOptionError,
    OffsetSpec,
    SinkOptions,
    SourceOptions,
    TopicPartition,
    offsets_from_json_dict,
    offsets_to_json_dict,
)
from kafkalite.spark.ranges import OffsetRange, make_ranges, rate_limit, report_data_loss, resolve
from kafkalite.spark.schema import spark_schema
from kafkalite.spark.sink import KafkaBatchWriter, KafkaStreamWriter


class KafkaInputPartition(InputPartition):
    """One Spark task: records ``[from, until)`` of one Kafka partition."""

    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng)
        self.range = rng


def _fmt(tps: Sequence[TopicPartition] | set[TopicPartition]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(tps))


class _ReaderBase:
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.lookup = OffsetReader(opts.kafka)

    def _partitions(self) -> list[TopicPartition]:
        return self.opts.subscription.select(self.lookup.topic_partition_counts())

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, KafkaInputPartition):  # Spark's stand-in when there is nothing to read
            return iter(())
        o = self.opts
        return read_range(partition.range, o.consumer_config(role="executor"), include_headers=o.include_headers,
                          fail_on_data_loss=o.fail_on_data_loss, poll_timeout_ms=o.poll_timeout_ms)


class KafkaBatchReader(_ReaderBase, DataSourceReader):
    """``spark.read.format("kafkalite")``: from startingOffsets (default earliest) to endingOffsets (latest)."""

    def partitions(self) -> Sequence[InputPartition]:
        o = self.opts
        tps = self._partitions()
        start = resolve(o.starting, tps, self.lookup, starting=True, strategy=o.timestamp_strategy)
        assert o.ending is not None
        end = resolve(o.ending, tps, self.lookup, starting=False)
        for tp in tps:
            if start[tp] > end[tp]:
                raise KafkaOptionError(
                    f"Beginning offset {start[tp]} is after the ending offset {end[tp]} for topic {tp[0]} "
                    f"partition {tp[1]}. You either provided an invalid fromOffset, or the Kafka topic has "
                    "been damaged")
        if not _divvy_batch(o, start, end):
            return [KafkaInputPartition(r) for r in make_ranges(start, end)]
        return [KafkaInputPartition(r) for r in make_ranges(start, end, o.min_partitions, o.max_records_per_partition)]


def _divvy_batch(o: SourceOptions, start: dict[TopicPartition, int], end: dict[TopicPartition, int]) -> bool:
    """Whether Spark 4.2's batch read splits its ranges (KafkaOffsetReaderAdmin.getOffsetRangesFromUnresolvedOffsets):
    when minPartitions is above the number of partitions, or when a range is longer than maxRecordsPerPartition
    *as the options state it*: there earliest is -2 and latest -1, so ``endingOffsets`` latest (the default) never
    triggers maxRecordsPerPartition in a batch read, only offsets given as numbers (or found by timestamp) do.
    Spark's own connector reads the same data in the same pieces this way (compat-tests/test_spark_kafka.py)."""
    if o.min_partitions is not None and o.min_partitions > len(end):
        return True
    if o.max_records_per_partition is None:
        return False
    assert o.ending is not None

    def stated(spec: OffsetSpec, resolved: dict[TopicPartition, int], tp: TopicPartition) -> int:
        if spec.kind == "earliest":
            return EARLIEST
        if spec.kind == "latest":
            return LATEST
        return spec.offsets[tp] if spec.kind == "offsets" else resolved[tp]

    return any(stated(o.ending, end, tp) - stated(o.starting, start, tp) > o.max_records_per_partition for tp in end)


class KafkaStreamReader(_ReaderBase, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kafkalite")`` with admission control and Trigger.AvailableNow."""

    def __init__(self, opts: SourceOptions) -> None:
        super().__init__(opts)
        self._target: dict[TopicPartition, int] | None = None  # AvailableNow: never read past this
        self._last_trigger = time.monotonic()
        self._seen_latest: dict[TopicPartition, int] | None = None

    def initialOffset(self) -> dict:
        o = self.opts
        tps = self._partitions()
        offsets = resolve(o.starting, tps, self.lookup, starting=True, strategy=o.timestamp_strategy)
        return offsets_to_json_dict(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        """maxOffsetsPerTrigger as ReadMaxRows; minOffsetsPerTrigger alone as ReadMinRows.

        Python sources have no composite limit: with both set we hand Spark ReadMaxRows and apply the minimum
        (and maxTriggerDelay) ourselves in :meth:`latestOffset`."""
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.lookup.latest(self._partitions())

    def _latest(self) -> dict[TopicPartition, int]:
        latest = self.lookup.latest(self._partitions())
        if self._target is not None:
            latest = {tp: min(off, self._target[tp]) for tp, off in latest.items() if tp in self._target}
        return latest

    def reportLatestOffset(self) -> dict | None:
        """The latest offsets seen by the last ``latestOffset`` call (progress reporting; no extra request)."""
        return offsets_to_json_dict(self._seen_latest) if self._seen_latest is not None else None

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json_dict(start)
        latest = self._latest()
        for _ in range(3):  # a partition missing from metadata may just be a broker restarting: ask again
            if self._target is not None or all(tp in latest for tp in begin):
                break
            time.sleep(1.0)
            latest = self._latest()
        self._seen_latest = latest
        new = [tp for tp in latest if tp not in begin]
        begin_all = {**{tp: off for tp, off in begin.items() if tp in latest}, **self.lookup.earliest(new)}
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin_all, latest, limit.max_rows)
        else:
            end = dict(latest)
        o = self.opts
        if o.min_offsets_per_trigger and self._target is None and not isinstance(limit, ReadAllAvailable):
            backlog = sum(max(latest[tp] - begin_all[tp], 0) for tp in latest)
            waited_ms = (time.monotonic() - self._last_trigger) * 1000
            if backlog < o.min_offsets_per_trigger and waited_ms < o.max_trigger_delay_ms:
                return start
        self._last_trigger = time.monotonic()
        return offsets_to_json_dict(end)  # partitions that vanished are left out; partitions() reports them

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        o = self.opts
        begin = offsets_from_json_dict(start)
        until = offsets_from_json_dict(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            earliest = self.lookup.earliest(new)
            for tp in new:
                if earliest[tp] != 0:
                    report_data_loss(o.fail_on_data_loss, f"Added partition {tp[0]}-{tp[1]} starts from "
                                     f"{earliest[tp]} instead of 0. Some data may have been missed.")
            begin.update(earliest)
        gone = set(begin) - set(until)
        if gone:
            report_data_loss(o.fail_on_data_loss, f"{_fmt(gone)} are gone.")
        for tp, off in until.items():
            if off < begin[tp]:
                report_data_loss(o.fail_on_data_loss, f"Partition {tp[0]}-{tp[1]}'s offset was changed from "
                                 f"{begin[tp]} to {off}, some data may have been missed.")
        return [KafkaInputPartition(r) for r in make_ranges(begin, until, o.min_partitions, o.max_records_per_partition)]

    def commit(self, end: dict) -> None:
        """Nothing to do: the checkpoint is the only record of progress (Spark never commits to Kafka)."""

    def stop(self) -> None:
        self.lookup.close()


class KafkaLiteDataSource(DataSource):
    """Spark's Kafka connector contract, format name ``kafkalite`` (Spark reserves ``kafka``)."""

    @classmethod
    def name(cls) -> str:
        return "kafkalite"

    def _include_headers(self) -> bool:
        return str(_get(self.options, "includeHeaders", "false")).strip().lower() == "true"

    def schema(self) -> StructType:
        return spark_schema(self._include_headers())

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise KafkaOptionError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append "
                                   "and ErrorIfExists (default).")
        return KafkaBatchWriter(SinkOptions.parse(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KafkaStreamWriter(SinkOptions.parse(self.options), schema)


def _get(options: Mapping[str, str], key: str, default: str) -> str:
    for k, v in options.items():
        if str(k).lower() == key.lower():
            return str(v)
    return default
