"""ENOSPC / EIO at every storage write step, through the fault-injection layer `kafkalite_storage.fs`.

What must hold (issue #12, "a full disk leaves partitions broken"): a failed append raises KafkaStorageError
and leaves no orphan bytes (the .log cut back, index entries dropped, memory unchanged); once space returns
the partition takes appends again at the same offsets (no gap, no duplicate) with no restart; reads keep
working meanwhile; if the rollback itself fails the partition goes offline (KAFKA_STORAGE_ERROR on every
produce and fetch) until a restart recovers it; a SIGKILL-style reopen keeps every acknowledged batch.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalite_storage import LogConfig, LogManager, PartitionLog, fs
from kafkalite_storage.batch import CONTROL_ABORT, iter_batches
from kafkalite_storage.dumplog import dump_files
from kafkalite_storage.errors import KafkaStorageError, LogOfflineError
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
# an index entry at every append, a roll every few appends
CFG = LogConfig.from_props({"segment.bytes": "1200", "index.interval.bytes": "1", "segment.index.bytes": "4096"})
CFG_FLUSH = LogConfig.from_props({"segment.bytes": "1200", "index.interval.bytes": "1", "flush.messages": "1"})


def _batch(i: int, pid: int = -1, seq: int = -1, txn: bool = False) -> bytes:
    kw: dict[str, object] = {}
    if pid >= 0:
        kw = {"producer_id": pid, "producer_epoch": 0, "base_sequence": seq, "transactional": txn}
    return encode_batch([Rec(b"value-%d" % i, key=b"k%d" % (i % 3))], base_timestamp=NOW + i, **kw)  # type: ignore[arg-type]


def _ops(n: int) -> list[tuple[str, int]]:
    """A workload touching every append step: plain and idempotent batches, a new leader epoch, an aborted
    transaction (txn index entry), rolls (snapshots, new segment files)."""
    ops: list[tuple[str, int]] = []
    for i in range(n):
        ops.append(("plain", i) if i % 3 else ("idem", i))
        if i == n // 2:
            ops += [("txn", i), ("abort", i)]
    return ops


def _apply(log: PartitionLog, op: tuple[str, int], seqs: dict[int, int]) -> None:
    kind, i = op
    epoch = 0 if i < 10 else 3
    if kind == "plain":
        log.append(_batch(i), leader_epoch=epoch, now_ms=NOW + i)
    elif kind == "idem":
        log.append(_batch(i, pid=7, seq=seqs.get(7, 0)), leader_epoch=epoch, now_ms=NOW + i)
        seqs[7] = seqs.get(7, 0) + 1
    elif kind == "txn":
        log.append(_batch(i, pid=9, seq=seqs.get(9, 0), txn=True), leader_epoch=epoch, now_ms=NOW + i)
        seqs[9] = seqs.get(9, 0) + 1
    else:
        log.append_control(CONTROL_ABORT, producer_id=9, producer_epoch=0, coordinator_epoch=0,
                           leader_epoch=epoch, now_ms=NOW + i)


def _content(log: PartitionLog) -> list[tuple[int, int, int, bytes]]:
    """(base offset, last offset, leader epoch, body after the header's CRC-covered part) of every batch."""
    data = log.read_bytes(log.log_start_offset, 1 << 30)
    return [(h.base_offset, h.last_offset, h.partition_leader_epoch, data[p + 21 : p + h.size])
            for p, h in iter_batches(data)]


def _assert_consistent(directory: Path) -> None:
    """kafka-dump-log --deep-iteration --index-sanity-check finds nothing wrong, and the .log files hold
    nothing but whole valid batches (no orphan bytes)."""
    files = sorted(str(p) for p in directory.iterdir() if p.suffix in (".log", ".index", ".timeindex"))
    out, err = io.StringIO(), io.StringIO()
    assert dump_files(files, deep_iteration=True, index_sanity_check=True, out=out, err=err) == 0
    assert err.getvalue() == "", err.getvalue()
    for name in files:
        if name.endswith(".log"):
            data = Path(name).read_bytes()
            assert sum(h.size for _p, h in iter_batches(data)) == len(data), f"orphan bytes in {name}"


def _reference(tmp_path: Path, ops: list[tuple[str, int]], cfg: LogConfig = CFG
               ) -> tuple[list[tuple[int, int, int, bytes]], list[tuple[str, str, str]], object]:
    with fs.faults() as inj:
        log = PartitionLog.create(str(tmp_path / "ref" / "t-0"), "t", 0, uuid.uuid4(), cfg)
        seqs: dict[int, int] = {}
        start = len(inj.calls)
        for op in ops:
            _apply(log, op, seqs)
        calls = inj.calls[start:]
    content = _content(log)
    txns = log.aborted_transactions(0, log.log_end_offset)
    log.close()
    return content, calls, txns


OPS = _ops(14)


def test_the_workload_reaches_every_append_step(tmp_path: Path) -> None:
    _content, calls, txns = _reference(tmp_path, OPS)
    steps = {(op, step) for op, step, _p in calls}
    for want in [("write", "log"), ("write", "offset_index"), ("write", "time_index"), ("write", "txn_index"),
                 ("write", "producer_snapshot"), ("write", "leader_epoch"), ("rename", "leader_epoch"),
                 ("open", "log"), ("truncate", "offset_index"), ("truncate", "time_index"),
                 ("rename", "producer_snapshot")]:
        assert want in steps, want
    assert txns  # the aborted transaction is indexed


@pytest.mark.parametrize(("err", "short", "cfg"), [
    (errno.ENOSPC, False, CFG), (errno.EIO, False, CFG), (errno.ENOSPC, True, CFG), (errno.EIO, False, CFG_FLUSH)],
    ids=["enospc", "eio", "short-write", "eio-with-fsync-per-append"])
def test_a_failed_write_at_any_step_of_an_append_is_rolled_back(tmp_path: Path, err: int, short: bool,
                                                                cfg: LogConfig) -> None:
    """Fail the Nth write call, for every N: that append raises KafkaStorageError, nothing of it remains, and
    retrying it (space is back) gives exactly the log an undisturbed run writes."""
    ops = OPS if cfg is CFG else _ops(6)   # every append fsyncs: a shorter run reaches every step already
    ref, calls, ref_txns = _reference(tmp_path, ops, cfg)
    if cfg is CFG_FLUSH:
        assert {("fsync", "log"), ("fsync", "leader_epoch"), ("fsync", "dir")} <= {c[:2] for c in calls}
    for n in range(1, len(calls) + 1):
        d = tmp_path / f"run-{n}" / "t-0"
        log = PartitionLog.create(str(d), "t", 0, uuid.uuid4(), cfg)
        seqs: dict[int, int] = {}
        failures = 0
        with fs.faults() as inj:
            inj.fail(errno=err, nth=n, times=1, short=short)  # the Nth write call from now on, once
            for op in ops:
                before = (log.log_end_offset, dict(seqs))
                try:
                    _apply(log, op, seqs)
                except KafkaStorageError:
                    failures += 1
                    assert log.offline is None
                    assert log.log_end_offset == before[0]
                    seqs.clear()
                    seqs.update(before[1])
                    _apply(log, op, seqs)  # the retry once the disk works
        assert failures <= 1
        assert _content(log) == ref, f"fault at call {n}: {calls[n - 1]}"
        assert log.aborted_transactions(0, log.log_end_offset) == ref_txns
        log.close()
        _assert_consistent(d)
        again = PartitionLog.open(str(d), "t", 0, cfg, clean=False)
        assert _content(again) == ref
        again.close()


def test_enospc_at_the_index_step_then_space_returns(tmp_path: Path) -> None:
    """The issue's scenario: the batch reached the .log, its index entry did not."""
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("t", 0, uuid.uuid4())
    for i in range(3):
        log.append(_batch(i), now_ms=NOW + i)
    size = log.active.size
    with fs.faults() as inj:
        inj.fail("offset_index", "write", errno.ENOSPC)
        for attempt in range(3):
            with pytest.raises(KafkaStorageError):
                log.append(_batch(3), now_ms=NOW + 3)
            assert log.log_end_offset == 3 and log.active.size == size
            assert os.path.getsize(log.active.log_path) == size  # no orphan bytes
            assert len(log.read_bytes(0, 1 << 20)) == size        # reads keep working
            assert attempt < 3
        inj.clear()
        for i in range(3, 6):
            assert log.append(_batch(i), now_ms=NOW + i).base_offset == i
    assert [b[0] for b in _content(log)] == list(range(6))
    lm.close()
    _assert_consistent(tmp_path / "t-0")


def test_reads_keep_working_while_every_append_fails(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), CFG)
    for i in range(20):
        log.append(_batch(i), now_ms=NOW + i)
    before = _content(log)
    with fs.faults() as inj:
        for op in ("open", "write", "rename", "fsync"):  # a full disk (cutting a file back still works)
            inj.fail(op=op, errno=errno.ENOSPC)
        for i in range(20, 30):
            with pytest.raises(KafkaStorageError):
                log.append(_batch(i), now_ms=NOW + i)
            assert _content(log) == before
            assert log.read(5, 100)[0][2] > 0
            assert log.offset_for_timestamp(NOW + 7) == (7, NOW + 7)
    assert log.append(_batch(20), now_ms=NOW + 20).base_offset == 20
    log.close()


