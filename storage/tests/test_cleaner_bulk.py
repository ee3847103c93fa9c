"""Compaction at scale and with every codec: 100,000 updates over 1,000 keys plus tombstones.

After a pass exactly the latest record of each key below the active segment remains (offsets unchanged,
gaps expected); the first pass gives the tombstones' batch a delete horizon (pass time +
delete.retention.ms, KIP-534) and they vanish in a pass at or after it; every batch that lost records is
rebuilt with its own codec (gzip, snappy in xerial framing, lz4 frame, zstd) and keeps BaseOffset,
LastOffsetDelta and producer fields, its BaseTimestamp the first kept record's (as Kafka's builder writes it); the directory shrinks accordingly; and the cleaned
segments pass kafka-clients' FileRecords validation and kafka-dump-log's index checks like fresh ones.
"""

from __future__ import annotations

import io
import os
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import HEADER_SIZE, batch_records, iter_batches, parse_header, validate_batch
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.compression import XERIAL_MAGIC
from kafkalite_storage.dumplog import dump_files
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
KEYS = 1000
UPDATES = 100_000
PER_BATCH = 100
DELETED = range(0, KEYS, 10)  # every tenth key ends with a tombstone
CFG = LogConfig(segment_bytes=256 * 1024, cleanup_policy="compact", delete_retention_ms=60_000,
                file_delete_delay_ms=0, index_interval_bytes=4096, min_cleanable_dirty_ratio=0.5)
FIRST_PASS = NOW + UPDATES + 1000   # the first cleaning, 1 s after the tombstones
# payload magic of each codec: gzip member, snappy-java xerial stream, LZ4 frame, zstd frame
MAGIC = {1: b"\x1f\x8b", 2: XERIAL_MAGIC, 3: b"\x04\x22\x4d\x18", 4: b"\x28\xb5\x2f\xfd"}


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if n.endswith(".log"))


