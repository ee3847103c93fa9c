"""Stateful model of a partition log: append / read / roll / truncate / flush / close+reopen / crash.

The crash rule cuts the last segment file at a random point after what was flushed (a torn write, sometimes
followed by garbage) and drops the process without the clean-shutdown marker. Invariants: a batch flushed
before a crash is never lost, and every batch the log returns is exactly one the model holds (CRC-valid,
right offsets, verbatim bytes).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafkalite_storage import LogConfig, LogManager, PartitionLog
from kafkalite_storage.batch import iter_batches, patch_batch, validate_batch
from kafkalite_storage.testing import Rec, encode_batch

NOW = time.time_ns() // 1_000_000
CFG = LogConfig(segment_bytes=4000, index_interval_bytes=300, segment_index_bytes=120)   # 5 records of 700 bytes fit a segment (Kafka refuses a larger batch)


class LogModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="kl-stateful-")
        self.lm = LogManager.open(self.dir, CFG)
        self.log: PartitionLog = self.lm.create_log("m", 0, uuid.uuid4())
        self.batches: list[tuple[int, int, bytes]] = []  # (base, last, stored bytes)
        self.flushed = 0  # number of model batches known durable
        self.counter = 0

    @property
    def leo(self) -> int:
        return self.batches[-1][1] + 1 if self.batches else 0

    def teardown(self) -> None:
        self.lm.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _reopen(self) -> None:
        self.lm = LogManager.open(self.dir, CFG)
        log = self.lm.get_log("m", 0)
        assert log is not None
        self.log = log

    @rule(n=st.integers(1, 5), size=st.integers(0, 700), ts_jitter=st.integers(-1000, 1000))
    def append(self, n: int, size: int, ts_jitter: int) -> None:
        self.counter += 1
        recs = [Rec(b"%d-%d:" % (self.counter, k) + b"z" * size, timestamp=NOW + self.counter * 10 + ts_jitter + k)
                for k in range(n)]
        raw = encode_batch(recs, base_timestamp=NOW + self.counter * 10)
        info = self.log.append(raw, now_ms=NOW + self.counter * 10)
        assert info.base_offset == self.leo
        self.batches.append((info.base_offset, info.last_offset, bytes(patch_batch(raw, info.base_offset, 0))))

    @rule(data=st.data(), max_bytes=st.integers(1, 5000))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        off = data.draw(st.integers(0, self.leo))
        got = self.log.read_bytes(off, max_bytes)
        if off == self.leo:
            assert got == b""
            return
        i = next(i for i, (_b, last, _r) in enumerate(self.batches) if last >= off)
        parsed = list(iter_batches(got))
        assert sum(h.size for _p, h in parsed) == len(got)
        assert parsed, "min_one must return a batch"
        for k, (pos, h) in enumerate(parsed):
            validate_batch(got[pos : pos + h.size])
            assert got[pos : pos + h.size] == self.batches[i + k][2]
        assert len(got) <= max_bytes or len(parsed) == 1

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule()
    def flush(self) -> None:
        self.log.flush()
        self.flushed = len(self.batches)

    @rule()
    def checkpoint(self) -> None:
        # flushes rolled segments: everything below the active segment becomes durable
        self.lm.checkpoint()
        active_base = self.log.active.base_offset
        self.flushed = max(self.flushed, sum(1 for _b, last, _r in self.batches if last < active_base))

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        off = data.draw(st.integers(0, self.leo - 1))
        self.log.truncate_to(off)
        self.batches = [b for b in self.batches if b[1] < off]
        self.flushed = min(self.flushed, len(self.batches))

    @rule()
    def close_and_reopen(self) -> None:
        self.lm.close()
        self._reopen()
        assert self.lm.was_clean
        self.flushed = len(self.batches)

    @rule(data=st.data(), garbage=st.binary(max_size=80))
    def crash(self, data: st.DataObject, garbage: bytes) -> None:
        last = self.log.active
        durable_end = 0
        if self.flushed:
            fb = self.batches[self.flushed - 1]
            if fb[1] >= last.base_offset:
                durable_end = sum(len(r) for b, _l, r in self.batches[: self.flushed] if b >= last.base_offset)
        size = last.size
        path = last.log_path
        self.lm.close(clean=False)
        cut = data.draw(st.integers(durable_end, size))
        with open(path, "r+b") as f:
            f.truncate(cut)
            if cut < size:
                f.seek(cut)
                f.write(garbage)
        self._reopen()
        assert not self.lm.was_clean
        survived = self.log.read_bytes(0, 10**8) if self.log.log_end_offset else b""
        parsed = list(iter_batches(survived))
        k = len(parsed)
        assert k >= self.flushed, "a flushed batch was lost"
        for j, (pos, h) in enumerate(parsed):
            assert survived[pos : pos + h.size] == self.batches[j][2]
        self.batches = self.batches[:k]
        self.flushed = k

    @invariant()
    def offsets_agree(self) -> None:
        assert self.log.log_end_offset == self.leo
        assert self.log.high_watermark == self.leo
        assert os.path.isdir(os.path.join(self.dir, "m-0"))


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(
    max_examples=25, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
