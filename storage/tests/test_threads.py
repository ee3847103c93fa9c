"""flush / checkpoint / retention / compaction run in a worker thread while the owner thread appends and reads.

No timing assumptions: the owner thread waits (with a generous deadline that only detects a hang) until the
worker has completed passes interleaved with the appends, and a full pass after the last append, before it
asserts what retention and compaction did. On a loaded machine the worker may not be scheduled for a while."""

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
    passes = [0]  # completed housekeeping passes (only the worker writes it)

    def housekeeping() -> None:
        try:
            while not stop.is_set():
                plain.flush()
                lm.enforce_retention()
                lm.cleanup()
                lm.checkpoint()
                passes[0] += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def wait_passes(n: int) -> None:
        """Until the worker completed n more passes from now (or failed); 120 s only detects a hang."""
        target = passes[0] + n
        deadline = time.monotonic() + 120
        while passes[0] < target and not errors and t.is_alive():
            assert time.monotonic() < deadline, f"housekeeping thread stuck at pass {passes[0]}"
            time.sleep(0.005)

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
            if i % 250 == 0:
                wait_passes(1)  # housekeeping really interleaves with the appends, however loaded the machine
        wait_passes(2)  # at least one whole pass began after the last append
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
