"""The share-state manager's writes: replaying what it appended gives back the state it holds, whatever
mix of ShareSnapshot and ShareUpdate records it wrote; a failed write fails the acknowledgement."""
from __future__ import annotations

import random
import uuid

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.share.config import GroupSettings, ShareConfig
from kafkalite.coordinator.share.manager import ShareStateManager
from kafkalite.coordinator.share.partition import ACCEPT, REJECT, RELEASE, LogBatch, SharePartition
from kafkalite.coordinator.share.records import SNAPSHOT, ShareKey, decode_key
from kafkalite.coordinator.share.state import StateReplay

KEY = ShareKey("g", uuid.UUID(int=7), 0)


def rebuilt(written: list[tuple[int, bytes, bytes | None]]) -> SharePartition:
    r = StateReplay()
    for _part, k, v in written:
        r.feed(k, v)
    st = r.states[KEY]
    return SharePartition(st.start, st.batches())


def test_replay_matches_live_state_across_snapshots() -> None:
    written: list[tuple[int, bytes, bytes | None]] = []

    def append(part: int, records: list[tuple[bytes, bytes | None]]) -> None:
        written.extend((part, k, v) for k, v in records)

    cfg = ShareConfig(GroupSettings(lock_ms=30, delivery_limit=3, max_locks=30, auto_offset_reset="earliest"),
                      updates_per_snapshot=4)
    mgr = ShareStateManager(cfg, append)
    rng = random.Random(11)
    leo, now = 200, 0
    held: dict[str, list[int]] = {m: [] for m in "xyz"}
    for step in range(1500):
        now += rng.randint(0, 10)
        mgr.poll(now)
        sp = mgr.partition(KEY, now, 0, leo)
        for m in held:
            held[m] = [o for o in held[m] if sp.state_of(o)[0] == 1]
        m = rng.choice("xyz")
        if held[m] and rng.random() < 0.5:
            o = held[m].pop()
            assert mgr.acknowledge(KEY, m, [(o, o, [rng.choice([ACCEPT, ACCEPT, RELEASE, REJECT])])], now) == 0
        else:
            start = sp.fetch_offset()
            got, _ = mgr.acquire(KEY, m, [LogBatch(o, o) for o in range(start, leo)], rng.randint(1, 5), now)
            held[m] += [o for a in got for o in range(a.first, a.last + 1)]
        if step % 50 == 0:
            again = rebuilt(written)
            assert again.start == sp.start
            assert again.persisted_batches() == sp.persisted_batches()
    types = [decode_key(k)[0] for _p, k, _v in written]
    assert types.count(SNAPSHOT) > 10 and len(types) - types.count(SNAPSHOT) > 30
    assert len({p for p, _k, _v in written}) == 1            # one share-partition, one state partition


def test_failed_write_fails_the_acknowledgement() -> None:
    fail = [False]

    def append(part: int, records: list[tuple[bytes, bytes | None]]) -> None:
        if fail[0]:
            raise E.AppendError(E.KAFKA_STORAGE_ERROR, "disk full")

    mgr = ShareStateManager(ShareConfig(GroupSettings(auto_offset_reset="earliest")), append)
    mgr.partition(KEY, 0, 0, 10)
    mgr.acquire(KEY, "m", [LogBatch(0, 9)], 10, 0)
    fail[0] = True
    assert mgr.acknowledge(KEY, "m", [(0, 0, [ACCEPT])], 0) == E.KAFKA_STORAGE_ERROR
    fail[0] = False
    assert mgr.acknowledge(KEY, "m", [(1, 1, [ACCEPT])], 0) == E.NONE
    assert mgr.acknowledge(KEY, "n", [(2, 2, [ACCEPT])], 0) == 121      # INVALID_RECORD_STATE
    assert mgr.acknowledge(ShareKey("g", uuid.UUID(int=8), 0), "m", [(0, 0, [ACCEPT])], 0) == E.UNKNOWN_TOPIC_OR_PARTITION


class Log:
    """One state-topic partition per list: (offset, key, value), offsets as a log gives them."""

    def __init__(self) -> None:
        self.parts: dict[int, list[tuple[int, bytes, bytes | None]]] = {}

    def append(self, part: int, records: list[tuple[bytes, bytes | None]]) -> int:
        recs = self.parts.setdefault(part, [])
        base = len(recs)
        recs.extend((base + i, k, v) for i, (k, v) in enumerate(records))
        return base

    def replay(self, part: int, from_offset: int = 0) -> StateReplay:
        r = StateReplay()
        for off, k, v in self.parts[part]:
            if off >= from_offset:
                r.feed(k, v, off)
        return r


