"""Tombstones and the delete horizon (KIP-534), as Apache Kafka 4.x's LogCleaner keeps them.

The first cleaning that keeps a tombstone writes a delete horizon into its batch: attribute bit 6 (0x40) set and
BaseTimestamp = that cleaning's time + delete.retention.ms, the records re-encoded with their timestamp deltas
from it (their timestamps do not change), the CRC recomputed - the bytes Kafka's MemoryRecordsBuilder writes.
A later cleaning removes the tombstone once its time >= the horizon; lowering delete.retention.ms afterwards
does not bring it closer, and the horizon, being in the file, survives a restart. Batches written before (no
flag) get it at their first cleaning.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import uuid
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import (
    DELETE_HORIZON_FLAG,
    batch_records,
    compute_crc,
    iter_batches,
    validate_batch,
)
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.dumplog import dump_files
from kafkalite_storage.testing import Rec, encode_batch

T0 = 1_700_000_000_000
RET = 60_000
CFG = LogConfig(segment_bytes=100_000, cleanup_policy="compact", delete_retention_ms=RET, file_delete_delay_ms=0)
FIRST = T0 + 5_000   # the first cleaning
HORIZON = FIRST + RET


def _fill(log: PartitionLog) -> None:
    log.append(encode_batch([Rec(b"a1", key=b"a", timestamp=T0), Rec(b"b1", key=b"b", timestamp=T0 + 1)],
                            base_timestamp=T0), now_ms=T0)
    # offset 2: c's value; offset 3: a tombstone for a; offset 4: b's newer value
    log.append(encode_batch([Rec(b"c1", key=b"c", timestamp=T0 + 10), Rec(None, key=b"a", timestamp=T0 + 11),
                             Rec(b"b2", key=b"b", timestamp=T0 + 12)], base_timestamp=T0 + 10), now_ms=T0 + 10)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z", timestamp=T0 + 20)], base_timestamp=T0 + 20), now_ms=T0 + 20)


def _batches(log: PartitionLog) -> list[bytes]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    return [data[pos : pos + h.size] for pos, h in iter_batches(data)]


def _records(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None, int]]:
    return [(r.offset, r.key, r.value, r.timestamp) for b in _batches(log) for r in batch_records(b)]


def _new_log(tmp_path: Path, cfg: LogConfig = CFG) -> PartitionLog:
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), cfg)
    _fill(log)
    return log


def test_first_cleaning_writes_the_horizon_as_kafka_does(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    assert clean_log(log, FIRST, force=True) is not None
    tomb = _batches(log)[0]
    hdr = validate_batch(tomb, exact_count=False)   # the CRC matches the new bytes
    assert hdr.has_delete_horizon and hdr.attributes == DELETE_HORIZON_FLAG and hdr.base_timestamp == HORIZON
    assert (hdr.base_offset, hdr.last_offset_delta, hdr.records_count, hdr.max_timestamp) == (2, 2, 3, T0 + 12)
    # byte for byte what Kafka's builder writes: records re-encoded against BaseTimestamp = the horizon
    want = bytearray(encode_batch([Rec(b"c1", key=b"c", timestamp=T0 + 10), Rec(None, key=b"a", timestamp=T0 + 11),
                                   Rec(b"b2", key=b"b", timestamp=T0 + 12)], base_offset=2, base_timestamp=HORIZON,
                                  partition_leader_epoch=hdr.partition_leader_epoch))
    want[22] |= DELETE_HORIZON_FLAG
    want[17:21] = compute_crc(want).to_bytes(4, "big")
    assert tomb == bytes(want)
    # the batch before it lost every record: dropped; timestamps as before
    assert _records(log)[:3] == [(2, b"c", b"c1", T0 + 10), (3, b"a", None, T0 + 11), (4, b"b", b"b2", T0 + 12)]
    # kafka-dump-log's rendering (Java's OptionalLong)
    out, err = io.StringIO(), io.StringIO()
    seg = log.segments[0].log_path
    assert dump_files([seg], out=out, err=err) == 0, err.getvalue()
    assert f"deleteHorizonMs: OptionalLong[{HORIZON}]" in out.getvalue()
    log.close()


def test_tombstone_kept_until_the_horizon_then_removed(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    assert clean_log(log, FIRST, force=True) is not None
    before = _batches(log)
    res = clean_log(log, HORIZON - 1, force=True)   # a later pass before the horizon: nothing changes
    assert res is not None and res.records_removed == 0 and _batches(log) == before
    res = clean_log(log, HORIZON, force=True)
    assert res is not None and res.records_removed == 1
    assert [(o, k, v) for o, k, v, _t in _records(log)] == [(2, b"c", b"c1"), (4, b"b", b"b2"), (5, b"z", b"x")]
    hdr = validate_batch(_batches(log)[0], exact_count=False)
    # no tombstone left, the horizon stays in the header (as Kafka rebuilds it) and offsets keep their range
    assert hdr.has_delete_horizon and hdr.base_timestamp == HORIZON
    assert (hdr.base_offset, hdr.last_offset_delta, hdr.records_count) == (2, 2, 2)
    log.close()


def test_lowering_delete_retention_later_does_not_shorten_the_horizon(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    assert clean_log(log, FIRST, force=True) is not None
    log.update_config(dataclasses.replace(CFG, delete_retention_ms=0))
    assert clean_log(log, FIRST + 1, force=True) is not None
    assert (3, b"a", None, T0 + 11) in _records(log)
    assert validate_batch(_batches(log)[0], exact_count=False).base_timestamp == HORIZON
    clean_log(log, HORIZON, force=True)
    assert all(v is not None for _o, _k, v, _t in _records(log))
    log.close()


def test_raising_delete_retention_later_does_not_lengthen_it(tmp_path: Path) -> None:
    log = _new_log(tmp_path)
    assert clean_log(log, FIRST, force=True) is not None
    log.update_config(dataclasses.replace(CFG, delete_retention_ms=10 * RET))
    assert clean_log(log, HORIZON, force=True) is not None
    assert all(v is not None for _o, _k, v, _t in _records(log))
    log.close()


def test_the_horizon_survives_a_restart(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("t", 0, uuid.uuid4(), CFG)
    _fill(log)
    assert clean_log(log, FIRST, force=True) is not None
    lm.close(clean=False)   # an unclean stop: recovery re-reads (and validates) the rewritten segment
    lm = LogManager.open(str(tmp_path), CFG)
    log2 = lm.get_log("t", 0)
    assert log2 is not None
    assert validate_batch(_batches(log2)[0], exact_count=False).base_timestamp == HORIZON
    res = clean_log(log2, HORIZON - 1, force=True)
    assert res is not None and (3, b"a", None, T0 + 11) in _records(log2)
    lm.close()
    lm = LogManager.open(str(tmp_path), dataclasses.replace(CFG, delete_retention_ms=0))
    log3 = lm.get_log("t", 0)
    assert log3 is not None and clean_log(log3, HORIZON, force=True) is not None
    assert all(v is not None for _o, _k, v, _t in _records(log3))
    lm.close()
    assert not [n for n in os.listdir(tmp_path / "t-0") if n.endswith((".cleaned", ".swap"))]


def test_batches_without_tombstones_get_no_horizon(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), CFG)
    log.append(encode_batch([Rec(b"1", key=b"a", timestamp=T0), Rec(b"2", key=b"b", timestamp=T0 + 1)],
                            base_timestamp=T0), now_ms=T0)
    log.append(encode_batch([Rec(b"3", key=b"a", timestamp=T0 + 2)], base_timestamp=T0 + 2), now_ms=T0 + 2)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=T0 + 3), now_ms=T0 + 3)
    untouched = _batches(log)[1]
    assert clean_log(log, FIRST, force=True) is not None
    first, second = _batches(log)[:2]
    hdr = validate_batch(first, exact_count=False)
    # rebuilt (lost offset 0): BaseTimestamp is the first kept record's, as Kafka's builder sets it
    assert not hdr.has_delete_horizon and hdr.base_timestamp == T0 + 1 and hdr.records_count == 1
    assert [(r.offset, r.timestamp) for r in batch_records(first)] == [(1, T0 + 1)]
    assert second == untouched   # a batch that keeps everything and has no tombstone is copied verbatim
    log.close()


ABORT, COMMIT = 0, 1


def _markers_log(tmp_path: Path) -> PartitionLog:
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), CFG)
    # offset 0: pid 9 commits a transaction with no data here; offset 1: pid 9 writes on (idempotent)
    log.append_control(COMMIT, producer_id=9, producer_epoch=0, coordinator_epoch=1, now_ms=T0)
    log.append(encode_batch([Rec(b"v", key=b"k", timestamp=T0 + 1)], base_timestamp=T0 + 1, producer_id=9,
                            producer_epoch=0, base_sequence=0), now_ms=T0 + 1)
    # offsets 2-3: pid 11 commits data (its marker must stay); offset 4: pid 10 aborts with no data, its last word
    log.append(encode_batch([Rec(b"t", key=b"t", timestamp=T0 + 2)], base_timestamp=T0 + 2, producer_id=11,
                            producer_epoch=0, base_sequence=0, transactional=True), now_ms=T0 + 2)
    log.append_control(COMMIT, producer_id=11, producer_epoch=0, coordinator_epoch=1, now_ms=T0 + 3)
    log.append_control(ABORT, producer_id=10, producer_epoch=3, coordinator_epoch=1, now_ms=T0 + 4)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=T0 + 20), now_ms=T0 + 20)
    return log


def _headers(log: PartitionLog) -> dict[int, tuple[bool, int, int, bool, int]]:
    """base offset -> (control, records, BaseTimestamp, horizon flag, attributes)."""
    return {h.base_offset: (h.is_control, h.records_count, h.base_timestamp, h.has_delete_horizon, h.attributes)
            for h in (validate_batch(b, exact_count=False) for b in _batches(log))}


def test_markers_of_finished_transactions_get_a_horizon_then_go(tmp_path: Path) -> None:
    log = _markers_log(tmp_path)
    assert log.last_stable_offset == log.log_end_offset
    before = _headers(log)
    assert clean_log(log, FIRST, force=True) is not None
    first = _headers(log)
    # markers whose transaction left no data in the log: horizon written, the marker record unchanged
    assert first[0][:4] == (True, 1, HORIZON, True) and first[0][4] == 0x70
    assert first[4][:4] == (True, 1, HORIZON, True)
    assert first[3] == before[3]   # pid 11's marker: its transaction's data is there, so it stays as it is
    assert clean_log(log, HORIZON - 1, force=True) is not None
    assert _headers(log) == first
    res = clean_log(log, HORIZON, force=True)
    assert res is not None and res.records_removed == 2
    last = _headers(log)
    assert 0 not in last   # pid 9's marker is gone (pid 9 wrote after it)
    # pid 10's abort was its last word: an empty batch header keeps its epoch (Kafka's RETAIN_EMPTY)
    assert last[4] == (True, 0, -1, False, 0x30)
    hdr = validate_batch(_batches(log)[-2], exact_count=False)
    assert (hdr.base_offset, hdr.producer_id, hdr.producer_epoch, hdr.length) == (4, 10, 3, 49)
    assert last[3] == before[3] and 1 in last and 2 in last
    log.close()


def test_an_aborted_transaction_loses_its_data_then_its_marker(tmp_path: Path) -> None:
    """Kafka's cleaner removes an aborted transaction's records (they never enter the offset map either); the
    ABORT marker and its aborted range stay for the pass that removes them, then the marker, its transaction
    having no batch left, gets a delete horizon (its `.txnindex` entry goes) and is removed once it passed."""
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), CFG)
    log.append(encode_batch([Rec(b"old", key=b"a", timestamp=T0)], base_timestamp=T0), now_ms=T0)
    log.append(encode_batch([Rec(b"aborted", key=b"a", timestamp=T0 + 1)], base_timestamp=T0 + 1, producer_id=9,
                            producer_epoch=0, base_sequence=0, transactional=True), now_ms=T0 + 1)
    log.append_control(ABORT, producer_id=9, producer_epoch=0, coordinator_epoch=1, now_ms=T0 + 2)
    # pid 9 writes on (idempotent), so its aborted batch is not its last word
    log.append(encode_batch([Rec(b"later", key=b"b", timestamp=T0 + 3)], base_timestamp=T0 + 3, producer_id=9,
                            producer_epoch=0, base_sequence=1), now_ms=T0 + 3)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=T0 + 20), now_ms=T0 + 20)
    aborted = log.aborted_transactions(0, log.log_end_offset)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(9, 1, 2)]
    assert clean_log(log, FIRST, force=True) is not None
    # a=old stays: the aborted a=aborted did not supersede it
    assert [(o, k, v) for o, k, v, _t in _records(log)] == [
        (0, b"a", b"old"), (2, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01"), (3, b"b", b"later"), (4, b"z", b"x")]
    assert not _headers(log)[2][3] and log.aborted_transactions(0, log.log_end_offset) == aborted
    assert clean_log(log, FIRST + 1, force=True) is not None
    assert _headers(log)[2][:4] == (True, 1, FIRST + 1 + RET, True)
    assert log.aborted_transactions(0, log.log_end_offset) == []
    assert clean_log(log, FIRST + 1 + RET, force=True) is not None
    assert [o for o, _k, _v, _t in _records(log)] == [0, 3, 4] and 2 not in _headers(log)
    log.close()


def test_an_aborted_last_write_stays_as_an_empty_header(tmp_path: Path) -> None:
    """The aborted batch is its producer's last write: its records go, its header stays (RETAIN_EMPTY, the
    producer's epoch and sequence survive), and a transactional batch being read, its marker stays too."""
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), CFG)
    log.append(encode_batch([Rec(b"a", key=b"a", timestamp=T0)], base_timestamp=T0, producer_id=9,
                            producer_epoch=0, base_sequence=0, transactional=True), now_ms=T0)
    log.append_control(ABORT, producer_id=9, producer_epoch=0, coordinator_epoch=1, now_ms=T0 + 1)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=T0 + 20), now_ms=T0 + 20)
    before = _batches(log)
    aborted = log.aborted_transactions(0, log.log_end_offset)
    assert clean_log(log, FIRST, force=True) is not None
    assert clean_log(log, HORIZON + 10**9, force=True) is not None
    after = _batches(log)
    hdr = validate_batch(after[0], exact_count=False)
    assert (hdr.base_offset, hdr.records_count, hdr.producer_id, hdr.is_transactional, hdr.base_timestamp,
            hdr.length) == (0, 0, 9, True, -1, 49)
    assert after[1:] == before[1:] and log.aborted_transactions(0, log.log_end_offset) == aborted
    log.close()


