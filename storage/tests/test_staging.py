"""Staged appends (kafkalite_storage.staging): a batch written by another thread, adopted by the log's owner.

The adopted log holds the same batches, offsets, epochs and producer state as plain appends would give; a
refused or duplicate batch leaves nothing behind; a crash before adoption leaves only a `.tmp` the loader
deletes; a failing disk at each step of the adoption leaves the log as it was; the log keeps taking appends
while a batch is being staged."""
from __future__ import annotations

import errno
import os
import threading
import uuid
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, PartitionLog, fs
from kafkalite_storage.batch import CONTROL_ABORT, compute_crc, iter_batches, parse_header
from kafkalite_storage.errors import (
    CorruptRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
)
from kafkalite_storage.staging import stage
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_storage.tests.test_disk_faults import _assert_consistent

NOW = 1_700_000_000_000


def _batch(i: int, n: int = 3, pid: int = -1, seq: int = -1, codec: int = 0) -> bytes:
    kw: dict[str, object] = {}
    if pid >= 0:
        kw = {"producer_id": pid, "producer_epoch": 0, "base_sequence": seq}
    recs = [Rec(b"value-%d-%d" % (i, j) * 20, key=b"k%d" % j, timestamp=NOW + i) for j in range(n)]
    return encode_batch(recs, base_timestamp=NOW + i, compression=codec, **kw)  # type: ignore[arg-type]


def _log(tmp_path: Path, name: str = "t-0", **props: str) -> PartitionLog:
    cfg = LogConfig.from_props({"index.interval.bytes": "1", **props})
    return PartitionLog.create(str(tmp_path / name), "t", 0, uuid.uuid4(), cfg)


def _stored(log: PartitionLog) -> list[tuple[int, int, int, bytes]]:
    data = log.read_bytes(log.log_start_offset, 1 << 30)
    return [(h.base_offset, h.last_offset, h.partition_leader_epoch, data[p + 12 : p + h.size])
            for p, h in iter_batches(data)]


def _tmp_files(log: PartitionLog) -> list[str]:
    return [n for n in os.listdir(log.dir) if n.endswith(".tmp")]


# the workload: (kind, i) with kind plain (append) or staged (stage + append_staged); idempotent every 3rd
def _run(log: PartitionLog, ops: list[tuple[str, int]]) -> list[tuple[int, int, bool]]:
    out = []
    seq = 0
    for kind, i in ops:
        b = _batch(i, pid=5, seq=seq) if i % 3 == 0 else _batch(i)
        if i % 3 == 0:
            seq += 3
        epoch = 0 if i < 6 else 2
        if kind == "plain":
            info = log.append(b, leader_epoch=epoch, now_ms=NOW + i)
        else:
            info = log.append_staged(stage(log.dir, b), leader_epoch=epoch, now_ms=NOW + i)
        out.append((info.base_offset, info.last_offset, info.duplicate))
    return out


OPS = [("staged", 0), ("plain", 1), ("plain", 2), ("staged", 3), ("staged", 4), ("plain", 5), ("staged", 6),
       ("plain", 7), ("staged", 8), ("plain", 9)]


def test_staged_appends_store_what_plain_appends_store(tmp_path: Path) -> None:
    ref = _log(tmp_path, "ref-0")
    log = _log(tmp_path)
    assert _run(log, OPS) == _run(ref, [("plain", i) for _k, i in OPS])
    assert _stored(log) == _stored(ref)
    assert log.log_end_offset == ref.log_end_offset == 30
    assert log.leader_epochs == ref.leader_epochs
    assert log.producer_state.producers.keys() == ref.producer_state.producers.keys()
    # a staged batch starts a segment of its own (the first one took the empty segment at offset 0);
    # plain appends after it go into that segment
    assert [s.base_offset for s in log.segments] == [0, 9, 12, 18, 24]
    assert _tmp_files(log) == []
    # reads and timestamp lookups see every batch
    assert [parse_header(log.read_bytes(o, 1)).base_offset for o in (0, 10, 29)] == [0, 9, 27]
    assert log.offset_for_timestamp(NOW + 4) == ref.offset_for_timestamp(NOW + 4)
    expected = _stored(ref)
    for lg in (log, ref):
        lg.close()
    _assert_consistent(Path(log.dir))
    reopened = PartitionLog.open(log.dir, "t", 0, log.config, clean=True)
    assert _stored(reopened) == expected and reopened.log_end_offset == 30
    reopened.close()
    unclean = PartitionLog.open(log.dir, "t", 0, log.config, clean=False)
    assert _stored(unclean) == expected
    unclean.close()


def test_log_append_time_is_stamped_by_the_stage_with_a_valid_crc(tmp_path: Path) -> None:
    log = _log(tmp_path, **{"message.timestamp.type": "LogAppendTime"})
    staged = stage(log.dir, _batch(1, codec=4), log_append_time_ms=NOW + 99)
    info = log.append_staged(staged, now_ms=NOW + 5000)
    assert info.log_append_time_ms == NOW + 99
    stored = log.read_bytes(0, 1 << 20)
    hdr = parse_header(stored)
    assert hdr.max_timestamp == NOW + 99 and hdr.attributes & 0x08
    assert compute_crc(stored) == hdr.crc
    # staged as CreateTime, the topic switched to LogAppendTime meanwhile: appended the ordinary way
    info = log.append_staged(stage(log.dir, _batch(2)), now_ms=NOW + 7000)
    assert info.log_append_time_ms == NOW + 7000 and _tmp_files(log) == []
    log.close()