def churn(mgr: ShareStateManager, key: ShareKey, now: int, rounds: int) -> None:
    """Acquire and acknowledge one record at a time: one ShareUpdate per round."""
    for _ in range(rounds):
        sp = mgr.partition(key, now, 0, 10_000)
        got, _ = mgr.acquire(key, "m", [LogBatch(sp.fetch_offset(), sp.fetch_offset())], 1, now)
        o = got[0].first
        assert mgr.acknowledge(key, "m", [(o, o, [ACCEPT if o % 3 else RELEASE])], now) == 0


def test_recovery_reads_a_snapshot_and_at_most_n_updates() -> None:
    log = Log()
    n = 7
    mgr = ShareStateManager(ShareConfig(GroupSettings(auto_offset_reset="earliest"), state_partitions=1,
                                        updates_per_snapshot=n), log.append)
    churn(mgr, KEY, 0, 300)
    live = mgr.parts[KEY]
    whole = log.replay(0)
    assert whole.states[KEY].updates <= n               # updates after the last snapshot
    # what a restart needs starts at the last snapshot: everything before it can go (prunable)
    frontier = mgr.prunable()[0]
    assert frontier == mgr.snapshot_offsets[KEY] and len(log.parts[0]) - frontier <= n + 1
    tail = log.replay(0, frontier)
    assert tail.records <= n + 1
    again = SharePartition(tail.states[KEY].start, tail.states[KEY].batches())
    assert (again.start, again.persisted_batches()) == (live.start, live.persisted_batches())


def test_idle_share_partitions_are_snapshotted_so_pruning_passes_them() -> None:
    log = Log()
    cfg = ShareConfig(GroupSettings(auto_offset_reset="earliest"), state_partitions=1, updates_per_snapshot=50)
    mgr = ShareStateManager(cfg, log.append)
    idle, busy = ShareKey("g", uuid.UUID(int=1), 0), ShareKey("g", uuid.UUID(int=2), 0)
    churn(mgr, idle, 0, 3)                               # a snapshot and 3 updates, then nothing
    old = mgr.snapshot_offsets[idle]
    for t in range(0, 600_000, 10_000):                  # the busy one writes on for 10 minutes
        churn(mgr, busy, t, 2)
        assert mgr.snapshot_cold(t, 300_000) == (1 if t == 300_000 else 0)
    # the idle one was snapshotted once, after 5 idle minutes: the frontier is past its old snapshot
    assert mgr.snapshot_offsets[idle] > old and mgr.prunable()[0] > old
    frontier = mgr.prunable()[0]
    tail = log.replay(0, frontier)
    for key in (idle, busy):
        sp = mgr.parts[key]
        st = tail.states[key]
        assert (st.start, st.batches()) == (sp.start, sp.persisted_batches())
    # a quiet broker: nothing written since, nothing to gain, nothing rewritten
    assert mgr.snapshot_cold(10_000_000, 300_000) == 2        # busy's updates were after both snapshots
    assert mgr.snapshot_cold(20_000_000, 300_000) == 0


def test_loaded_idle_share_partitions_are_snapshotted_too() -> None:
    log = Log()
    cfg = ShareConfig(GroupSettings(auto_offset_reset="earliest"), state_partitions=1, updates_per_snapshot=50)
    mgr = ShareStateManager(cfg, log.append)
    idle, busy = ShareKey("g", uuid.UUID(int=1), 0), ShareKey("g", uuid.UUID(int=2), 0)
    churn(mgr, idle, 0, 3)
    churn(mgr, busy, 0, 3)
    restarted = ShareStateManager(cfg, log.append)        # a restart: both loaded, only busy used again
    restarted.load(log.replay(0).states)
    before = restarted.persisted[idle].batches()
    churn(restarted, busy, 400_000, 2)
    assert restarted.snapshot_cold(800_000, 300_000) == 2  # busy went idle too (last write 400 s ago)
    frontier = restarted.prunable()[0]
    assert frontier > restarted.snapshot_offsets[busy] - 1 and frontier > 0
    st = log.replay(0, frontier).states[idle]
    assert st.batches() == before
