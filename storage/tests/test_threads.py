"""flush / checkpoint / retention / compaction run in a worker thread while the owner thread appends and reads."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from kafkalite_storage import LogConfig, LogManager
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.testing import Rec, encode_batch

NOW = time.time_ns() // 1_000_000


def test_housekeeping_thread_does_not_disturb_appends_and_reads(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=3000, retention_bytes=20000, file_delete_delay_ms=0)
    ccfg = LogConfig(segment_bytes=3000, cleanup_policy="compact", file_delete_delay_ms=0,
                     min_cleanable_dirty_ratio=0.01)
    lm = LogManager.open(str(tmp_path), cfg)
    plain = lm.create_log("plain", 0, uuid.uuid4())
    compact = lm.create_log("compact", 0, uuid.uuid4(), ccfg)
    stop = threading.Event()
    errors: list[BaseException] = []

    def housekeeping() -> None:
        try:
            while not stop.is_set():
                plain.flush()
                lm.enforce_retention()
                lm.cleanup()
                lm.checkpoint()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=housekeeping)
    t.start()
    try:
        for i in range(1500):
            plain.append(encode_batch([Rec(b"p%d" % i + b"." * 80)], base_timestamp=NOW + i), now_ms=NOW + i)
            compact.append(encode_batch([Rec(b"v%d" % i, key=b"k%d" % (i % 7))], base_timestamp=NOW + i),
                           now_ms=NOW + i)
            if i % 50 == 0:
                for log in (plain, compact):
                    start = log.log_start_offset
                    data = log.read_bytes(start, 20000)
                    for pos, h in iter_batches(data):
                        recs = list(batch_records(data[pos : pos + h.size]))
                        assert recs and recs[-1].offset <= h.last_offset
    finally:
        stop.set()
        t.join()
    assert errors == []
    assert plain.log_end_offset == 1500 and compact.log_end_offset == 1500
    assert plain.log_start_offset > 0
    tail = plain.read_bytes(1499, 1000)
    assert next(iter(batch_records(tail))).value == b"p1499" + b"." * 80
    latest = {}
    for _seg, pos, h in compact.batches():
        for r in batch_records(_seg.read_batch(pos, h)):
            latest[r.key] = r.value
    assert sum(h.records_count for _s, _p, h in compact.batches()) < 1000  # compaction did run
    assert latest == {b"k%d" % k: b"v%d" % max(i for i in range(1500) if i % 7 == k) for k in range(7)}
    lm.close()
