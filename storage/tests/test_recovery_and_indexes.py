"""Crash recovery, leftover files, and Kafka's index rule on what we write ourselves."""

from __future__ import annotations

import os
import random
import struct
import time
import uuid
from pathlib import Path

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import iter_batches
from kafkalite_storage.testing import Rec, encode_batch

NOW = time.time_ns() // 1_000_000


def _batch(i: int, size: int = 100, ts: int | None = None) -> bytes:
    return encode_batch([Rec(b"%d:" % i + b"x" * size, timestamp=ts)], base_timestamp=NOW + i)


def _expected_indexes(log_bytes: bytes, base: int, interval: int = 4096) -> tuple[bytes, bytes]:
    """Kafka's LogSegment.append rule, one append per batch, plus the final time-index entry on close."""
    idx, tidx = bytearray(), bytearray()
    since = 0
    max_ts, max_off = -1, base
    last_tidx_ts = -1
    for pos, h in iter_batches(log_bytes):
        if h.max_timestamp > max_ts:
            max_ts, max_off = h.max_timestamp, h.last_offset
        if since > interval:
            idx += struct.pack(">ii", h.last_offset - base, pos)
            if max_ts > last_tidx_ts:
                tidx += struct.pack(">qi", max_ts, max_off - base)
                last_tidx_ts = max_ts
            since = 0
        since += h.size
    if max_ts > last_tidx_ts:
        tidx += struct.pack(">qi", max_ts, max_off - base)
    return bytes(idx), bytes(tidx)


def test_indexes_we_write_follow_kafkas_rule(tmp_path: Path) -> None:
    rng = random.Random(7)
    cfg = LogConfig(segment_bytes=64 * 1024)
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), cfg)
    for i in range(600):
        # sizes around the interval, timestamps that sometimes go backwards
        ts = NOW + i * 10 + rng.choice([0, 0, 0, -5000, 3])
        recs = [Rec(b"y" * rng.randint(10, 1500), timestamp=ts + k) for k in range(rng.randint(1, 4))]
        log.append(encode_batch(recs, base_timestamp=ts), now_ms=NOW + i * 10)
    segs = [s.base_offset for s in log.segments]
    assert len(segs) >= 4
    log.close()
    d = tmp_path / "t-0"
    written = {}
    for base in segs:
        data = (d / f"{base:020d}.log").read_bytes()
        idx, tidx = _expected_indexes(data, base)
        assert (d / f"{base:020d}.index").read_bytes() == idx
        assert (d / f"{base:020d}.timeindex").read_bytes() == tidx
        assert len(idx) > 0
        written[base] = (idx, tidx)
    # rebuilding from the .log files alone gives the same bytes
    for f in d.glob("*index"):
        f.unlink()
    PartitionLog.open(str(d), "t", 0, cfg, clean=True).close()
    for base, (idx, tidx) in written.items():
        assert (d / f"{base:020d}.index").read_bytes() == idx
        assert (d / f"{base:020d}.timeindex").read_bytes() == tidx


def test_active_index_is_preallocated_and_trimmed(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), LogConfig(segment_index_bytes=1000))
    for i in range(100):
        log.append(_batch(i))
    seg = log.active
    assert os.path.getsize(seg.offset_index.path) == 1000 - 1000 % 8
    assert os.path.getsize(seg.time_index.path) == 1000 - 1000 % 12
    log.close()
    assert os.path.getsize(seg.offset_index.path) % 8 == 0 < os.path.getsize(seg.offset_index.path) < 1000


def test_roll_on_full_index(tmp_path: Path) -> None:
    cfg = LogConfig(segment_index_bytes=48, index_interval_bytes=0)  # 6 offset entries, 4 time entries
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), cfg)
    for i in range(40):
        log.append(_batch(i))
    assert len(log.segments) > 5
    for seg in log.segments[:-1]:
        assert seg.time_index.entries <= 4 and seg.offset_index.entries <= 6
    log.close()


