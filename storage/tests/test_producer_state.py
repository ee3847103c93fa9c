"""Idempotent and transactional producer state: Kafka 3.9's ProducerAppendInfo rules, snapshots, replay."""

from __future__ import annotations

import os
import shutil
import struct
import time
import uuid
from pathlib import Path

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import INT32_MAX
from kafkalite_storage.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from kafkalite_storage.producer_state import ProducerStateManager
from kafkalite_storage.testing import encode_batch

PID = 4000
NOW = time.time_ns() // 1_000_000  # record timestamps near now: segment.ms compares them with the append time


def _b(seq: int, n: int = 1, epoch: int = 0, pid: int = PID, txn: bool = False) -> bytes:
    return encode_batch([b"v%d" % i for i in range(n)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=txn, base_timestamp=NOW)


@pytest.fixture
def log(tmp_path: Path) -> PartitionLog:
    return PartitionLog.create(str(tmp_path / "p-0"), "p", 0, uuid.uuid4(), LogConfig())


def test_duplicate_of_recent_batch_returns_original_offsets(log: PartitionLog) -> None:
    infos = [log.append(_b(seq, 2)) for seq in range(0, 14, 2)]  # 7 batches of 2
    leo = log.log_end_offset
    dup = log.append(_b(8, 2))  # 5th batch: still among the last five
    assert dup.duplicate and (dup.base_offset, dup.last_offset) == (infos[4].base_offset, infos[4].last_offset)
    assert log.log_end_offset == leo
    with pytest.raises(OutOfOrderSequenceError):  # 1st batch: no longer cached
        log.append(_b(0, 2))
    assert log.log_end_offset == leo


def test_sequence_gaps_and_epochs(log: PartitionLog) -> None:
    log.append(_b(0, 3))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(_b(5))
    log.append(_b(3))
    # epoch bump must restart at 0
    with pytest.raises(OutOfOrderSequenceError):
        log.append(_b(4, epoch=1))
    log.append(_b(0, epoch=1))
    with pytest.raises(InvalidProducerEpochError):
        log.append(_b(1, epoch=0))
    # an unknown producer may start anywhere (Kafka 3.x does not answer UNKNOWN_PRODUCER_ID on append)
    log.append(_b(17, pid=PID + 1))
    log.append(_b(18, pid=PID + 1))
    assert log.log_end_offset == 7


def test_sequence_wraps_at_int32_max(log: PartitionLog) -> None:
    log.append(_b(INT32_MAX - 1, 3))  # sequences MAX-1, MAX, 0
    log.append(_b(1))
    dup = log.append(_b(INT32_MAX - 1, 3))
    assert dup.duplicate and dup.base_offset == 0
    log.append(_b(2))
    assert log.log_end_offset == 5
    with pytest.raises(OutOfOrderSequenceError):
        log.append(_b(0))


def test_state_survives_clean_and_unclean_restart(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig())
    log = lm.create_log("p", 0, uuid.uuid4())
    for seq in range(0, 10, 2):
        log.append(_b(seq, 2))
    lm.close()
    assert (tmp_path / "p-0" / f"{10:020d}.snapshot").exists()
    lm = LogManager.open(str(tmp_path), LogConfig())
    log = lm.get_log("p", 0)
    assert log is not None
    assert log.append(_b(8, 2)).duplicate  # last batch comes from the snapshot
    with pytest.raises(OutOfOrderSequenceError):
        log.append(_b(11))
    log.append(_b(10, 2))
    lm.close(clean=False)  # crash: no new snapshot, state is replayed from the log after the old one
    lm = LogManager.open(str(tmp_path), LogConfig())
    log = lm.get_log("p", 0)
    assert log is not None
    assert log.append(_b(10, 2)).base_offset == 10
    assert log.append(_b(8, 2)).duplicate
    lm.close()


def test_snapshot_format_matches_kafka(reference: Path, tmp_path: Path) -> None:
    src = reference / "fixtures" / "segments" / "kafka-3.8-kraft-a" / "sensor-data-topic-0"
    kafka_snap = (src / f"{35:020d}.snapshot").read_bytes()
    entries = ProducerStateManager.decode_snapshot(kafka_snap)
    mgr = ProducerStateManager(str(tmp_path))
    for e in entries:
        mgr.producers[e.producer_id] = e
    assert mgr.encode_snapshot() == kafka_snap
    # rebuilt from the log alone, the state equals Kafka's snapshot
    dst = tmp_path / "sensor-data-topic-0"
    shutil.copytree(src, dst)
    os.chmod(dst, 0o755)
    for f in dst.iterdir():
        os.chmod(f, 0o644)
        if f.suffix == ".snapshot":
            f.unlink()
    log = PartitionLog.open(str(dst), "sensor-data-topic", 0, LogConfig(), clean=True)
    assert log.log_end_offset == 35
    ours = {e.producer_id: e for e in log.producer_state.producers.values()}
    theirs = {e.producer_id: e for e in entries}
    assert ours.keys() == theirs.keys()
    for pid, e in theirs.items():
        mine = ours[pid]
        assert (mine.epoch, mine.last_seq, mine.batches[-1].last_offset, mine.last_timestamp) == (
            e.epoch, e.last_seq, e.batches[-1].last_offset, e.last_timestamp)
    log.close()
    assert ProducerStateManager.decode_snapshot((dst / f"{35:020d}.snapshot").read_bytes())


def test_transactions_abort_index_and_lso(log: PartitionLog) -> None:
    tx = 5000
    log.append(encode_batch([b"a"], base_timestamp=NOW))  # offset 0, plain
    log.append(_b(0, 2, pid=tx, txn=True))  # 1-2
    assert log.last_stable_offset == 1
    with pytest.raises(InvalidTxnStateError):
        log.append(_b(2, 1, pid=tx, txn=False))
    log.append(_b(2, 1, pid=tx, txn=True))  # 3
    marker = log.append_control(0, producer_id=tx, producer_epoch=0, coordinator_epoch=7)  # ABORT @4
    assert marker.base_offset == 4
    assert log.last_stable_offset == log.log_end_offset == 5
    aborted = log.aborted_transactions(0, 5)
    assert [(a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset) for a in aborted] == [
        (tx, 1, 4, 5)]
    txn_file = Path(log.dir) / f"{0:020d}.txnindex"
    assert struct.unpack(">hqqqq", txn_file.read_bytes()) == (0, tx, 1, 4, 5)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_control(1, producer_id=tx, producer_epoch=0, coordinator_epoch=6)
    # a new transaction then COMMIT: no txnindex entry
    log.append(_b(3, 1, pid=tx, txn=True))
    assert log.last_stable_offset == 5
    log.append_control(1, producer_id=tx, producer_epoch=0, coordinator_epoch=7)
    assert len(log.aborted_transactions(0, log.log_end_offset)) == 1
    assert log.last_stable_offset == log.log_end_offset


def test_idle_producers_expire(log: PartitionLog) -> None:
    log.append(_b(0, 2))
    log.append(_b(0, 1, pid=PID + 1, txn=True))  # open transaction: never expires
    assert log.producer_state.remove_expired(NOW + 10, 86_400_000) == 0
    assert log.producer_state.remove_expired(NOW + 86_400_000, 86_400_000) == 1
    assert set(log.producer_state.producers) == {PID + 1}
    log.append(_b(40))  # an unknown producer again: any sequence is accepted


def test_unclean_recovery_rebuilds_txn_index(tmp_path: Path) -> None:
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=600))
    log = lm.create_log("p", 0, uuid.uuid4())
    tx = 5000
    for round_ in range(6):
        log.append(_b(round_ * 2, 2, pid=tx, txn=True))
        log.append(_b(round_, 1, pid=PID))
        log.append_control(round_ % 2, producer_id=tx, producer_epoch=0, coordinator_epoch=1)  # ABORT/COMMIT
    expected = {s.base_offset: s.txn_index.entries[:] for s in log.segments}
    assert sum(len(v) for v in expected.values()) == 3
    files = {p.name: p.read_bytes() for p in Path(log.dir).glob("*.txnindex")}
    lm.close(clean=False)
    for name in files:
        (tmp_path / "p-0" / name).unlink()
    for snap in (tmp_path / "p-0").glob("*.snapshot"):
        snap.unlink()
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=600))
    log = lm.get_log("p", 0)
    assert log is not None
    assert {p.name: p.read_bytes() for p in Path(log.dir).glob("*.txnindex")} == files
    lm.close(clean=False)
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=600))  # entries present: no duplicates
    log = lm.get_log("p", 0)
    assert log is not None
    assert {p.name: p.read_bytes() for p in Path(log.dir).glob("*.txnindex")} == files
    assert len(log.aborted_transactions(0, log.log_end_offset)) == 3
    lm.close()