def test_a_duplicate_or_refused_batch_leaves_nothing_behind(tmp_path: Path) -> None:
    log = _log(tmp_path, **{"message.timestamp.after.max.ms": "3600000"})
    first = _batch(0, pid=5, seq=0)
    log.append_staged(stage(log.dir, first), now_ms=NOW)
    again = log.append_staged(stage(log.dir, first), now_ms=NOW)
    assert again.duplicate and again.base_offset == 0
    with pytest.raises(OutOfOrderSequenceError):
        log.append_staged(stage(log.dir, _batch(1, pid=5, seq=7)), now_ms=NOW)
    with pytest.raises(InvalidTimestampError):
        log.append_staged(stage(log.dir, _batch(1)), now_ms=NOW - 86_400_000)   # a day ahead of the broker
    staged = stage(log.dir, _batch(2))
    log.update_config(LogConfig.from_props({"max.message.bytes": "100"}))   # smaller meanwhile
    with pytest.raises(RecordTooLargeError):
        log.append_staged(staged, now_ms=NOW)
    bad = bytearray(_batch(3))
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        stage(log.dir, bytes(bad))
    with pytest.raises(CorruptRecordError):
        stage(log.dir, _batch(3)[:-1])
    assert _tmp_files(log) == [] and log.log_end_offset == 3 and len(log.segments) == 1
    log.close()


def test_a_crash_before_adoption_leaves_a_tmp_the_loader_deletes(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.append(_batch(0), now_ms=NOW)
    stage(log.dir, _batch(1))   # never adopted: the process dies here
    assert len(_tmp_files(log)) == 1
    for seg in log.segments:
        seg.close_without_final_entry()
    reopened = PartitionLog.open(log.dir, "t", 0, log.config, clean=False)
    assert _tmp_files(reopened) == [] and reopened.log_end_offset == 3
    reopened.close()


@pytest.mark.parametrize(("step", "op"), [("log", "write"), ("log", "rename"), ("producer_snapshot", "write"),
                                          ("leader_epoch", "write"), ("log", "open")])
def test_a_failing_disk_at_any_step_of_staging_or_adoption_leaves_the_log_as_it_was(
        tmp_path: Path, step: str, op: str) -> None:
    log = _log(tmp_path)
    log.append(_batch(0), leader_epoch=0, now_ms=NOW)
    before = _stored(log)
    with fs.faults() as inj:
        inj.fail(step=step, op=op, errno=errno.ENOSPC)
        with pytest.raises(KafkaStorageError):
            log.append_staged(stage(log.dir, _batch(1)), leader_epoch=4, now_ms=NOW)
        inj.clear()
    assert _stored(log) == before and log.log_end_offset == 3 and _tmp_files(log) == []
    log.append_staged(stage(log.dir, _batch(1)), leader_epoch=4, now_ms=NOW)   # space came back
    log.append(_batch(2), leader_epoch=4, now_ms=NOW)
    assert [b[0] for b in _stored(log)] == [0, 3, 6]
    log.close()
    _assert_consistent(Path(log.dir))


def test_the_log_takes_appends_while_a_batch_is_staged_in_another_thread(tmp_path: Path) -> None:
    big = encode_batch([Rec(os.urandom(1000), timestamp=NOW) for _ in range(2000)], base_timestamp=NOW)
    # segment.bytes at least the big batch: Kafka refuses a batch larger than the segment size
    log = _log(tmp_path, **{"segment.bytes": str(len(big)), "max.message.bytes": str(8 << 20)})
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(stage(log.dir, big)))
    t.start()
    i = 0
    while t.is_alive() or i < 20:   # the owner keeps appending meanwhile
        log.append(_batch(i), now_ms=NOW)
        i += 1
    t.join()
    staged = done[0]
    info = log.append_staged(staged, now_ms=NOW)  # type: ignore[arg-type]
    assert info.base_offset == 3 * i and log.log_end_offset == 3 * i + 2000
    log.append(_batch(i), now_ms=NOW)
    batches = _stored(log)
    assert [b[0] for b in batches] == [3 * k for k in range(i)] + [3 * i, 3 * i + 2000]
    assert batches[-2][3][4:] == big[16:]   # the client's bytes from magic on
    log.close()
    _assert_consistent(Path(log.dir))


def test_a_log_deleted_or_offline_before_adoption_discards_the_stage(tmp_path: Path) -> None:
    log = _log(tmp_path)
    staged = stage(log.dir, _batch(0))
    log.close()
    with pytest.raises(Exception, match="closed"):
        log.append_staged(staged, now_ms=NOW)
    assert _tmp_files(log) == []


def test_control_batches_are_not_staged(tmp_path: Path) -> None:
    from kafkalite_storage.errors import InvalidRecordError
    from kafkalite_storage.testing import encode_control_batch

    log = _log(tmp_path)
    with pytest.raises(InvalidRecordError):
        stage(log.dir, encode_control_batch(CONTROL_ABORT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                                            timestamp=NOW))
    assert _tmp_files(log) == []
    log.close()
