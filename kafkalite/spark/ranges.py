"""Offset ranges: resolving where a read starts/ends, rate limiting and splitting (pure logic, no Spark).

A read is planned as one :class:`OffsetRange` ``[from, until)`` per topic partition, as in Spark's
``KafkaOffsetRangeCalculator``: empty ranges are dropped, ``maxRecordsPerPartition`` cuts each into pieces of at
most that many offsets, and when ``minPartitions`` asks for more Spark partitions than that gives, the large
ranges are cut into pieces in proportion to their share of the total. ``maxOffsetsPerTrigger`` is spread over partitions in proportion to their backlog (a partition whose
share rounds below one still advances by one), so no partition starves.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkalite.spark.options import EARLIEST, LATEST, KafkaOptionError, OffsetSpec, TopicPartition

log = logging.getLogger("kafkalite.spark")

_LOSS_FAIL = (
    " Some data may have been lost because they are not available in Kafka any more; either the data was aged "
    "out by Kafka or the topic may have been deleted before all the data in the topic was processed. If you "
    "don't want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" to \"false\"."
)
_LOSS_WARN = (
    " Some data may have been lost because they are not available in Kafka any more; either the data was aged "
    "out by Kafka or the topic may have been deleted before all the data in the topic was processed. If you "
    "want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" to \"true\"."
)


class DataLossError(RuntimeError):
    """Offsets the query must read are gone from Kafka and ``failOnDataLoss`` is true."""


def report_data_loss(fail: bool, message: str) -> None:
    """Raise (failOnDataLoss=true) or log a warning and carry on, with Spark's wording."""
    if fail:
        raise DataLossError(message + _LOSS_FAIL)
    log.warning("%s%s", message, _LOSS_WARN)


class OffsetLookup(Protocol):
    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]: ...
    def for_timestamps(self, stamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]: ...


@dataclass(frozen=True, order=True)
class OffsetRange:
    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset


def _fmt(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "]"


def resolve(spec: OffsetSpec, tps: Sequence[TopicPartition], lookup: OffsetLookup, *, starting: bool,
            strategy: str = "error") -> dict[TopicPartition, int]:
    """Turn an offset spec into concrete offsets for ``tps`` (Spark's KafkaOffsetReader.fetch*Offsets)."""
    which = "startingOffsets" if starting else "endingOffsets"
    if spec.kind == "earliest":
        return lookup.earliest(tps)
    if spec.kind == "latest":
        return lookup.latest(tps)
    if spec.kind in ("offsets", "timestamps") and set(spec.offsets) != set(tps):
        name = which if spec.kind == "offsets" else which.replace("Offsets", "OffsetsByTimestamp")
        raise KafkaOptionError(
            f"If {name} contains specific offsets, you must specify all TopicPartitions.\n"
            f"Use -1 for latest, -2 for earliest.\nSpecified: {_fmt(spec.offsets)} Assigned: {_fmt(tps)}")
    if spec.kind == "offsets":
        out = dict(spec.offsets)
        need_early = [tp for tp, o in out.items() if o == EARLIEST]
        need_late = [tp for tp, o in out.items() if o == LATEST]
        out.update(lookup.earliest(need_early))
        out.update(lookup.latest(need_late))
        return out
    stamps = dict(spec.offsets) if spec.kind == "timestamps" else {tp: int(spec.timestamp or 0) for tp in tps}
    found = lookup.for_timestamps(stamps)
    missing = [tp for tp, o in found.items() if o < 0]
    if missing and starting and strategy == "error":
        raise KafkaOptionError(
            "No offset matched from request of topic-partition "
            + ", ".join(f"{t}-{p} and timestamp {stamps[(t, p)]}" for t, p in sorted(missing))
            + ". Set startingOffsetsByTimestampStrategy to 'latest' to start from the latest offset instead.")
    found.update(lookup.latest(missing))
    return found


def rate_limit(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               limit: int) -> dict[TopicPartition, int]:
    """Cap ``latest`` so at most about ``limit`` records are read in total, in proportion to each backlog."""
    sizes = {tp: end - start[tp] for tp, end in latest.items() if tp in start and end > start[tp]}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    out = dict(latest)
    for tp, size in sizes.items():
        share = limit * size / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(start[tp] + step, latest[tp])
    return out


def _java_round(x: float) -> int:
    """Scala's ``math.round`` (Java's Math.round): halves round up, not to even as Python's round() does."""
    return math.floor(x + 0.5)


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` cut into ``parts`` consecutive pieces, the remainder going to the last ones (Spark's
    getDividedPartition: integer division of what remains by the pieces left)."""
    out: list[OffsetRange] = []
    remaining, lo = r.size, r.from_offset
    for i in range(parts):
        step = remaining // (parts - i)
        remaining -= step
        hi = min(lo + step, r.until_offset)
        out.append(OffsetRange(r.topic, r.partition, lo, hi))
        lo = hi
    return out


def _part_count(size: int, total: int, parts: int) -> int:
    return max(_java_round(size / total * parts), 1)


def make_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                min_partitions: int | None = None, max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Non-empty ``[start, end)`` ranges, as Spark 4.2's KafkaOffsetRangeCalculator plans them: each range cut
    into ``ceil(size / maxRecordsPerPartition)`` pieces; then, while ``minPartitions`` asks for more tasks than
    that gives, the ranges whose share of ``minPartitions`` rounds to one stay whole and the others are cut in
    proportion to their share of the rest."""
    ranges = [OffsetRange(t, p, start[(t, p)], until) for (t, p), until in sorted(end.items())
              if (t, p) in start and until > start[(t, p)]]
    if (not min_partitions or len(ranges) >= min_partitions) and not max_records_per_partition:
        return ranges
    if max_records_per_partition:
        ranges = [piece for r in ranges for piece in _divide(r, math.ceil(r.size / max_records_per_partition))
                  if piece.size > 0]
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    whole = {id(r) for r in ranges if _part_count(r.size, total, min_partitions) == 1}
    split_total = total - sum(r.size for r in ranges if id(r) in whole)
    split_parts = max(min_partitions - len(whole), 1)
    return [piece for r in ranges
            for piece in ([r] if id(r) in whole else _divide(r, _part_count(r.size, split_total, split_parts)))
            if piece.size > 0]
