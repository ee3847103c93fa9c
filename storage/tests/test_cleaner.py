"""Log compaction: latest value per key survives, offsets never move, crash-safe swap."""

from __future__ import annotations

import os
import random
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import batch_records, iter_batches, validate_batch
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.testing import Rec, encode_batch, encode_control_batch

NOW = time.time_ns() // 1_000_000
CFG = LogConfig(segment_bytes=4000, cleanup_policy="compact", delete_retention_ms=1000,
                file_delete_delay_ms=0)


def _fill(log: PartitionLog, n: int, keys: int, rng: random.Random) -> dict[bytes, tuple[int, bytes | None]]:
    """Random keyed writes (some tombstones, several codecs, some idempotent); returns key -> latest."""
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    seq = 0
    for i in range(n):
        recs = []
        for _ in range(rng.randint(1, 4)):
            k = b"key-%d" % rng.randrange(keys)
            v = None if rng.random() < 0.1 else b"value-%d-" % i + b"p" * rng.randint(0, 60)
            recs.append(Rec(v, key=k, timestamp=NOW + i))
        idem = rng.random() < 0.3
        raw = encode_batch(recs, base_timestamp=NOW + i, compression=rng.choice([0, 0, 1, 2, 3, 4]),
                           producer_id=77 if idem else -1, producer_epoch=0 if idem else -1,
                           base_sequence=seq if idem else -1)
        if idem:
            seq += len(recs)
        info = log.append(raw, now_ms=NOW + i)
        for j, r in enumerate(recs):
            assert r.key is not None
            latest[r.key] = (info.base_offset + j, r.value)
    return latest


