"""Real broker data dirs (Apache Kafka 3.8 and 3.6.1, KRaft) and kafka-clients 3.9.1 batches.

- the log dirs open unmodified (copied to tmp), every batch reads back, lookups through Kafka's own
  `.index`/`.timeindex` land on the right batches;
- rebuilding the indexes from the `.log` alone reproduces Kafka's files byte for byte for every segment
  written in one broker lifetime; partitions that lived through restarts (FORMATS.md) instead have every
  entry checked against a real batch;
- appending the fixture batches into a fresh log with the same offsets and leader epochs gives a
  byte-identical `.log`.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import batch_records, iter_batches

FIXTURES = ["kafka-3.8-kraft-a", "kafka-3.6.1-kraft-b"]
# partitions whose indexes carry history from broker restarts (FORMATS.md; the KRaft metadata logs changed
# leader epoch across restarts, visible in their leader-epoch-checkpoint)
HISTORY = {
    "kafka-3.8-kraft-a": {"__consumer_offsets-0", "__consumer_offsets-3", "__consumer_offsets-19",
                          "__consumer_offsets-20", "__consumer_offsets-39", "sensor-data-topic-0",
                          "__cluster_metadata-0"},
    "kafka-3.6.1-kraft-b": {"__consumer_offsets-0", "order_created-0", "__cluster_metadata-0"},
}


def _partition_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.rsplit("-", 1)[-1].isdigit())


def _open_partition(path: Path) -> PartitionLog:
    topic, part = path.name.rsplit("-", 1)
    return PartitionLog.open(str(path), topic, int(part), LogConfig(), clean=True)


def _log_batches(path: Path) -> list[tuple[int, object]]:
    out = []
    for seg_file in sorted(path.glob("*.log")):
        data = seg_file.read_bytes()
        out += [(int(seg_file.name[:20]), pos, h) for pos, h in iter_batches(data)]
    return out


@pytest.mark.parametrize("fixture", FIXTURES)
def test_log_dir_opens_and_every_batch_reads_back(fixture: str, copy_fixture) -> None:  # type: ignore[no-untyped-def]
    root = copy_fixture(fixture)
    lm = LogManager.open(str(root), LogConfig(), node_id=1)
    assert lm.was_clean
    names = {f"{t}-{p}" for (t, p), _l in lm.logs()}
    expected = {p.name for p in _partition_dirs(root)} - {"__cluster_metadata-0"}
    assert names == expected
    total = 0
    for (_t, _p), log in lm.logs():
        pdir = Path(log.dir)
        raw = b"".join(f.read_bytes() for f in sorted(pdir.glob("*.log")))
        batches = list(iter_batches(raw))
        assert sum(h.size for _p2, h in batches) == len(raw)
        if batches:
            assert log.log_end_offset == batches[-1][1].last_offset + 1
            assert log.topic_id is not None
        else:
            assert log.log_end_offset == 0
        for pos, h in batches:
            for off in {h.base_offset, h.last_offset}:
                got = log.read_bytes(off, 1)
                assert got == raw[pos : pos + h.size]
            total += 1
        assert log.read_bytes(0, len(raw) + 1) == raw if batches else log.read(0, 100) == []
    assert total >= 5
    lm.close()
    assert (root / ".kafka_cleanshutdown").exists()
    # the KRaft metadata log is not a topic, but it is a Kafka log like any other
    meta = _open_partition(root / "__cluster_metadata-0")
    raw = b"".join(f.read_bytes() for f in sorted((root / "__cluster_metadata-0").glob("*.log")))
    n = 0
    for pos, h in iter_batches(raw):
        assert meta.read_bytes(h.last_offset, 1) == raw[pos : pos + h.size]
        n += 1
    assert n > 3000 and meta.log_end_offset == h.last_offset + 1
    meta.close()


@pytest.mark.parametrize("fixture", FIXTURES)
def test_lookups_through_kafkas_own_indexes(fixture: str, copy_fixture) -> None:  # type: ignore[no-untyped-def]
    root = copy_fixture(fixture)
    checked = 0
    for pdir in _partition_dirs(root):
        log = _open_partition(pdir)
        seg = log.segments[0]
        by_last = {h.last_offset: (pos, h) for pos, h in seg.batches()}
        for off, pos in seg.offset_index.all_entries():
            found = seg.translate_offset(off)
            assert found is not None and found[0] == pos and found[1].last_offset == off
            checked += 1
        records = [r for _pos, h in seg.batches() for r in batch_records(seg.read_batch(_pos, h))]
        for ts, off in seg.time_index.all_entries():
            assert off in by_last and by_last[off][1].max_timestamp == ts
            got = log.offset_for_timestamp(ts)
            want = next(((r.offset, r.timestamp) for r in records if r.timestamp >= ts), None)
            assert got == want, (pdir.name, ts)
            checked += 1
        if records:
            best = max(r.timestamp for r in records)
            first = next(r for r in records if r.timestamp == best)
            assert log.max_timestamp_offset() == (first.offset, best)
            assert log.offset_for_timestamp(best + 1) is None
        log.close()
    assert checked > 100


@pytest.mark.parametrize("fixture", FIXTURES)
def test_rebuilt_indexes_match_kafka(fixture: str, copy_fixture) -> None:  # type: ignore[no-untyped-def]
    root = copy_fixture(fixture)
    exact = 0
    for pdir in _partition_dirs(root):
        originals = {f.name: f.read_bytes() for f in pdir.iterdir() if f.suffix in (".index", ".timeindex")}
        for name in originals:
            (pdir / name).unlink()
        log = _open_partition(pdir)
        log.close()
        rebuilt = {name: (pdir / name).read_bytes() for name in originals}
        if pdir.name not in HISTORY[fixture]:
            assert rebuilt == originals, pdir.name
            exact += 1
            continue
        # history: every entry of Kafka's files points at a real batch with matching facts
        batches = _log_batches(pdir)
        for name, data in originals.items():
            base = int(name[:20])
            positions = {(b, pos): h for b, pos, h in batches}
            lasts = {h.last_offset: h for b, _pos, h in batches if b == base}
            if name.endswith(".index"):
                for rel, pos in struct.iter_unpack(">ii", data):
                    assert positions[(base, pos)].last_offset == base + rel
            else:
                prev = -1
                for ts, rel in struct.iter_unpack(">qi", data):
                    assert lasts[base + rel].max_timestamp == ts and ts > prev
                    prev = ts
    assert exact >= 40


def _replay(batches: list[bytes], tmp: Path) -> bytes:
    log = PartitionLog.create(str(tmp), "replay", 0, None, LogConfig(), leader_epoch=None)
    for b in batches:
        epoch = struct.unpack_from(">i", b, 12)[0]
        info = log.append(b, leader_epoch=epoch, validate_producer=False)
        assert info.base_offset == struct.unpack_from(">q", b, 0)[0]
    log.close()
    return b"".join(p.read_bytes() for p in sorted(tmp.glob("*.log")))


def test_generated_client_segment_replays_byte_identical(reference: Path, tmp_path: Path) -> None:
    seg = reference / "fixtures" / "generated-kafka-clients-3.9.1" / "segment-00000000000000000000.log"
    raw = seg.read_bytes()
    batches = [raw[p : p + h.size] for p, h in iter_batches(raw)]
    assert len(batches) == 12
    assert _replay(batches, tmp_path / "g-0") == raw
    # the aborted transaction (pid 2000, data from 52, ABORT marker at 55) is in the .txnindex
    txn = (tmp_path / "g-0" / "00000000000000000000.txnindex").read_bytes()
    version, pid, first, last, _lso = struct.unpack(">hqqqq", txn)
    assert (version, pid, first, last) == (0, 2000, 52, 55)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_real_logs_replay_byte_identical(fixture: str, reference: Path, tmp_path: Path) -> None:
    src = reference / "fixtures" / "segments" / fixture
    n = 0
    for pdir in _partition_dirs(src):
        for seg in sorted(pdir.glob("*.log")):
            raw = seg.read_bytes()
            if not raw:
                continue
            batches = [raw[p : p + h.size] for p, h in iter_batches(raw)]
            dest = tmp_path / pdir.name
            assert _replay(batches, dest) == raw, pdir.name
            if pdir.name not in HISTORY[fixture]:
                # one lifetime of appends: the indexes equal Kafka's too
                for suffix in (".index", ".timeindex"):
                    assert (dest / (seg.stem + suffix)).read_bytes() == (pdir / (seg.stem + suffix)).read_bytes()
            shutil.rmtree(dest)
            n += 1
    assert n >= 3
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fixture", ["kafka-3.1.0-zk-c", "kafka-2.x-zk-cp-d"])
def test_older_log_dirs_without_indexes_open(fixture: str, copy_fixture) -> None:  # type: ignore[no-untyped-def]
    """ZooKeeper-era dirs whose 10 MiB index files were dropped: indexes are rebuilt, data reads back."""
    from kafkalite_storage.checkpoints import read_properties

    root = copy_fixture(fixture)
    props = read_properties(str(root / "meta.properties"))
    node = int(props.get("broker.id", props.get("node.id", "1")))
    lm = LogManager.open(str(root), LogConfig(), node_id=node)
    n = 0
    for (_t, _p), log in lm.logs():
        for seg in log.segments:
            assert os.path.exists(seg.offset_index.path) or seg.offset_index.entries == 0
        for _seg, _pos, h in log.batches():
            data = log.read_bytes(h.base_offset, 1)
            assert struct.unpack_from(">q", data)[0] == h.base_offset and len(data) == h.size
            n += 1
    assert n > 10
    lm.close()
    for pdir in _partition_dirs(root):
        for logf in pdir.glob("*.log"):
            assert (pdir / (logf.stem + ".index")).exists() and (pdir / (logf.stem + ".timeindex")).exists()


def test_appending_to_a_kafka_written_partition_keeps_epochs_monotonic(copy_fixture) -> None:  # type: ignore[no-untyped-def]
    root = copy_fixture("kafka-3.8-kraft-a")
    lm = LogManager.open(str(root), LogConfig(), node_id=1)
    log = lm.get_log("first", 0)
    assert log is not None and log.latest_epoch() == 8
    leo = log.log_end_offset
    from kafkalite_storage.testing import encode_batch

    info = log.append(encode_batch([b"after kafka"]), leader_epoch=0)
    assert info.base_offset == leo
    assert struct.unpack_from(">i", log.read_bytes(leo, 1), 12)[0] == 8
    assert log.end_offset_for_epoch(8) == (8, leo + 1)
    assert log.end_offset_for_epoch(4) == (0, 11)
    lm.close()
    text = (root / "first-0" / "leader-epoch-checkpoint").read_text()
    assert text == "0\n2\n0 0\n8 11\n"