def _batches(log: PartitionLog) -> list[tuple[int, bytes]]:
    out = []
    for seg in log.segments[:-1]:
        for pos, hdr in seg.batches():
            out.append((hdr.base_offset, seg.read_batch(pos, hdr)))
    return out


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("bulk")
    lm = LogManager.open(str(root), CFG)
    log = lm.create_log("bulk", 0, uuid.uuid4())
    rng = random.Random(7)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    codec_of: dict[int, int] = {}
    header_of: dict[int, tuple] = {}
    t = NOW
    for b in range(UPDATES // PER_BATCH):
        recs = [Rec(b"val-%d-%d|" % (b, i) + b"z" * rng.randint(0, 30), key=b"key-%04d" % rng.randrange(KEYS),
                    timestamp=t + i) for i in range(PER_BATCH)]
        codec = b % 5
        raw = encode_batch(recs, base_timestamp=t, compression=codec, producer_id=5, producer_epoch=0,
                           base_sequence=b * PER_BATCH)
        info = log.append(raw, now_ms=t)
        h = parse_header(raw)
        codec_of[info.base_offset] = codec
        header_of[info.base_offset] = (h.last_offset_delta, h.producer_id, h.producer_epoch, h.base_sequence,
                                       h.base_timestamp)
        for i, r in enumerate(recs):
            assert r.key is not None
            latest[r.key] = (info.base_offset + i, r.value)
        t += PER_BATCH
    tomb_ts = t
    info = log.append(encode_batch([Rec(None, key=b"key-%04d" % k) for k in DELETED], base_timestamp=tomb_ts),
                      now_ms=tomb_ts)
    for i, k in enumerate(DELETED):
        latest[b"key-%04d" % k] = (info.base_offset + i, None)
    header_of[info.base_offset] = (len(DELETED) - 1, -1, -1, -1, tomb_ts)
    tomb_base = info.base_offset
    log.roll()
    log.append(encode_batch([Rec(b"tail", key=b"other")], base_timestamp=tomb_ts + 1), now_ms=tomb_ts + 1)
    before_bytes = _dir_bytes(log.dir)
    before_batches = _batches(log)
    # first pass: the tombstones stay and their batch gets a delete horizon
    res = clean_log(log, FIRST_PASS)
    assert res is not None
    after_first = [(r.offset, r.key, r.value) for _o, d in _batches(log) for r in batch_records(d)]
    lm.cleanup(FIRST_PASS)  # purges the .deleted files
    mid_bytes = _dir_bytes(log.dir)
    yield dict(lm=lm, log=log, latest=latest, codec_of=codec_of, header_of=header_of, tomb_ts=tomb_ts,
               before_bytes=before_bytes, mid_bytes=mid_bytes, after_first=after_first,
               before_batches=before_batches, result=res, tomb_base=tomb_base)
    lm.close()


def test_exactly_the_latest_value_of_each_key_remains(compacted: dict) -> None:
    latest = compacted["latest"]
    got = compacted["after_first"]
    assert sorted(got) == sorted((o, k, v) for k, (o, v) in latest.items())
    assert [o for o, _k, _v in got] == sorted(o for o, _k, _v in got)  # still in offset order
    assert compacted["result"].records_removed == UPDATES + len(DELETED) - KEYS
    tombstones = [k for _o, k, v in got if v is None]
    assert len(tombstones) == len(DELETED)


def test_disk_usage_drops(compacted: dict) -> None:
    # 1,000 of 100,100 records remain; batch headers and codec overhead keep it above 1 %
    assert compacted["mid_bytes"] < compacted["before_bytes"] * 0.06, (compacted["mid_bytes"],
                                                                       compacted["before_bytes"])


def test_rebuilt_batches_keep_their_codec_and_header_fields(compacted: dict) -> None:
    log: PartitionLog = compacted["log"]
    seen = dict.fromkeys(range(5), 0)
    for off, data in _batches(log):
        hdr = validate_batch(data, exact_count=False)
        want = compacted["codec_of"].get(off, 0)
        assert hdr.compression == want, f"batch {off}: codec {hdr.compression}, written with {want}"
        if want:
            assert data[HEADER_SIZE : HEADER_SIZE + len(MAGIC[want])] == MAGIC[want]
        assert (hdr.last_offset_delta, hdr.producer_id, hdr.producer_epoch,
                hdr.base_sequence) == compacted["header_of"][off][:4]
        first_ts = next(iter(batch_records(data))).timestamp
        if off == compacted["tomb_base"]:
            assert hdr.has_delete_horizon and hdr.base_timestamp == FIRST_PASS + CFG.delete_retention_ms
            assert first_ts == compacted["tomb_ts"]   # record timestamps unchanged
        else:
            assert not hdr.has_delete_horizon and hdr.base_timestamp == first_ts
        assert 0 < hdr.records_count <= PER_BATCH
        seen[want] += 1
    assert all(seen.values()), seen


@pytest.mark.e2e   # runs kafka-clients in a JVM
def test_tombstones_vanish_after_delete_retention(compacted: dict, tmp_path: Path, requirement: Any) -> None:
    log: PartitionLog = compacted["log"]
    lm: LogManager = compacted["lm"]
    later = FIRST_PASS + CFG.delete_retention_ms   # the delete horizon
    assert clean_log(log, later) is None  # nothing new is dirty ...
    res = clean_log(log, later - 1, force=True)   # ... a forced pass just before the horizon keeps them
    assert res is not None and res.records_removed == 0
    res = clean_log(log, later, force=True)   # ... and one at the horizon drops them
    assert res is not None and res.records_removed == len(DELETED)
    lm.cleanup(later)
    got = [(r.offset, r.key, r.value) for _o, d in _batches(log) for r in batch_records(d)]
    live = {(o, k, v) for k, (o, v) in compacted["latest"].items() if v is not None}
    assert set(got) == live and len(got) == KEYS - len(DELETED)
    # the log is intact for readers: from the log start, every record in order, then the active segment
    data = log.read_bytes(log.log_start_offset, 10**9)
    offsets = [r.offset for pos, h in iter_batches(data) for r in batch_records(data[pos : pos + h.size])]
    assert offsets == [*sorted(o for o, _k, _v in got), log.log_end_offset - 1]
    assert not [n for n in os.listdir(log.dir) if n.endswith((".deleted", ".cleaned", ".swap"))]

    # cleaned segments read by kafka-clients 3.9.1 (FileRecords.batches + ensureValid + record iteration)
    from kafkalite_storage.tests.java import checker

    checker.require_java(requirement)
    files = [s.log_path for s in log.segments]
    log.flush()
    rows = checker.check_logs(files)
    assert [r for r in rows if r.get("error")] == []
    summaries = {str(r["file"]): r for r in rows if r["type"] == "summary"}
    assert sum(int(r["records"]) for r in summaries.values()) == len(got) + 1
    for seg in log.segments:
        assert summaries[seg.log_path]["validBytes"] == seg.size

    # kafka-dump-log index checks on the cleaned segments, as on freshly rolled ones (the active segment's
    # indexes are preallocated until it rolls, in Kafka too)
    assert len(log.segments) > 1
    for seg in log.segments[:-1]:
        seg.offset_index.flush()
        seg.time_index.flush()
        paths = [p for p in (seg.offset_index.path, seg.time_index.path) if os.path.getsize(p)]
        out, err = io.StringIO(), io.StringIO()
        assert dump_files(paths, verify_index_only=True, out=out, err=err) == 0
        assert err.getvalue() == "", err.getvalue()
        out, err = io.StringIO(), io.StringIO()
        assert dump_files(paths, index_sanity_check=True, out=out, err=err) == 0
        assert err.getvalue() == "" and "Exception" not in out.getvalue(), out.getvalue() + err.getvalue()