def _contents(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    out = []
    prev_last = -1
    for pos, h in iter_batches(data):
        batch = data[pos : pos + h.size]
        validate_batch(batch, exact_count=False)
        assert h.base_offset > prev_last
        prev_last = h.last_offset
        out += [(r.offset, r.key, r.value) for r in batch_records(batch)]
    return out


def test_compaction_keeps_latest_value_per_key(tmp_path: Path) -> None:
    rng = random.Random(3)
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("c", 0, uuid.uuid4())
    latest = _fill(log, 300, 40, rng)
    before = _contents(log)
    leo, size_before, nseg = log.log_end_offset, log.size_bytes, len(log.segments)
    active_base = log.active.base_offset
    res = clean_log(log, NOW + 10**6)
    assert res is not None and res.records_removed > 0
    # groups are formed from original sizes (as Kafka does): shrunken segments merge on the next pass
    assert clean_log(log, NOW + 10**6) is None  # nothing dirty
    res2 = clean_log(log, NOW + 10**6, force=True)
    assert res2 is not None and res2.records_removed == 0 and len(log.segments) < nseg
    assert log.log_end_offset == leo and log.size_bytes < size_before
    # below the active segment: exactly the latest record of each key there, tombstones included: the first
    # pass gave their batches a delete horizon (pass time + delete.retention.ms), which has not passed yet
    # (a newer value in the active segment does not count: that segment is not cleanable yet)
    in_range: dict[bytes | None, tuple[int, bytes | None, bytes | None]] = {}
    for o, k, v in before:
        if o < active_base:
            in_range[k] = (o, k, v)
    assert any(v is None for _o, _k, v in in_range.values())
    assert {x for x in _contents(log) if x[0] < active_base} == set(in_range.values())
    res3 = clean_log(log, NOW + 10**6 + CFG.delete_retention_ms, force=True)  # at the horizon: they go
    assert res3 is not None and res3.records_removed == sum(v is None for _o, _k, v in in_range.values())
    after = _contents(log)
    cleaned = {(o, k, v) for o, k, v in after if o < active_base}
    assert cleaned == {x for x in in_range.values() if x[2] is not None}
    assert set(latest) == {k for _o, k, _v in before}
    # the active segment is untouched; offsets never move
    assert [x for x in after if x[0] >= active_base] == [x for x in before if x[0] >= active_base]
    assert set(after) <= set(before)
    for off, _k, _v in after:
        got = log.read_bytes(off, 1)
        assert any(r.offset == off for r in batch_records(got[: validate_len(got)]))
    lm.cleanup(NOW + 10**6 + CFG.delete_retention_ms)  # purges the .deleted files (file.delete.delay.ms=0)
    assert not [n for n in os.listdir(log.dir) if n.endswith(".deleted")]
    lm.close()
    assert (tmp_path / "cleaner-offset-checkpoint").read_text().split("\n")[2] == f"c 0 {active_base}"
    lm = LogManager.open(str(tmp_path), CFG)
    log2 = lm.get_log("c", 0)
    assert log2 is not None and _contents(log2) == after and log2.cleaner_checkpoint == active_base
    lm.close(clean=False)
    lm = LogManager.open(str(tmp_path), CFG)  # unclean: recovery validates the rewritten segments
    log3 = lm.get_log("c", 0)
    assert log3 is not None and _contents(log3) == after
    lm.close()


def validate_len(data: bytes) -> int:
    return next(iter_batches(data))[1].size


def _batches(log: PartitionLog) -> list[tuple[int, int, bool, int]]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    return [(h.base_offset, h.records_count, h.is_control, h.producer_id) for _pos, h in iter_batches(data)]


def test_recent_tombstones_and_committed_transactions(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "c-0"), "c", 0, uuid.uuid4(), CFG)
    log.append(encode_batch([Rec(b"v1", key=b"a"), Rec(b"v1", key=b"b")], base_timestamp=NOW))
    log.append(encode_batch([Rec(None, key=b"a")], base_timestamp=NOW + 1))  # tombstone
    log.append(encode_batch([Rec(b"t", key=b"b")], base_timestamp=NOW + 2, producer_id=9,
                            producer_epoch=0, base_sequence=0, transactional=True))
    log.append_control(1, producer_id=9, producer_epoch=0, coordinator_epoch=0, now_ms=NOW + 3)
    log.append(encode_batch([Rec(b"v2", key=b"b")], base_timestamp=NOW + 4))
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=NOW + 5))
    res = clean_log(log, NOW + 10, force=True)  # tombstone still within delete.retention.ms
    assert res is not None
    marker = (4, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")  # COMMIT, coordinator epoch 0
    # the committed transactional b=t is compacted like any record (b=v2 is newer); its batch was producer 9's
    # last write, so it stays as an empty header (Kafka's RETAIN_EMPTY) and, a batch of the transaction being
    # still there, so does the COMMIT marker
    assert _contents(log) == [(2, b"a", None), marker, (5, b"b", b"v2"), (6, b"z", b"x")]
    assert (3, 0, False, 9) in _batches(log)
    log.roll()
    log.append(encode_batch([Rec(b"y", key=b"z")], base_timestamp=NOW + 6))
    clean_log(log, NOW + 5000, force=True)  # now the tombstone has expired
    # offset 6 stays: the newer z is in the active segment, which is not cleanable
    assert [o for o, _k, _v in _contents(log)] == [4, 5, 6, 7]
    assert [b for b in _batches(log) if b[3] == 9] == [(3, 0, False, 9), (4, 1, True, 9)]
    log.close()


def test_interrupted_compaction_is_completed_or_discarded(tmp_path: Path) -> None:
    d = tmp_path / "c-0"
    log = PartitionLog.create(str(d), "c", 0, uuid.uuid4(), CFG)
    _fill(log, 120, 10, random.Random(5))
    expected_leo = log.log_end_offset
    log.close()
    # a .cleaned file (crash while writing) is discarded
    (d / f"{0:020d}.log.cleaned").write_bytes(b"partial")
    log = PartitionLog.open(str(d), "c", 0, CFG, clean=True)
    assert not (d / f"{0:020d}.log.cleaned").exists()
    before = _contents(log)
    res = clean_log(log, NOW + 10**6)
    assert res is not None
    after = _contents(log)
    log.close()
    assert log.log_end_offset == expected_leo and len(after) < len(before)
    _ = encode_control_batch  # (markers are covered above)


@pytest.mark.e2e   # runs kafka-clients in a JVM
def test_kafka_clients_reads_compacted_segments(tmp_path: Path, requirement: Any) -> None:
    """kafka-clients 3.9.1 FileRecords: every rewritten batch is valid and iterates (gaps in offsets allowed)."""
    from kafkalite_storage.tests.java import checker

    checker.require_java(requirement)
    checker.build()
    log = PartitionLog.create(str(tmp_path / "c-0"), "c", 0, uuid.uuid4(), CFG)
    _fill(log, 200, 15, random.Random(11))
    assert clean_log(log, NOW + 10**6) is not None
    files = [s.log_path for s in log.segments]
    log.close()
    rows = checker.check_logs(files)
    assert [r for r in rows if r["error"]] == []
    assert {str(r["file"]) for r in rows} == set(files)