def test_an_abort_marker_stays_while_its_data_is_in_an_earlier_group(tmp_path: Path) -> None:
    """One transaction state for the whole pass: the data in the first group is removed, and the marker in the
    second group, having seen it, stays with its aborted range (READ_COMMITTED readers of the batches still
    being read need them); the next pass finds no batch of the transaction and starts the marker's horizon."""
    cfg = dataclasses.replace(CFG, segment_bytes=400)
    log = PartitionLog.create(str(tmp_path / "m-0"), "m", 0, uuid.uuid4(), cfg)
    log.append(encode_batch([Rec(b"a" * 250, key=b"a", timestamp=T0)], base_timestamp=T0, producer_id=9,
                            producer_epoch=0, base_sequence=0, transactional=True), now_ms=T0)
    log.roll()
    log.append_control(ABORT, producer_id=9, producer_epoch=0, coordinator_epoch=1, now_ms=T0 + 1)
    log.append(encode_batch([Rec(b"f" * 250, key=b"f", timestamp=T0 + 2)], base_timestamp=T0 + 2, producer_id=9,
                            producer_epoch=0, base_sequence=1), now_ms=T0 + 2)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=T0 + 20), now_ms=T0 + 20)
    aborted = log.aborted_transactions(0, log.log_end_offset)
    assert [t.producer_id for t in aborted] == [9]
    res = clean_log(log, FIRST, force=True)
    assert res is not None and res.segments_after == 2   # two groups
    assert [(o, k) for o, k, _v, _t in _records(log)] == [(1, b"\x00\x00\x00\x00"), (2, b"f"), (3, b"z")]
    assert not _headers(log)[1][3]   # no horizon on it
    assert log.aborted_transactions(0, log.log_end_offset) == aborted
    assert clean_log(log, FIRST + 1, force=True) is not None
    assert _headers(log)[1][3] and log.aborted_transactions(0, log.log_end_offset) == []
    log.close()


def test_an_emptied_marker_reloads_quietly(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("m", 0, uuid.uuid4(), CFG)
    log.append_control(ABORT, producer_id=10, producer_epoch=3, coordinator_epoch=1, now_ms=T0)
    log.roll()
    log.append(encode_batch([Rec(b"x", key=b"z")], base_timestamp=T0 + 20), now_ms=T0 + 20)
    assert clean_log(log, FIRST, force=True) is not None
    assert clean_log(log, HORIZON, force=True) is not None
    assert validate_batch(_batches(log)[0], exact_count=False).records_count == 0
    lm.close(clean=False)
    with caplog.at_level(logging.WARNING):
        lm = LogManager.open(str(tmp_path), CFG)   # unclean: producer state rebuilt from the log
    log2 = lm.get_log("m", 0)
    assert log2 is not None and not [r for r in caplog.records if "control batch" in r.getMessage()]
    assert log2.log_end_offset == 2 and log2.log_start_offset == 0
    lm.close()