def test_unclean_stop_truncates_torn_tail_and_garbage(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    log = lm.create_log("t", 0, uuid.uuid4())
    for i in range(60):
        log.append(_batch(i))
    log.flush()
    expected = log.read_bytes(0, 10**7)
    active = log.active
    lm.close(clean=False)
    # a torn last write: half a batch, then garbage
    with open(active.log_path, "ab") as f:
        f.write(_batch(99)[:40])
    assert os.path.getsize(active.offset_index.path) > 0  # preallocated, zero-filled
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    assert not lm.was_clean
    log = lm.get_log("t", 0)
    assert log is not None and log.log_end_offset == 60
    assert log.read_bytes(0, 10**7) == expected
    assert log.append(_batch(60)).base_offset == 60
    lm.close()


def test_corrupt_batch_cuts_it_and_everything_after(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    log = lm.create_log("t", 0, uuid.uuid4())
    for i in range(60):
        log.append(_batch(i))
    # no checkpoint was written: the recovery point is 0, every segment is checked
    segs = log.segments
    victim = segs[1]
    lm.close(clean=False)
    # flip a byte inside the 3rd batch of the second segment
    positions = [p for p, _h in iter_batches(Path(victim.log_path).read_bytes())]
    with open(victim.log_path, "r+b") as f:
        f.seek(positions[2] + 70)
        b = f.read(1)
        f.seek(positions[2] + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    log = lm.get_log("t", 0)
    assert log is not None
    assert log.log_end_offset == victim.base_offset + 2
    assert [s.base_offset for s in log.segments] == [s.base_offset for s in segs[:2]]
    assert not any(Path(s.log_path).exists() for s in segs[2:])
    for off in range(log.log_end_offset):
        assert log.read_bytes(off, 1)
    lm.close()


def test_leftover_files_are_handled(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog.create(str(d), "t", 0, uuid.uuid4(), LogConfig(segment_bytes=1000))
    for i in range(20):
        log.append(_batch(i))
    segs = [s.base_offset for s in log.segments]
    log.close()
    assert len(segs) >= 3
    (d / f"{segs[0]:020d}.log.deleted").write_bytes(b"junk")
    (d / f"{segs[0]:020d}.log.cleaned").write_bytes(b"junk")
    (d / f"{segs[1]:020d}.index.swap").write_bytes(b"junk")
    # a compaction result that replaces segments 0 and 1 with one file holding only some of their batches
    first = (d / f"{segs[0]:020d}.log").read_bytes()
    second = (d / f"{segs[1]:020d}.log").read_bytes()
    kept = [first[p : p + h.size] for p, h in iter_batches(first)][::2]
    kept += [second[p : p + h.size] for p, h in iter_batches(second)]
    (d / f"{segs[0]:020d}.log.swap").write_bytes(b"".join(kept))
    log = PartitionLog.open(str(d), "t", 0, LogConfig(segment_bytes=1000), clean=True)
    names = sorted(os.listdir(d))
    assert not [n for n in names if n.endswith((".deleted", ".cleaned", ".swap"))]
    assert [s.base_offset for s in log.segments] == [segs[0], *segs[2:]]
    assert log.read_bytes(0, 10**6).startswith(kept[0])
    assert log.log_end_offset == 20
    log.close()


def test_clean_open_rebuilds_insane_index(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = PartitionLog.create(str(d), "t", 0, uuid.uuid4(), LogConfig())
    for i in range(100):
        log.append(_batch(i))
    log.close()
    idx = d / f"{0:020d}.index"
    good = idx.read_bytes()
    idx.write_bytes(good + b"\x00\x00\x00")  # not a multiple of the entry size
    log = PartitionLog.open(str(d), "t", 0, LogConfig(), clean=True)
    assert log.read_bytes(57, 1)
    log.close()
    assert idx.read_bytes() == good


def test_checkpoint_flushes_rolled_segments_and_skips_their_recovery(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    log = lm.create_log("t", 0, uuid.uuid4())
    for i in range(60):
        log.append(_batch(i))
    lm.checkpoint()
    assert log.recovery_point == log.active.base_offset > 0
    rp = (tmp_path / "recovery-point-offset-checkpoint").read_text().split("\n")
    assert rp[2] == f"t 0 {log.active.base_offset}"
    lm.close(clean=False)
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    log2 = lm.get_log("t", 0)
    assert log2 is not None and log2.log_end_offset == 60
    lm.close()


def test_index_load_stops_at_crash_padding(tmp_path: Path) -> None:
    from kafkalite_storage.index import OffsetIndex, TimeIndex

    idx = OffsetIndex(str(tmp_path / "x.index"), 100, 10 * 1024 * 1024)
    tidx = TimeIndex(str(tmp_path / "x.timeindex"), 100, 10 * 1024 * 1024)
    idx.resize(10 * 1024 * 1024)
    tidx.resize(10 * 1024 * 1024)
    for i in range(1, 4):
        idx.append(100 + i * 10, i * 5000)
        tidx.maybe_append(NOW + i, 100 + i * 10)
    idx.close(sync=False)
    tidx.close(sync=False)
    assert os.path.getsize(tmp_path / "x.index") == 10 * 1024 * 1024  # a crash leaves the padding
    again = OffsetIndex(str(tmp_path / "x.index"), 100, 10 * 1024 * 1024)
    tagain = TimeIndex(str(tmp_path / "x.timeindex"), 100, 10 * 1024 * 1024)
    assert again.all_entries() == [(110, 5000), (120, 10000), (130, 15000)]
    assert tagain.all_entries() == [(NOW + 1, 110), (NOW + 2, 120), (NOW + 3, 130)]
    again.close()
    tagain.close()


def test_torn_metadata_files_are_tolerated(tmp_path: Path) -> None:
    """leader-epoch-checkpoint and partition.metadata are fsynced lazily; a crash may leave them empty. The
    epochs are rebuilt from the batches' PartitionLeaderEpoch; the topic id comes back with the next create."""
    lm = LogManager.open(str(tmp_path), LogConfig())
    log = lm.create_log("t", 0, uuid.uuid4())
    log.append(_batch(0))
    lm.close(clean=False)
    (tmp_path / "t-0" / "leader-epoch-checkpoint").write_bytes(b"0\n")
    (tmp_path / "t-0" / "partition.metadata").write_bytes(b"")
    lm = LogManager.open(str(tmp_path), LogConfig())
    log = lm.get_log("t", 0)
    assert log is not None and log.topic_id is None and log.leader_epochs == [(0, 0)]
    tid = uuid.uuid4()
    assert lm.create_log("t", 0, tid) is log and log.topic_id == tid
    log.append(_batch(1))
    assert log.leader_epochs == [(0, 0)]
    lm.close()
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"


def test_large_indexes_are_memory_mapped_and_still_writable(tmp_path: Path) -> None:
    from kafkalite_storage.index import MMAP_MIN_ENTRIES, _Col

    cfg = LogConfig(index_interval_bytes=0, segment_bytes=10**8)
    d = tmp_path / "t-0"
    log = PartitionLog.create(str(d), "t", 0, uuid.uuid4(), cfg)
    n = MMAP_MIN_ENTRIES + 200
    for i in range(n):
        log.append(_batch(i, size=10))
    log.roll()
    log.append(_batch(n, size=10))
    expected = log.read_bytes(0, 10**8)
    log.close()
    log = PartitionLog.open(str(d), "t", 0, cfg, clean=True)
    seg = log.segments[0]  # inactive: its indexes are read through mmap (the active one gets arrays)
    assert log.read_bytes(0, 1) and log.offset_for_timestamp(NOW + 5) == (5, NOW + 5)
    assert isinstance(seg.offset_index._keys, _Col) and isinstance(seg.time_index._keys, _Col)
    for off in (0, 1, n // 2, n - 1):
        got = log.read_bytes(off, 1)
        assert next(iter_batches(got))[1].base_offset == off
    assert log.offset_for_timestamp(NOW + n // 2) == (n // 2, NOW + n // 2)
    assert log.read_bytes(0, 10**8) == expected
    log.truncate_to(n - 10)  # segment 0 becomes active again: its entries turn back into arrays
    assert not isinstance(seg.offset_index._keys, _Col)
    for i in range(n - 10, n + 5):
        log.append(_batch(i, size=10))
    assert log.log_end_offset == n + 5
    log.close()
    idx, tidx = _expected_indexes((d / f"{0:020d}.log").read_bytes(), 0, interval=0)
    # entries before the truncation point came from the first lifetime (same rule), the rest were appended
    assert (d / f"{0:020d}.index").read_bytes()[: len(idx) - 16 * 8] == idx[: len(idx) - 16 * 8]
    assert len((d / f"{0:020d}.timeindex").read_bytes()) % 12 == 0 and tidx


def _torn(tmp_path: Path, n: int = 3, batches: int = 20) -> dict[int, bytes]:
    """n logs written, closed uncleanly, each with a torn last write; returns what each had acknowledged."""
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    expected = {}
    for p in range(n):
        log = lm.create_log("t", p, uuid.uuid4())
        for i in range(batches):
            log.append(_batch(i))
        log.flush()
        expected[p] = log.read_bytes(0, 10**7)
    actives = [lm.get_log("t", p).active.log_path for p in range(n)]   # type: ignore[union-attr]
    lm.close(clean=False)
    for path in actives:
        with open(path, "ab") as f:
            f.write(_batch(99)[:40])
    return expected


def test_unclean_open_recovers_each_log_on_first_use(tmp_path: Path) -> None:
    """After an unclean stop nothing is loaded at open (100,000 partitions took ~33 s to recover before the
    broker was ready); each log is recovered from its recovery point when first used, as Kafka recovers each
    log on its own, and serves nothing before that."""
    expected = _torn(tmp_path)
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    assert not lm.was_clean
    assert lm.pending_loads == 3 and list(lm.loaded_logs()) == []
    assert sorted(lm.partitions()) == [("t", 0), ("t", 1), ("t", 2)]
    assert lm.leader_epoch_of("t", 1) == 0 and lm.pending_loads == 3   # read from its checkpoint, not loaded
    log = lm.get_log("t", 1)
    assert log is not None and log.log_end_offset == 20 and log.read_bytes(0, 10**7) == expected[1]
    assert lm.pending_loads == 2
    assert lm.load_pending() == 0
    for p in (0, 2):
        log = lm.get_log("t", p)
        assert log is not None and log.log_end_offset == 20 and log.read_bytes(0, 10**7) == expected[p]
        assert log.append(_batch(20)).base_offset == 20
    lm.close()


def test_clean_close_before_every_log_is_recovered_leaves_them_to_the_next_start(tmp_path: Path) -> None:
    """A clean close while some logs were never recovered writes no clean-shutdown marker: the next start
    still recovers them (their torn tails truncated), and the recovered one keeps what it took."""
    expected = _torn(tmp_path)
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    log = lm.get_log("t", 0)
    assert log is not None
    log.append(_batch(20))
    expected[0] = log.read_bytes(0, 10**7)
    lm.close()
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    assert not lm.was_clean
    for p in range(3):
        log = lm.get_log("t", p)
        assert log is not None and log.read_bytes(0, 10**7) == expected[p]
        assert log.log_end_offset == (21 if p == 0 else 20)
    lm.close()
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=4000))
    assert lm.was_clean   # every log recovered and closed: a clean stop again
    lm.close()
