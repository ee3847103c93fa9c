"""Compaction next to transactions, as Kafka's cleaner does it: aborted records go, committed ones are compacted.

READ_COMMITTED consumers rely on the `.txnindex` (aborted transactions) and on the control markers; the cleaner
keeps a marker (and an ABORT marker's index entry, moved to the cleaned segment) while batches of its
transaction are in the log, so after a pass - and after an unclean reopen that rebuilds the index from
producer-state replay - the same aborted ranges are reported while the records are compacted around them.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=700, cleanup_policy="compact", delete_retention_ms=0, file_delete_delay_ms=0)
ABORT, COMMIT = 0, 1


def _txn(log: PartitionLog, pid: int, keys: list[bytes], value: bytes, end: int, ts: int) -> None:
    log.append(encode_batch([Rec(value, key=k) for k in keys], base_timestamp=ts, producer_id=pid,
                            producer_epoch=0, base_sequence=0, transactional=True), now_ms=ts)
    log.append_control(end, producer_id=pid, producer_epoch=0, coordinator_epoch=3, now_ms=ts + 1)


def _view(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None, bool]]:
    data = log.read_bytes(log.log_start_offset, 10**9)
    return [(r.offset, r.key, r.value, h.is_control) for pos, h in iter_batches(data)
            for r in batch_records(data[pos : pos + h.size])]


def test_aborted_transactions_and_markers_survive_compaction(tmp_path: Path) -> None:
    d = tmp_path / "x-0"
    log = PartitionLog.create(str(d), "x", 0, uuid.uuid4(), CFG)
    for i in range(6):
        log.append(encode_batch([Rec(b"plain-%d" % i + b"p" * 200, key=b"a")], base_timestamp=NOW + i),
                   now_ms=NOW + i)
    _txn(log, 9, [b"a", b"b"], b"aborted", ABORT, NOW + 10)
    _txn(log, 10, [b"c"], b"committed", COMMIT, NOW + 20)
    for i in range(6):
        log.append(encode_batch([Rec(b"late-%d" % i + b"q" * 200, key=b"d")], base_timestamp=NOW + 30 + i),
                   now_ms=NOW + 30 + i)
    log.roll()
    log.append(encode_batch([Rec(b"tail", key=b"t")], base_timestamp=NOW + 50), now_ms=NOW + 50)
    leo = log.log_end_offset
    aborted = [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_transactions(0, leo)]
    assert len(aborted) == 1 and aborted[0][0] == 9
    before = _view(log)

    assert clean_log(log, NOW + 10**6, force=True) is not None
    after = _view(log)
    # the aborted records go (Kafka's cleaner removes them); the committed record and both markers stay (the
    # aborted batch was pid 9's last write: its header stays, so its marker still sees a batch of its own)
    assert [x for x in after if x[2] in (b"aborted", b"committed") or x[3]] == [
        x for x in before if x[2] == b"committed" or x[3]]
    assert [x[2] for x in after if x[1] == b"a"] == [b"plain-5" + b"p" * 200]  # not superseded by aborted a
    assert [x[2] for x in after if x[1] == b"d"] == [b"late-5" + b"q" * 200]  # plain keys compacted
    assert len(after) < len(before)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_transactions(0, leo)] == aborted
    log.close(clean=False)

    reopened = PartitionLog.open(str(d), "x", 0, CFG, clean=False, recovery_point=0)
    assert _view(reopened) == after
    assert [(t.producer_id, t.first_offset, t.last_offset)
            for t in reopened.aborted_transactions(0, leo)] == aborted
    assert reopened.last_stable_offset == reopened.log_end_offset  # both transactions are complete
    reopened.close()
