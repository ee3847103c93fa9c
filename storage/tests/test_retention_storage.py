"""Retention and DeleteRecords in storage: whole segments from the front (an expired active segment too:
test_retention_active.py).

- retention.ms: a segment goes once its largest timestamp is older than the limit (file mtime when it has no
  timestamp); retention.bytes: leading segments go while the log stays at or above the limit without them.
- Deleted segments are renamed `.deleted` and kept open for file.delete.delay.ms (a read region handed out
  before the deletion still reads the same bytes), then removed.
- The log start offset moves to the first kept segment (or the DeleteRecords offset), is written to
  `log-start-offset-checkpoint`, and survives clean and unclean reopening; reads below it raise
  OffsetOutOfRangeError carrying the new start; kept segments are byte for byte what they were.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.errors import OffsetOutOfRangeError, RecordBatchTooLargeError
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
SEG = 2000


def _cfg(**kw: object) -> LogConfig:
    base = dict(segment_bytes=SEG, file_delete_delay_ms=60_000, index_interval_bytes=100)
    base.update(kw)
    return LogConfig(**base)  # type: ignore[arg-type]


def _fill(log: PartitionLog, n: int, t0: int, step: int = 1) -> None:
    for i in range(n):
        ts = t0 + i * step
        log.append(encode_batch([Rec(b"value-%05d-" % i + b"x" * 60, key=b"k%d" % i)], base_timestamp=ts),
                   now_ms=ts)


def _digests(log: PartitionLog) -> dict[str, str]:
    out = {}
    for seg in log.segments:
        for p in (seg.log_path, seg.offset_index.path, seg.time_index.path):
            if os.path.exists(p):
                with open(p, "rb") as f:
                    out[os.path.basename(p)] = hashlib.sha256(f.read()).hexdigest()
    return out


def _offsets(log: PartitionLog) -> list[int]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    return [r.offset for pos, h in iter_batches(data) for r in batch_records(data[pos : pos + h.size])]


def test_time_retention_deletes_old_segments_only(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), _cfg(retention_ms=10_000))
    log = lm.create_log("t", 0, uuid.uuid4())
    _fill(log, 100, NOW)  # old records, many segments
    _fill(log, 40, NOW + 100_000)  # young ones
    segs = log.segments
    assert len(segs) > 4
    log.roll()  # the active segment is empty now; rolled segments' indexes are final
    old = [s for s in segs if s.max_timestamp < NOW + 100_000 - 10_000]
    young_first = next(s for s in segs if s.max_timestamp >= NOW + 50_000)
    kept_before = {k: v for k, v in _digests(log).items() if int(k[:20]) >= young_first.base_offset}
    region = log.read(0, 100)[0]
    first_bytes = region[0].pread(region[2], region[1])

    assert log.delete_old_segments(NOW + 100_000 + 5_000) == len(old)
    assert log.log_start_offset == young_first.base_offset
    assert dict(_digests(log).items()) == kept_before  # byte for byte
    names = os.listdir(log.dir)
    assert all(f"{s.base_offset:020d}.log.deleted" in names for s in old)
    assert not any(f"{s.base_offset:020d}.log" in names for s in old)
    # the descriptor handed out before the deletion still reads the same bytes (sendfile in flight)
    assert region[0].pread(region[2], region[1]) == first_bytes
    with pytest.raises(OffsetOutOfRangeError) as exc:
        log.read(0, 100)
    assert exc.value.log_start_offset == young_first.base_offset
    assert log.offset_for_timestamp(-2) == (young_first.base_offset, -1)
    assert _offsets(log)[0] == young_first.base_offset and _offsets(log)[-1] == 139

    # nothing left to delete: the young segments and the (empty) active one stay
    assert log.delete_old_segments(NOW + 100_000 + 5_000) == 0
    assert log.purge_deleted() == 0  # file.delete.delay.ms not over
    assert log.purge_deleted(force=True) == len(old)
    assert not [n for n in os.listdir(log.dir) if n.endswith(".deleted")]
    lm.close()
    # as in Kafka, the checkpoint lists only starts above the first segment's base; this one is implied
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    lm = LogManager.open(str(tmp_path), _cfg(retention_ms=10_000))
    log = lm.get_log("t", 0)
    assert log is not None and log.log_start_offset == young_first.base_offset
    lm.close()


def test_size_retention(tmp_path: Path) -> None:
    limit = 5 * SEG
    log = PartitionLog.create(str(tmp_path / "s-0"), "s", 0, uuid.uuid4(), _cfg(retention_bytes=limit))
    _fill(log, 300, int(time.time() * 1000))
    sizes = [s.size for s in log.segments]
    total = sum(sizes)
    # Kafka's rule: drop leading segments while (size - limit) >= the segment's size
    n, diff = 0, total - limit
    while n + 1 < len(sizes) and diff - sizes[n] >= 0:
        diff -= sizes[n]
        n += 1
    assert n > 0
    kept_first = log.segments[n].base_offset
    assert log.delete_old_segments() == n
    assert log.log_start_offset == kept_first
    assert limit <= log.size_bytes < limit + SEG
    assert log.delete_old_segments() == 0
    log.close()


def test_segment_without_timestamps_uses_file_mtime(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), _cfg(retention_ms=60_000))
    for _i in range(40):  # timestamp -1: Kafka's "no timestamp"
        log.append(encode_batch([Rec(b"v" * 80)], base_timestamp=-1, max_timestamp=-1), now_ms=NOW)
    segs = log.segments
    assert len(segs) > 2 and segs[0].max_timestamp < 0
    now = int(time.time() * 1000)
    assert log.delete_old_segments(now) == 0  # just written
    old = (now - 3_600_000) / 1000
    os.utime(segs[0].log_path, (old, old))
    assert log.delete_old_segments(now) == 1 and log.log_start_offset == segs[1].base_offset
    log.close()


@pytest.mark.parametrize("clean", [True, False], ids=["clean-reopen", "unclean-reopen"])
def test_delete_records_moves_the_log_start_and_persists(tmp_path: Path, clean: bool) -> None:
    lm = LogManager.open(str(tmp_path), _cfg())
    log = lm.create_log("d", 0, uuid.uuid4())
    _fill(log, 120, NOW)
    segs = log.segments
    target = segs[2].base_offset + 3  # inside the third segment
    kept = {k: v for k, v in _digests(log).items() if int(k[:20]) >= segs[2].base_offset
            and int(k[:20]) != log.active.base_offset}
    assert log.delete_records_before(target) == target
    assert log.log_start_offset == target
    assert log.segments[0].base_offset == segs[2].base_offset  # its segment stays, the earlier ones go
    assert {k: v for k, v in _digests(log).items() if k in kept} == kept
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 100)
    data = log.read_bytes(target, 10**9)
    first = next(iter_batches(data))[1]
    assert first.base_offset <= target  # the whole batch holding `target` (single-record batches here)
    assert log.delete_records_before(target - 5) == target  # never backwards
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(log.log_end_offset + 1)
    assert log.delete_records_before(log.log_end_offset) == 120  # up to the high watermark
    assert log.segments == [log.active]
    lm.checkpoint()
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\nd 0 120\n"
    lm.close(clean=clean)
    lm = LogManager.open(str(tmp_path), _cfg())
    log = lm.get_log("d", 0)
    assert log is not None
    assert (log.log_start_offset, log.log_end_offset) == (120, 120)
    assert log.offset_for_timestamp(-2) == (120, -1)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(119, 100)
    _fill(log, 3, NOW + 500)
    assert _offsets(log) == [120, 121, 122]
    lm.close()


def test_manager_retention_respects_cleanup_policy(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), _cfg(retention_ms=1000))
    plain = lm.create_log("plain", 0, uuid.uuid4())
    compact = lm.create_log("cmp", 0, uuid.uuid4(), _cfg(retention_ms=1000, cleanup_policy="compact"))
    both = lm.create_log("both", 0, uuid.uuid4(), _cfg(retention_ms=1000, cleanup_policy="compact,delete"))
    # an empty cleanup.policy (Kafka accepts the empty list): neither deleted by time nor compacted
    none = lm.create_log("none", 0, uuid.uuid4(), _cfg(retention_ms=1000, cleanup_policy=""))
    for log in (plain, compact, both, none):
        _fill(log, 60, NOW)
    _fill(none, 60, NOW + 60)   # the same keys again: compaction would drop the first 60
    n = {log.topic: len(log.segments) for log in (plain, compact, both, none)}
    lm.enforce_retention()  # now >> NOW + retention.ms
    assert len(plain.segments) == 1 and plain.log_start_offset == plain.log_end_offset == 60
    # compacted logs are the cleaner's (Kafka's cleaner thread applies their retention after cleaning)
    assert len(both.segments) == n["both"] and len(compact.segments) == n["cmp"]
    lm.cleanup()
    assert len(both.segments) == 1 and both.log_start_offset == both.log_end_offset == 60
    assert compact.log_start_offset == 0 and _offsets(compact) == list(range(60))  # never deleted by time
    assert len(none.segments) == n["none"] and _offsets(none) == list(range(120))
    lm.close()


def test_a_batch_larger_than_segment_bytes_is_refused_and_full_segments_roll(tmp_path: Path) -> None:
    """Kafka refuses a batch larger than segment.bytes (UnifiedLog.append: RecordBatchTooLargeException,
    RECORD_LIST_TOO_LARGE) and leaves the log as it was; batches that each fit but not together roll a segment
    per batch, and there are never two segments with one base offset (KAFKA-6388: retention stalled on it)."""
    log = PartitionLog.create(str(tmp_path / "b-0"), "b", 0, uuid.uuid4(), _cfg(segment_bytes=500, retention_ms=1000))
    with pytest.raises(RecordBatchTooLargeError):
        log.append(encode_batch([Rec(b"x" * 200) for _ in range(5)], base_timestamp=NOW), now_ms=NOW)
    assert log.log_end_offset == 0 and [s.base_offset for s in log.segments] == [0]
    for i in range(4):   # the last batch is young: the active segment is not expired
        ts = NOW + i if i < 3 else NOW + 10**6
        log.append(encode_batch([Rec(b"x" * 150) for _ in range(2)], base_timestamp=ts), now_ms=ts)
    assert [s.base_offset for s in log.segments] == [0, 2, 4, 6]
    assert sorted(n for n in os.listdir(log.dir) if n.endswith(".log")) == [f"{b:020d}.log" for b in (0, 2, 4, 6)]
    assert log.delete_old_segments(NOW + 10**6) == 3 and log.log_start_offset == 6
    log.close()
    reopened = PartitionLog.open(str(tmp_path / "b-0"), "b", 0, _cfg(segment_bytes=500), clean=True)
    assert [s.base_offset for s in reopened.segments] == [6] and _offsets(reopened) == list(range(6, 8))
    reopened.close()
