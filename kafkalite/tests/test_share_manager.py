"""The share-state manager's writes: replaying what it appended gives back the state it holds, whatever
mix of ShareSnapshot and ShareUpdate records it wrote; a failed write fails the acknowledgement."""
from __future__ import annotations

import random
import uuid

from kafkalite.coordinator import errors as E
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
