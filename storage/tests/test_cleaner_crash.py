"""Crash injection into a compaction pass: every step leaves a log holding the pre- or the post-clean contents.

A pass cleans groups of consecutive segments one after the other; for each group it writes `<base>.log.cleaned`,
fsyncs it, renames it `.swap`, renames the old segments' files `.deleted` and finally renames the swap to
`<base>.log`. Each group's swap is the atomic step (as in Kafka), so after a crash the log is cleaned up to some
original segment boundary and untouched from it on: the groups before the one in progress are cleaned, the ones
after it are not, and a merged group whose trailing segments lost every record may come back as its swap plus
those old segments (the loader lets a swap replace only the segments its own offsets reach) - each segment
holding exactly its pre- or its post-clean records. The test counts every file-system step of one pass (creating
the `.cleaned` file, each write to it, os.fsync, os.rename, os.replace, os.unlink), then for each step k replays
the same pass on a fresh copy of the log with that step raising, abandons the process state as a crash would
(descriptors closed, nothing flushed or trimmed), reopens the directory as after an unclean stop and compares
the records it holds (offset, key, value) with the legal outcomes (post-clean below a segment boundary, pre-
clean from it on). A second compaction of the recovered log must reach the post-clean state.
"""

from __future__ import annotations

import os
import random
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafkalite_storage import LogConfig, PartitionLog, fs
from kafkalite_storage.batch import batch_records, iter_batches, validate_batch
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.testing import Rec, encode_batch

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=3000, cleanup_policy="compact", delete_retention_ms=1000, file_delete_delay_ms=0,
                index_interval_bytes=200)
CLEAN_AT = NOW + 10**7
Contents = list[tuple[int, bytes | None, bytes | None]]


class Crash(Exception):
    """The injected failure (stands for the process dying at that point)."""


def contents(log: PartitionLog) -> Contents:
    data = log.read_bytes(log.log_start_offset, 10**9)
    out: Contents = []
    for pos, h in iter_batches(data):
        batch = data[pos : pos + h.size]
        validate_batch(batch, exact_count=False)
        out += [(r.offset, r.key, r.value) for r in batch_records(batch)]
    return out


def _write(log: PartitionLog, rng: random.Random, batches: int, keys: int, start: int) -> None:
    for i in range(batches):
        recs = [Rec(None if rng.random() < 0.15 else b"v%d-%d" % (start + i, j) + b"x" * rng.randint(0, 40),
                    key=b"k%d" % rng.randrange(keys), timestamp=NOW + start + i) for j in range(rng.randint(1, 5))]
        log.append(encode_batch(recs, base_timestamp=NOW + start + i, compression=rng.choice([0, 0, 1, 3])),
                   now_ms=NOW + start + i)


def _build(directory: Path, second_pass: bool) -> None:
    """A compacted topic's log. With `second_pass`, a first clean already ran (segments shrank, so the next
    pass merges several of them into one group) and new updates to every key followed."""
    log = PartitionLog.create(str(directory), "c", 0, uuid.uuid4(), CFG)
    rng = random.Random(17)
    _write(log, rng, 150, 25, 0)
    if second_pass:
        clean_log(log, CLEAN_AT, force=True)
        log.purge_deleted(force=True)
        for k in range(25):  # supersede every key, so whole merged groups lose all their records
            log.append(encode_batch([Rec(b"final-%d" % k, key=b"k%d" % k)], base_timestamp=NOW + 500 + k),
                       now_ms=NOW + 500 + k)
        log.roll()
        log.append(encode_batch([Rec(b"tail", key=b"t")], base_timestamp=NOW + 600), now_ms=NOW + 600)
    log.close()


def _abandon(log: PartitionLog) -> None:
    """Close every descriptor without writing anything (what a killed process leaves behind)."""
    for seg in list(log.segments) + [s for _d, s in log._doomed]:
        seg.close_without_final_entry()
    log.closed = True


