"""``--verify``: both sides read back and compared record by record, through the offset map.

For each copied partition the source is read again (raw Fetch, as the copy reads it) from its first copied
record to where the copy got, and the target with a confluent-kafka consumer (read_uncommitted) over the mapped
range. Each source record must be at its mapped target offset with the same key, value, headers (names, values,
order) and timestamp; the timestamp type too, except that records of a LogAppendTime topic are CreateTime on
the target by design (:mod:`kafkalite.migration.topics`). A target record in the range that no source record
maps to is reported as extra. Partitions that had aborted records are read a second time at read_committed: the
target must show exactly the source's committed records there (aborted ones stay invisible).

Records the source no longer has (retention moved its log start since the copy) are not compared; the report
says how many offsets that skipped. Differences are listed (the first few per partition) and make the command
exit 1.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalite.migration.offsetmap import PartitionMap
from kafkalite.migration.props import Side
from kafkalite.migration.source import Rec, Source

TP = tuple[str, int]
SHOW = 5   # differences listed per partition


@dataclass
class VerifyResult:
    partitions: int = 0
    records: int = 0
    problems: list[str] = field(default_factory=list)
    skipped_offsets: int = 0
    target_trimmed: list[str] = field(default_factory=list)


def _target_records(target: Side, tp: TP, start: int, end: int, isolation: str, timeout: float) -> Iterator[Any]:
    """The target's records of ``tp`` with offsets in [start, end), in order."""
    from confluent_kafka import Consumer, TopicPartition  # confluent-kafka: checked by the CLI

    if start >= end:
        return
    c = Consumer(target.client_config(**{"group.id": "kafkalite-migrate-verify", "enable.auto.commit": False,
                                         "isolation.level": isolation, "enable.partition.eof": True,
                                         "fetch.max.bytes": 16 << 20}))
    try:
        c.assign([TopicPartition(tp[0], tp[1], start)])
        deadline = time.monotonic() + timeout
        while True:
            msgs = c.consume(10_000, 1.0)
            if not msgs:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{tp[0]}-{tp[1]}: the target did not answer within {timeout:g} s")
                continue
            deadline = time.monotonic() + timeout
            for msg in msgs:
                if msg.error():
                    if msg.error().code() == -191:   # _PARTITION_EOF: the end of what the target has
                        return
                    raise RuntimeError(f"{tp[0]}-{tp[1]}: {msg.error().str()}")
                if msg.offset() >= end:
                    return
                yield msg
    finally:
        c.close()


def _target_log_start(target: Side, tp: TP, timeout: float) -> int:
    from confluent_kafka import Consumer, TopicPartition  # as above

    c = Consumer(target.client_config(**{"group.id": "kafkalite-migrate-verify", "enable.auto.commit": False}))
    try:
        low, _high = c.get_watermark_offsets(TopicPartition(tp[0], tp[1]), timeout=timeout)
        return int(low)
    finally:
        c.close()


def _same(src: Rec, msg: Any, log_append: bool) -> str | None:
    diffs = []
    if msg.key() != src.key:
        diffs.append("key")
    if msg.value() != src.value:
        diffs.append("value")
    if list(msg.headers() or []) != list(src.headers):
        diffs.append("headers")
    ts_type, ts = msg.timestamp()
    if ts != src.timestamp:
        diffs.append(f"timestamp {ts} != {src.timestamp}")
    if not log_append and not src.log_append_time and ts_type != 1:   # 1: TIMESTAMP_CREATE_TIME
        diffs.append("timestamp type")
    return ", ".join(diffs) or None


def verify_partition(source: Source, target: Side, tp: TP, m: PartitionMap, log_append: bool, timeout: float,
                     result: VerifyResult) -> None:
    if not m.srcs:
        return
    result.partitions += 1
    first_src = m.srcs[0]
    src_start = max(first_src, source.list_offset(tp, -2))
    result.skipped_offsets += src_start - first_src
    tgt_start = m.translate(src_start)
    if tgt_start is None:
        return
    low = _target_log_start(target, tp, timeout)
    if low > tgt_start:   # the target's retention removed copied records (timestamps older than retention.ms)
        first = m.source_of(low)
        skip_to = first if first is not None else next((s for s, t in zip(m.srcs, m.tgts, strict=True) if t >= low),
                                                       m.src_next)
        result.target_trimmed.append(f"{tp[0]}-{tp[1]}: target offsets {tgt_start}..{low - 1} were deleted by the "
                                     "target's retention after the copy (records older than retention.ms)")
        result.skipped_offsets += max(skip_to - src_start, 0)
        src_start = max(src_start, skip_to)
        tgt_start = low
    shown = 0
    aborted = 0

    def problem(text: str) -> None:
        nonlocal shown
        if shown < SHOW:
            result.problems.append(f"{tp[0]}-{tp[1]}: {text}")
        elif shown == SHOW:
            result.problems.append(f"{tp[0]}-{tp[1]}: ... (more differences not listed)")
        shown += 1

    tgt_iter = _target_records(target, tp, tgt_start, m.target_next, "read_uncommitted", timeout)
    pending: Any = next(tgt_iter, None)
    for rec in source.iter_partition(tp, src_start, m.src_next):
        want = m.target_of(rec.offset)
        aborted += rec.aborted
        if want is None:
            problem(f"source record at offset {rec.offset} was not copied (it is in a gap of the offset map)")
            continue
        while pending is not None and pending.offset() < want:
            problem(f"target record at offset {pending.offset()} is not from the source")
            pending = next(tgt_iter, None)
        if pending is None or pending.offset() != want:
            problem(f"source offset {rec.offset}: no record at target offset {want}")
            continue
        diff = _same(rec, pending, log_append)
        if diff:
            problem(f"source offset {rec.offset} / target offset {want}: {diff} differ")
        result.records += 1
        pending = next(tgt_iter, None)
    while pending is not None:
        problem(f"target record at offset {pending.offset()} is not from the source")
        pending = next(tgt_iter, None)
    if aborted:
        _verify_committed_view(source, target, tp, m, src_start, tgt_start, timeout, problem)


def _verify_committed_view(source: Source, target: Side, tp: TP, m: PartitionMap, src_start: int, tgt_start: int,
                           timeout: float, problem: Any) -> None:
    """read_committed on the target shows the mapped offsets of exactly the source's committed records."""
    want = [m.target_of(r.offset) for r in source.iter_partition(tp, src_start, m.src_next) if not r.aborted]
    got = [msg.offset() for msg in _target_records(target, tp, tgt_start, m.target_next, "read_committed", timeout)]
    if want != got:
        extra = sorted(set(got) - {w for w in want if w is not None})
        missing = sorted({w for w in want if w is not None} - set(got))
        problem(f"read_committed view differs: target offsets {extra[:5]} visible but aborted on the source, "
                f"{missing[:5]} committed on the source but not visible")
