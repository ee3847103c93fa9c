"""Retention of an expired *active* segment, as Kafka's UnifiedLog.deleteOldSegments does it.

- When every segment is deletable (retention.ms by the segments' largest timestamps, or retention.bytes), the
  active one included, a new empty active segment is rolled at the log end offset first (`<LEO>.log` with its
  indexes and producer snapshot) and the old ones are deleted: log start offset = log end offset, the next
  append continues at the same offset, and a clean or unclean restart keeps it. An empty active segment is
  never deleted.
- Deletion stops at the high watermark (a segment goes only if it ends at or below it).
- The roll runs on the thread that appends (`run_on_owner`); if that thread appended after retention judged
  the active segment, the roll is refused and the segment stays until the next pass.
- Around it: the leader epochs follow the log start offset (Kafka's truncateFromStart), the snapshots of the
  deleted segments go, an open transaction whose data expired counts from the log start offset (last stable
  offset), idempotent producers keep their sequence, a staged batch adopted afterwards starts at the new
  active segment, and compact,delete topics expire like delete topics while compact-only ones do not.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import CONTROL_COMMIT, batch_records, iter_batches
from kafkalite_storage.errors import OffsetOutOfRangeError
from kafkalite_storage.log_reads import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kafkalite_storage.staging import stage
from kafkalite_storage.testing import Rec, encode_batch

OLD = 1_690_000_000_000   # 2023-07-22: far past the retention.ms below
DAY = 86_400_000
SEG = 2000


def _now() -> int:
    return time.time_ns() // 1_000_000


def _cfg(**kw: object) -> LogConfig:
    base: dict[str, object] = dict(segment_bytes=SEG, file_delete_delay_ms=60_000, index_interval_bytes=100,
                                   retention_ms=DAY)
    base.update(kw)
    return LogConfig(**base)  # type: ignore[arg-type]


def _append(log: PartitionLog, n: int, ts: int, *, epoch: int = 0, key: bool = False) -> None:
    for i in range(n):
        k = b"k%d" % (i % 7) if key else None
        log.append(encode_batch([Rec(b"value-%05d-" % i + b"x" * 60, key=k)], base_timestamp=ts + i),
                   leader_epoch=epoch)


def _offsets(log: PartitionLog) -> list[int]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    return [r.offset for pos, h in iter_batches(data) for r in batch_records(data[pos : pos + h.size])]


def _files(log: PartitionLog, suffix: str) -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith(suffix))


@pytest.mark.parametrize("clean", [True, False], ids=["clean-restart", "unclean-restart"])
def test_expired_active_segment_is_rolled_and_deleted(tmp_path: Path, clean: bool) -> None:
    lm = LogManager.open(str(tmp_path), _cfg())
    log = lm.create_log("t", 0, uuid.uuid4())
    _append(log, 5, OLD)
    assert [s.base_offset for s in log.segments] == [0]   # only the active segment, every record expired
    lm.enforce_retention()
    assert (log.log_start_offset, log.log_end_offset) == (5, 5)
    assert [s.base_offset for s in log.segments] == [5] and log.active.size == 0
    names = set(os.listdir(log.dir))
    new = "00000000000000000005"
    assert {f"{new}.log", f"{new}.index", f"{new}.timeindex", f"{new}.snapshot"} <= names
    assert "00000000000000000000.log.deleted" in names and "00000000000000000000.log" not in names
    with pytest.raises(OffsetOutOfRangeError) as exc:
        log.read(4, 100)
    assert exc.value.log_start_offset == 5
    assert log.read(5, 100) == []
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (5, -1)
    assert log.offset_for_timestamp(LATEST_TIMESTAMP) == (5, -1)
    assert log.delete_old_segments() == 0   # an empty active segment never goes

    info = log.append(encode_batch([Rec(b"young")], base_timestamp=_now()))
    assert (info.base_offset, info.log_start_offset) == (5, 5)
    assert log.delete_old_segments() == 0 and _offsets(log) == [5]
    lm.close(clean=clean)
    assert _files(log, ".deleted") == []

    lm = LogManager.open(str(tmp_path), _cfg())
    log = lm.get_log("t", 0)
    assert log is not None
    assert (log.log_start_offset, log.log_end_offset) == (5, 6)
    assert _offsets(log) == [5] and _files(log, ".log") == [f"{new}.log"]
    assert log.offset_for_timestamp(EARLIEST_TIMESTAMP) == (5, -1)
    lm.close()


def test_every_segment_expired_leaves_one_empty_segment_at_the_log_end(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), _cfg())
    _append(log, 60, OLD)
    n = len(log.segments)
    assert n > 3 and log.producer_state.snapshot_offsets()
    assert log.delete_old_segments() == n
    assert log.log_start_offset == log.log_end_offset == 60
    assert [s.base_offset for s in log.segments] == [60]
    # Kafka deletes the producer snapshots of the deleted segments; the roll wrote the one at the new base
    assert log.producer_state.snapshot_offsets() == [60]
    log.purge_deleted(force=True)
    assert _files(log, ".log") == ["00000000000000000060.log"]
    _append(log, 2, _now())
    assert _offsets(log) == [60, 61]
    log.close()


def test_retention_bytes_zero_deletes_the_active_segment_too(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "b-0"), "b", 0, uuid.uuid4(), _cfg(retention_ms=-1, retention_bytes=0))
    _append(log, 30, _now())
    n = len(log.segments)
    assert log.delete_old_segments() == n
    assert log.log_start_offset == log.log_end_offset == 30 and log.size_bytes == 0
    log.close()
    # a limit of the whole log's size deletes nothing (Kafka: size - limit = 0 covers no segment)
    log = PartitionLog.create(str(tmp_path / "c-0"), "c", 0, uuid.uuid4(), _cfg(retention_ms=-1))
    _append(log, 30, _now())
    log.update_config(_cfg(retention_ms=-1, retention_bytes=log.size_bytes))
    assert log.delete_old_segments() == 0 and log.log_start_offset == 0
    log.close()


def test_deletion_stops_at_the_high_watermark(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "h-0"), "h", 0, uuid.uuid4(), _cfg())
    _append(log, 60, OLD)
    segs = log.segments
    assert len(segs) > 4
    log.hw_limit = segs[2].base_offset + 1   # inside the third segment: it does not end below the watermark
    assert log.delete_old_segments() == 2 and log.log_start_offset == segs[2].base_offset
    log.hw_limit = segs[-1].base_offset      # the active segment's base: every closed segment may go
    assert log.delete_old_segments() == len(segs) - 3
    assert log.segments == [segs[-1]] and log.log_start_offset == segs[-1].base_offset
    log.hw_limit = None                       # a single replica: the high watermark is the log end offset
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == log.log_end_offset == 60
    log.close()


def test_the_roll_is_asked_of_the_owner_and_refused_after_an_append(tmp_path: Path) -> None:
    # no size- or time-driven rolls (a young record after old ones would roll by segment.ms): three segments
    log = PartitionLog.create(str(tmp_path / "r-0"), "r", 0, uuid.uuid4(),
                              _cfg(segment_bytes=10**6, segment_ms=2**62))
    for _ in range(3):
        log.roll()
        _append(log, 20, OLD)
    n = len(log.segments)
    assert n == 3
    active = log.active
    asked: list[str] = []

    def owner(fn: Callable[[], Any]) -> Any:
        asked.append(fn.func.__name__)   # type: ignore[attr-defined]
        if len(asked) == 1:   # the owner thread appended a young record before it got to the roll
            log.append(encode_batch([Rec(b"young")], base_timestamp=_now()))
        return fn()

    assert log.delete_old_segments(run_on_owner=owner) == n - 1
    assert asked == ["roll_for_retention", "advance_log_start"]
    assert log.segments == [active] and log.log_start_offset == active.base_offset
    assert _offsets(log)[-1] == 60
    # the next pass judges the active segment again: it now holds a young record
    assert log.delete_old_segments(run_on_owner=owner) == 0
    log.close()


def test_retention_in_a_worker_rolls_on_the_owner_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lm = LogManager.open(str(tmp_path), _cfg())
    log = lm.create_log("w", 0, uuid.uuid4())
    _append(log, 20, OLD)
    jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[tuple[bool, Any]]]] = queue.Queue()

    def run_on_owner(fn: Callable[[], Any]) -> Any:
        done: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
        jobs.put((fn, done))
        ok, value = done.get()
        if not ok:
            raise value
        return value

    rolled_on: list[threading.Thread] = []
    roll = log._roll

    def spy(base: int, now: int) -> Any:
        rolled_on.append(threading.current_thread())
        return roll(base, now)

    monkeypatch.setattr(log, "_roll", spy)
    lm.run_on_owner = run_on_owner
    worker = threading.Thread(target=lm.enforce_retention)
    worker.start()
    deadline = time.monotonic() + 120   # detects a hang only
    while worker.is_alive() or not jobs.empty():
        assert time.monotonic() < deadline
        try:
            fn, done = jobs.get(timeout=0.05)
        except queue.Empty:
            continue
        try:
            done.put((True, fn()))
        except BaseException as exc:   # pragma: no cover - handed to the worker
            done.put((False, exc))
    worker.join()
    assert rolled_on == [threading.current_thread()]
    assert log.log_start_offset == log.log_end_offset == 20
    lm.run_on_owner = None
    lm.close()


def test_leader_epochs_follow_the_log_start_offset(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "e-0"), "e", 0, uuid.uuid4(), _cfg())
    _append(log, 10, OLD, epoch=0)
    _append(log, 10, OLD, epoch=3)
    assert log.leader_epochs == [(0, 0), (3, 10)]
    assert log.delete_records_before(7) == 7
    assert log.leader_epochs == [(0, 7), (3, 10)]   # Kafka's truncateFromStart: the epoch in force moves up
    assert log.delete_old_segments() > 0 and log.log_start_offset == 20
    assert log.leader_epochs == [(3, 20)]
    assert (Path(log.dir) / "leader-epoch-checkpoint").read_text() == "0\n1\n3 20\n"
    assert log.end_offset_for_epoch(3) == (3, 20)
    assert log.end_offset_for_epoch(1) == (1, 20)   # older than any epoch kept: Kafka's answer
    log.close()
    reopened = PartitionLog.open(str(tmp_path / "e-0"), "e", 0, _cfg(), clean=True)
    assert reopened.leader_epochs == [(3, 20)] and reopened.log_start_offset == 20
    reopened.close()


def test_open_transaction_and_idempotent_producer_after_their_data_expired(tmp_path: Path) -> None:
    d = str(tmp_path / "x-0")
    log = PartitionLog.create(d, "x", 0, uuid.uuid4(), _cfg())
    log.append(encode_batch([Rec(b"in-txn")], producer_id=7, producer_epoch=0, base_sequence=0,
                            transactional=True, base_timestamp=OLD))
    for seq in range(3):
        log.append(encode_batch([Rec(b"idem")], producer_id=9, producer_epoch=0, base_sequence=seq,
                                base_timestamp=OLD + seq))
    assert log.last_stable_offset == 0
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == log.log_end_offset == 4
    # Kafka bounds deletion by the high watermark only; the open transaction's first unstable offset then
    # counts from the log start offset
    assert log.last_stable_offset == 4
    log.close()
    log = PartitionLog.open(d, "x", 0, _cfg(), clean=True)
    assert (log.log_start_offset, log.log_end_offset, log.last_stable_offset) == (4, 4, 4)
    # the producer state outlived the segments: the next sequence is accepted, a retry is a duplicate
    assert log.append(encode_batch([Rec(b"idem")], producer_id=9, producer_epoch=0, base_sequence=3,
                                   base_timestamp=_now())).base_offset == 4
    dup = log.append(encode_batch([Rec(b"idem")], producer_id=9, producer_epoch=0, base_sequence=3,
                                  base_timestamp=_now()))
    assert dup.duplicate and dup.base_offset == 4
    assert log.last_stable_offset == 4   # still open (first unstable offset 0 < log start)
    log.append_control(CONTROL_COMMIT, producer_id=7, producer_epoch=0, coordinator_epoch=0)
    assert log.last_stable_offset == log.log_end_offset == 6
    log.close()


def test_staged_batches_and_the_rolled_active_segment(tmp_path: Path) -> None:
    # segments large enough for the staged batches (Kafka refuses a batch larger than segment.bytes)
    log = PartitionLog.create(str(tmp_path / "s-0"), "s", 0, uuid.uuid4(), _cfg(segment_bytes=10**6))
    _append(log, 5, OLD)
    young = stage(log.dir, encode_batch([Rec(b"y" * 5000)], base_timestamp=_now()))
    assert log.delete_old_segments() == 1   # retention rolls and deletes while the batch is staged
    assert [s.base_offset for s in log.segments] == [5]
    assert log.append_staged(young).base_offset == 5   # adopted into the empty active segment at 5
    assert [s.base_offset for s in log.segments] == [5] and _offsets(log) == [5]
    # a staged batch stamped long ago gets a segment of its own; the young one before it holds it back
    old = stage(log.dir, encode_batch([Rec(b"o" * 5000)], base_timestamp=OLD))
    assert log.append_staged(old).base_offset == 6
    assert [s.base_offset for s in log.segments] == [5, 6]
    assert log.delete_old_segments() == 0 and _offsets(log) == [5, 6]
    assert not _files(log, ".tmp")
    log.close()


def test_compact_delete_expires_like_delete_and_compact_only_does_not(tmp_path: Path) -> None:
    """Kafka's cleaner thread applies a compacted log's retention after cleaning it; a segment the cleaner
    emptied has no timestamp and is judged by its file's modification time, the source segment's."""
    lm = LogManager.open(str(tmp_path), _cfg())
    both = lm.create_log("both", 0, uuid.uuid4(), _cfg(cleanup_policy="compact,delete",
                                                        min_cleanable_dirty_ratio=0.01))
    only = lm.create_log("only", 0, uuid.uuid4(), _cfg(cleanup_policy="compact"))
    for log in (both, only):
        _append(log, 60, OLD, key=True)
        for seg in log.segments:   # files written in 2023 too (a segment the cleaner empties is judged by it)
            os.utime(seg.log_path, (OLD / 1000, OLD / 1000))
    lm.cleanup()   # compaction first, then retention, then compaction again: no error, nothing left to do
    lm.enforce_retention()
    lm.cleanup()
    assert both.log_start_offset == both.log_end_offset == 60 and [s.base_offset for s in both.segments] == [60]
    assert only.log_start_offset == 0 and only.log_end_offset == 60   # compact-only: never by time
    lm.close()