def _instrument(monkeypatch: pytest.MonkeyPatch, fail_at: int | None, steps: list[str]) -> None:
    def wrap(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def fn(*args: Any, **kwargs: Any) -> Any:
            if name in ("open", "write") and not ((name == "open" and str(args[0]).endswith(".cleaned"))
                                                  or (name == "write" and args[0] in cleaned_fds)):
                return real(*args, **kwargs)
            steps.append(f"{name}{args[:2] if name in ('rename', 'replace') else args[:1]!r}")
            if fail_at is not None and len(steps) - 1 == fail_at:
                raise Crash(steps[-1])
            out = real(*args, **kwargs)
            if name == "open":
                cleaned_fds.add(out)
            return out
        return fn

    cleaned_fds: set[int] = set()
    for name in ("open", "write", "rename", "replace", "fsync", "unlink"):  # storage writes through fs
        monkeypatch.setattr(fs, name, wrap(name, getattr(fs, name)))


def _run_pass(directory: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int | None) -> tuple[list[str], bool]:
    log = PartitionLog.open(str(directory), "c", 0, CFG, clean=True)
    steps: list[str] = []
    crashed = False
    with monkeypatch.context() as m:
        _instrument(m, fail_at, steps)
        try:
            assert clean_log(log, CLEAN_AT, force=True) is not None
        except Crash:
            crashed = True
    if crashed:
        _abandon(log)
    else:
        log.close()
    return steps, crashed


@pytest.mark.parametrize("second_pass", [False, True], ids=["first-pass", "merging-pass"])
def test_crash_at_every_step_of_a_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        second_pass: bool) -> None:
    pristine = tmp_path / "pristine" / "c-0"
    _build(pristine, second_pass)
    ref = PartitionLog.open(str(pristine), "c", 0, CFG, clean=True)
    pre = contents(ref)
    bases = [s.base_offset for s in ref.segments]
    ref.close()

    post_dir = tmp_path / "post" / "c-0"
    shutil.copytree(pristine, post_dir)
    steps, crashed = _run_pass(post_dir, monkeypatch, None)
    assert not crashed
    post_log = PartitionLog.open(str(post_dir), "c", 0, CFG, clean=False)
    post = contents(post_log)
    post_log.close()
    # legal: cleaned below some original segment boundary, untouched from it on
    legal = {j: [x for x in post if x[0] < b] + [x for x in pre if x[0] >= b]
             for j, b in enumerate([*bases, 2**63])}
    assert post != pre and {o for o, _k, _v in post} < {o for o, _k, _v in pre}
    kinds = " ".join(steps)
    assert ".cleaned" in kinds and ".swap" in kinds and ".deleted" in kinds, steps

    outcomes: dict[int, int] = {}
    for k in range(len(steps)):
        d = tmp_path / f"crash-{k}" / "c-0"
        shutil.copytree(pristine, d)
        _steps, crashed = _run_pass(d, monkeypatch, k)
        assert crashed, f"step {k} ({steps[k]}) was not reached on replay"
        log = PartitionLog.open(str(d), "c", 0, CFG, clean=False)  # as after an unclean stop
        try:
            got = contents(log)
            done = [j for j, want in legal.items() if got == want]
            assert done, f"crash at step {k} ({steps[k]}): a segment is neither pre- nor post-clean"
            key = -1 if got == pre else 1 if got == post else 0
            outcomes[key] = outcomes.get(key, 0) + 1
            leftovers = [n for n in os.listdir(d) if n.endswith((".cleaned", ".swap", ".deleted"))]
            assert leftovers == [], leftovers
            clean_log(log, CLEAN_AT, force=True)
            assert contents(log) == post, f"re-cleaning after a crash at step {k} does not reach post"
        finally:
            log.close()
        shutil.rmtree(d.parent)
    # both outcomes are reachable: before a group's swap rename it rolls back, after it it rolls forward
    assert outcomes.get(-1, 0) > 0 and outcomes.get(1, 0) > 0, outcomes


def test_segments_emptied_by_a_pass_do_not_block_later_passes(tmp_path: Path) -> None:
    """A pass can leave empty segments between non-empty ones (every record superseded); the next pass must
    still clean (merging across them) instead of finding its groups non-contiguous and giving up."""
    cfg = LogConfig(segment_bytes=700, cleanup_policy="compact", delete_retention_ms=0, file_delete_delay_ms=0,
                    min_cleanable_dirty_ratio=0.01)
    log = PartitionLog.create(str(tmp_path / "e-0"), "e", 0, uuid.uuid4(), cfg)
    for i in range(12):  # one ~500-byte batch per segment: five values of "a", odd ones also a unique key
        recs = [Rec(b"x" * 80, key=b"a") for _ in range(5)] + ([Rec(b"u", key=b"u%d" % i)] if i % 2 else [])
        log.append(encode_batch(recs, base_timestamp=NOW + i), now_ms=NOW + i)
        log.roll()
    # first pass: one segment per group (each near segment.bytes); the "a"-only ones end up empty
    assert clean_log(log, CLEAN_AT) is not None
    assert [s.size for s in log.segments[:-1]].count(0) >= 2  # emptied segments between live ones
    for i in range(12, 16):  # new values for u1, then roll them out of the active segment
        log.append(encode_batch([Rec(b"y%d" % i, key=b"u1")], base_timestamp=NOW + i), now_ms=NOW + i)
    log.roll()
    log.append(encode_batch([Rec(b"tail", key=b"t")], base_timestamp=NOW + 20), now_ms=NOW + 20)
    res = clean_log(log, CLEAN_AT)
    assert res is not None and res.records_removed == 4  # u1's first value and three of the new ones
    got = [(k, v) for _o, k, v in contents(log)]
    assert got.count((b"u1", b"y15")) == 1 and [k for k, _v in got].count(b"u1") == 1
    assert [k for k, _v in got].count(b"a") == 1
    log.close()