def test_a_failed_rollback_takes_the_partition_offline_until_restart(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("t", 0, uuid.uuid4())
    other = lm.create_log("u", 0, uuid.uuid4())
    acked = [log.append(_batch(i), now_ms=NOW + i).base_offset for i in range(4)]
    with fs.faults() as inj:
        inj.fail("time_index", "write", errno.ENOSPC)
        inj.fail("log", "truncate", errno.EIO)  # the undo of the .log fails too
        with caplog.at_level(logging.ERROR, logger="kafkalite_storage.log"), pytest.raises(KafkaStorageError):
            log.append(_batch(4), now_ms=NOW + 4)
        inj.clear()
    assert log.offline is not None
    for _ in range(3):
        with pytest.raises(LogOfflineError):
            log.append(_batch(4), now_ms=NOW + 4)
        with pytest.raises(LogOfflineError):
            log.read(0, 1000)
    assert sum("offline" in r.getMessage() for r in caplog.records) == 1  # logged once
    assert other.append(_batch(0), now_ms=NOW).base_offset == 0          # other partitions unaffected
    lm.close()
    assert not (tmp_path / ".kafka_cleanshutdown").exists()              # the next start recovers
    lm = LogManager.open(str(tmp_path), CFG)
    log2 = lm.get_log("t", 0)
    assert log2 is not None and log2.offline is None
    # recovery keeps every acknowledged batch; the unacknowledged one reached the .log whole, so it is a valid
    # batch to recovery (as in Kafka, a write whose answer was lost), and appends continue after it
    content = [b[0] for b in _content(log2)]
    assert content[:4] == acked and content in (acked, [*acked, 4])
    assert log2.append(_batch(5), now_ms=NOW + 5).base_offset == len(content)
    lm.close()
    _assert_consistent(tmp_path / "t-0")


def test_kill_after_a_failed_append_keeps_every_acknowledged_batch(tmp_path: Path) -> None:
    """The data-loss case: recovery truncates at the first bad batch, so an orphan left by a failed append
    would take every batch acknowledged after it. With the rollback there is no orphan to truncate at."""
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("t", 0, uuid.uuid4())
    acked = []
    for i in range(30):
        with fs.faults() as inj:
            if i % 7 == 3:
                inj.fail("offset_index" if i % 2 else "log", "write", errno.ENOSPC, short=True)
            with contextlib.suppress(KafkaStorageError):  # not acknowledged
                acked.append(log.append(_batch(i), now_ms=NOW + i).base_offset)
    assert acked == list(range(len(acked))) and len(acked) < 30
    lm.checkpoint()
    lm.close(clean=False)  # SIGKILL: no flush, no final entries, no marker
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.get_log("t", 0)
    assert log is not None and not lm.was_clean
    assert [b[0] for b in _content(log)] == acked
    lm.close()


def test_checkpoint_write_failures_keep_the_old_files_and_are_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lm = LogManager.open(str(tmp_path), CFG)
    log = lm.create_log("t", 0, uuid.uuid4())
    log.append(_batch(0), now_ms=NOW)
    assert lm.checkpoint()
    old = (tmp_path / "recovery-point-offset-checkpoint").read_bytes()
    log.append(_batch(1), now_ms=NOW + 1)
    log.roll()
    with fs.faults() as inj, caplog.at_level(logging.ERROR, logger="kafkalite_storage.manager"):
        inj.fail("checkpoint", "write", errno.ENOSPC)
        assert lm.checkpoint() is False
        assert lm.checkpoint() is False
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() == old
    assert not list(tmp_path.glob("*.tmp"))
    assert sum("recovery-point-offset-checkpoint" in r.getMessage() for r in caplog.records) == 1
    assert lm.checkpoint()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() != old
    lm.close()


@pytest.mark.parametrize("step", [None, "log", "offset_index", "time_index", "producer_snapshot", "checkpoint",
                                  "clean_shutdown"])
def test_close_on_a_full_disk_never_raises_and_leaves_out_the_marker(tmp_path: Path, step: str | None) -> None:
    cfg = LogConfig.from_props({"index.interval.bytes": "1"})
    lm = LogManager.open(str(tmp_path), cfg)
    logs = [lm.create_log("t", p, uuid.uuid4()) for p in range(3)]
    for log in logs:
        for i in range(5):
            log.append(_batch(i, pid=11, seq=i), now_ms=NOW + i)
    fds_before = len(os.listdir("/proc/self/fd"))
    with fs.faults() as inj:
        inj.fail(step, None, errno.ENOSPC)
        lm.close()  # must not raise
    assert all(seg.closed for log in logs for seg in log.segments)
    assert len(os.listdir("/proc/self/fd")) < fds_before  # every segment file and the lock are closed
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    lm = LogManager.open(str(tmp_path), cfg)
    assert not lm.was_clean
    for p in range(3):
        log = lm.get_log("t", p)
        assert log is not None and [b[0] for b in _content(log)] == list(range(5))
        # the producer state survived too: a retried batch is recognised as a duplicate
        assert log.append(_batch(4, pid=11, seq=4), now_ms=NOW).duplicate
    lm.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()


def test_fault_layer_costs_nothing_when_idle() -> None:
    """Without faults() the layer's names are the os functions themselves (no wrapper on the hot path)."""
    assert fs.pwritev is os.pwritev and fs.pwrite is os.pwrite and fs.ftruncate is os.ftruncate
    with fs.faults():
        assert fs.pwritev is not os.pwritev
        with pytest.raises(RuntimeError):
            fs.install(fs.Injector())
    assert fs.pwritev is os.pwritev



@pytest.mark.e2e   # runs kafka-clients in a JVM
def test_kafka_reads_a_log_that_lived_through_faults(tmp_path: Path, requirement: Any) -> None:
    """Kafka's own reader (kafka-clients FileRecords: batches, ensureValid, record iteration) accepts every
    segment of a log whose appends failed at every step in turn and were retried."""
    from kafkalite_storage.tests.java import checker

    checker.require_java(requirement)
    checker.build()
    ref, calls, _txns = _reference(tmp_path, OPS)
    d = tmp_path / "faulted" / "t-0"
    log = PartitionLog.create(str(d), "t", 0, uuid.uuid4(), CFG)
    seqs: dict[int, int] = {}
    failed = 0
    with fs.faults() as inj:
        for i, op in enumerate(OPS):
            inj.fail(calls[i * 3 % len(calls)][1], "write", errno.ENOSPC, times=1, short=bool(i % 2))
            before = dict(seqs)
            try:
                _apply(log, op, seqs)
            except KafkaStorageError:
                failed += 1
                seqs.clear()
                seqs.update(before)
                _apply(log, op, seqs)
            inj.clear()
    assert failed > len(OPS) // 2
    assert _content(log) == ref
    log.close()
    _assert_consistent(d)
    logs = sorted(d.glob("*.log"))
    rows = checker.check_logs(logs)
    assert [r for r in rows if r["error"]] == []
    assert sum(r["type"] == "batch" for r in rows) == len(ref)


def test_retention_on_a_failing_disk_never_raises(tmp_path: Path) -> None:
    cfg = LogConfig.from_props({"segment.bytes": "300", "retention.bytes": "0", "file.delete.delay.ms": "0"})
    lm = LogManager.open(str(tmp_path), cfg)
    log = lm.create_log("t", 0, uuid.uuid4())
    for i in range(12):
        log.append(_batch(i), now_ms=NOW + i)
    assert len(log.segments) > 3
    with fs.faults() as inj:
        inj.fail(op="rename", errno=errno.EIO)   # the .deleted renames fail
        lm.enforce_retention()                   # must not raise
    # retention.bytes=0 takes every segment, the active one too, after a roll; the roll's producer snapshot
    # needs a rename, so it failed (logged) and the active segment stays until the next pass
    assert len(log.segments) == 1 and log.log_start_offset == log.active.base_offset
    assert log.read_bytes(log.log_start_offset, 1 << 20)
    lm.enforce_retention()                       # the disk works again: rolled and deleted
    assert len(log.segments) == 1 and log.log_start_offset == log.active.base_offset == log.log_end_offset == 12
    log.purge_deleted(force=True)
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.log")) == [Path(log.active.log_path).name]
    lm.close()


def test_many_logs_close_with_one_syncfs_and_a_failed_one_leaves_out_the_marker(tmp_path: Path) -> None:
    """With more than BULK_SYNC_LOGS logs close syncs the file system once (no fsync per file); that syncfs
    is a write step like the fsyncs it replaces: when it fails nothing counts as durable (no marker, the
    recovery points on disk stay the old ones) and the next start recovers every log."""
    from kafkalite_storage.manager import BULK_SYNC_LOGS

    n = BULK_SYNC_LOGS + 6
    lm = LogManager.open(str(tmp_path), LogConfig())
    logs = [lm.create_log("t", p, uuid.uuid4()) for p in range(n)]
    assert lm.checkpoint()
    old_rp = (tmp_path / "recovery-point-offset-checkpoint").read_bytes()
    for log in logs:
        log.append(_batch(0), now_ms=NOW)
    with fs.faults() as inj:
        inj.fail("dir", "fsync", errno.EIO)
        lm.close()   # must not raise
        ops = {(op, step) for op, step, _p in inj.calls}
    assert ("fsync", "log") not in ops   # the bulk path: no fsync per segment file
    assert not (tmp_path / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() == old_rp
    lm = LogManager.open(str(tmp_path), LogConfig())
    assert not lm.was_clean
    assert all(lm.get_log("t", p).log_end_offset == 1 for p in range(n))  # type: ignore[union-attr]
    lm.close()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    lm = LogManager.open(str(tmp_path), LogConfig())
    assert lm.was_clean and lm.get_log("t", 0).log_end_offset == 1  # type: ignore[union-attr]
    lm.close()


def test_a_failed_bulk_syncfs_at_checkpoint_puts_the_bookkeeping_back(tmp_path: Path) -> None:
    """A checkpoint over many rolled logs syncs the file system once; when that fails the rolled segments stay
    pending and the recovery points stay where they were (on disk and in memory) until a sync works."""
    from kafkalite_storage.manager import BULK_SYNC_LOGS

    n = BULK_SYNC_LOGS + 6
    lm = LogManager.open(str(tmp_path), LogConfig(segment_bytes=100))
    logs = [lm.create_log("t", p, uuid.uuid4()) for p in range(n)]
    assert lm.checkpoint()
    for log in logs:
        for i in range(3):
            log.append(_batch(i), now_ms=NOW + i)   # each append past 100 bytes rolls
    assert all(len(log.segments) > 1 and log.rolled_unsynced for log in logs)
    old_rp = (tmp_path / "recovery-point-offset-checkpoint").read_bytes()
    with fs.faults() as inj:
        inj.fail("dir", "fsync", errno.EIO)
        assert not lm.checkpoint()
    assert all(log.recovery_point == 0 and log.rolled_unsynced for log in logs)
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() == old_rp
    assert lm.checkpoint()
    assert all(log.recovery_point == log.segments[-1].base_offset > 0 for log in logs)
    assert (tmp_path / "recovery-point-offset-checkpoint").read_bytes() != old_rp
    lm.close()
