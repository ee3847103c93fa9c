"""The share-partition state machine (KIP-932), without I/O: acquisition, locks, acknowledgements,
redelivery, archiving, the window bound, transactions, and the persisted form."""
from __future__ import annotations

import random

from kafkalite.coordinator.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    INVALID_RECORD_STATE,
    INVALID_REQUEST,
    REJECT,
    RELEASE,
    RENEW,
    Acquired,
    Limits,
    LogBatch,
    SharePartition,
    StateBatch,
)


def batches(*spans: tuple[int, int]) -> list[LogBatch]:
    return [LogBatch(a, b) for a, b in spans]


def log_from(sp: SharePartition, leo: int, size: int = 1) -> list[LogBatch]:
    """The log as single-record (or `size`-record) batches from the fetch offset to `leo`."""
    start = sp.fetch_offset()
    base = start - start % size
    return [LogBatch(o, min(o + size, leo) - 1) for o in range(base, leo, size)]


def test_acquire_accept_advances_start():
    sp = SharePartition(0, limits=Limits(lock_ms=1000))
    got, used, archived = sp.acquire("m1", batches((0, 4), (5, 9)), 100, now=0)
    assert got == [Acquired(0, 9, 1)] and len(used) == 2 and archived == []
    assert sp.fetch_offset() == 10 and sp.start == 0
    code, changed = sp.acknowledge("m1", [(0, 4, [ACCEPT])], now=1)
    assert code == 0 and changed == [StateBatch(0, 4, ACKNOWLEDGED, 1)]
    assert sp.start == 5
    # a second member cannot acknowledge m1's records
    assert sp.acknowledge("m2", [(5, 9, [ACCEPT])], now=1) == (INVALID_RECORD_STATE, [])
    assert sp.acknowledge("m1", [(5, 9, [ACCEPT])], now=1)[0] == 0
    assert sp.start == 10 and sp.in_flight() == 0


def test_each_record_to_one_member():
    sp = SharePartition(0)
    a, _, _ = sp.acquire("a", batches((0, 2)), 100, now=0)
    b, _, _ = sp.acquire("b", batches((0, 2), (3, 5)), 100, now=0)   # 0-2 already held by a
    assert a == [Acquired(0, 2, 1)] and b == [Acquired(3, 5, 1)]


def test_release_redelivers_with_count_and_other_member():
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 0), (1, 1)), 100, now=0)
    assert sp.acknowledge("a", [(0, 1, [RELEASE, ACCEPT])], now=0)[0] == 0
    assert sp.fetch_offset() == 0
    got, used, _ = sp.acquire("b", log_from(sp, 2), 100, now=0)
    assert got == [Acquired(0, 0, 2)] and [u.base for u in used] == [0]
    assert sp.state_of(0) == (ACQUIRED, 2)


def test_reject_and_gap_archive():
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 3)), 100, now=0)
    assert sp.acknowledge("a", [(0, 3, [REJECT, GAP, ACCEPT, REJECT])], now=0)[0] == 0
    assert sp.start == 4 and sp.fetch_offset() == 4


def test_lock_expiry_releases_and_limit_archives():
    sp = SharePartition(0, limits=Limits(lock_ms=100, delivery_limit=3))
    for n in range(1, 4):
        got, _, _ = sp.acquire(f"m{n}", log_from(sp, 1), 10, now=n * 1000)
        assert got == [Acquired(0, 0, n)]
        assert sp.next_deadline() == n * 1000 + 100
        assert sp.poll(n * 1000 + 99) == []
        changed = sp.poll(n * 1000 + 100)
        assert changed == [StateBatch(0, 0, ARCHIVED if n == 3 else AVAILABLE, n)]
    assert sp.start == 1
    assert sp.acquire("m4", batches((0, 0)), 10, now=5000)[0] == []


def test_release_at_limit_archives():
    sp = SharePartition(0, limits=Limits(delivery_limit=2))
    for n in (1, 2):
        assert sp.acquire("m", log_from(sp, 1), 10, now=0)[0] == [Acquired(0, 0, n)]
        _code, changed = sp.acknowledge("m", [(0, 0, [RELEASE])], now=0)
    assert changed == [StateBatch(0, 0, ARCHIVED, 2)] and sp.start == 1


def test_renew_extends_lock():
    sp = SharePartition(0, limits=Limits(lock_ms=100))
    sp.acquire("m", batches((0, 1)), 10, now=0)
    assert sp.acknowledge("m", [(0, 0, [RENEW])], now=90)[0] == INVALID_REQUEST   # only where allowed (v2)
    assert sp.acknowledge("m", [(0, 0, [RENEW])], now=90, allow_renew=True) == (0, [])
    assert sp.poll(100) == [StateBatch(1, 1, AVAILABLE, 1)]
    assert sp.state_of(0) == (ACQUIRED, 1)
    assert sp.poll(190) == [StateBatch(0, 0, AVAILABLE, 1)]


def test_acknowledge_is_all_or_nothing_and_validated():
    sp = SharePartition(0)
    sp.acquire("m", batches((0, 4)), 10, now=0)
    assert sp.acknowledge("m", [(0, 1, [ACCEPT]), (3, 7, [ACCEPT])], now=0)[0] == INVALID_RECORD_STATE
    assert sp.state_of(0) == (ACQUIRED, 1)
    assert sp.acknowledge("m", [(2, 1, [ACCEPT])], now=0)[0] == INVALID_REQUEST
    assert sp.acknowledge("m", [(0, 2, [ACCEPT, ACCEPT])], now=0)[0] == INVALID_REQUEST
    assert sp.acknowledge("m", [(0, 0, [9])], now=0)[0] == INVALID_REQUEST
    # acknowledging twice: the second finds the records no longer acquired
    assert sp.acknowledge("m", [(0, 4, [ACCEPT])], now=0)[0] == 0
    assert sp.acknowledge("m", [(0, 4, [ACCEPT])], now=0)[0] == INVALID_RECORD_STATE


def test_max_record_locks_bounds_window():
    sp = SharePartition(0, limits=Limits(max_locks=5))
    got, used, _ = sp.acquire("m", log_from(sp, 20), 100, now=0)
    assert got == [Acquired(0, 4, 1)] and len(used) == 5
    assert sp.acquire("n", log_from(sp, 20), 100, now=0)[0] == []
    # acknowledging later records does not make room: the window is counted from the start
    sp.acknowledge("m", [(1, 4, [ACCEPT])], now=0)
    assert sp.acquire("n", log_from(sp, 20), 100, now=0)[0] == []
    sp.acknowledge("m", [(0, 0, [ACCEPT])], now=0)
    assert sp.start == 5
    assert sp.acquire("n", log_from(sp, 20), 100, now=0)[0] == [Acquired(5, 9, 1)]


def test_max_records_is_soft_at_batch_boundaries():
    sp = SharePartition(0)
    got, used, _ = sp.acquire("m", batches((0, 9), (10, 19)), 3, now=0)
    assert got == [Acquired(0, 9, 1)] and len(used) == 1


def test_control_and_aborted_batches_are_archived_not_delivered():
    sp = SharePartition(0)
    log = [LogBatch(0, 1, producer_id=7, transactional=True),
           LogBatch(2, 2, control=True, producer_id=7, transactional=True),
           LogBatch(3, 4, producer_id=8, transactional=True),
           LogBatch(5, 5, control=True, producer_id=8, transactional=True),
           LogBatch(6, 6)]
    got, used, archived = sp.acquire("m", log, 100, now=0, aborted=[(7, 0, 2)])
    assert got == [Acquired(3, 4, 1), Acquired(6, 6, 1)]
    assert [u.base for u in used] == [3, 6]
    assert archived == [StateBatch(0, 2, ARCHIVED, 0), StateBatch(5, 5, ARCHIVED, 0)]
    sp.acknowledge("m", [(3, 4, [ACCEPT]), (6, 6, [ACCEPT])], now=0)
    assert sp.start == 7


def test_offsets_missing_from_log_are_archived():
    sp = SharePartition(0)
    got, _, archived = sp.acquire("m", batches((3, 4), (8, 8)), 100, now=0)
    assert got == [Acquired(3, 4, 1), Acquired(8, 8, 1)]
    assert archived == [StateBatch(0, 2, ARCHIVED, 0), StateBatch(5, 7, ARCHIVED, 0)]
    assert sp.start == 3


def test_release_member_on_session_close():
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 1)), 10, now=0)
    sp.acquire("b", batches((0, 1), (2, 3)), 10, now=0)
    # Kafka 4.2+'s releaseAcquiredRecords (DeliveryCountOps.NO_OP): available again, that delivery counted
    assert sp.release_member("a") == [StateBatch(0, 1, AVAILABLE, 1)]
    assert sp.state_of(2) == (ACQUIRED, 1)
    assert sp.acquired_by("b") == 2 and sp.acquired_by("a") == 0
    got, _, _ = sp.acquire("c", batches((0, 1)), 10, now=0)
    assert got == [Acquired(0, 1, 2)]


def test_release_member_at_the_delivery_limit_archives():
    sp = SharePartition(0, limits=Limits(delivery_limit=2))
    sp.acquire("a", batches((0, 0)), 10, now=0)
    sp.acknowledge("a", [(0, 0, [RELEASE])], now=0)
    assert sp.acquire("a", batches((0, 0)), 10, now=0)[0] == [Acquired(0, 0, 2)]
    # as a RELEASE would (count 2 = limit): a consumer that keeps crashing on a record does not get it forever
    assert sp.release_member("a") == [StateBatch(0, 0, ARCHIVED, 2)]
    assert sp.acquire("b", batches((0, 0)), 10, now=0)[0] == []


def test_persisted_batches_and_restore():
    sp = SharePartition(10, limits=Limits(delivery_limit=5))
    sp.acquire("a", batches((10, 19)), 100, now=0)
    sp.acknowledge("a", [(10, 10, [RELEASE]), (12, 13, [ACCEPT]), (15, 15, [REJECT])], now=0)
    # 11, 14, 16-19 still acquired: persisted as available with their count before this delivery
    snap = sp.persisted_batches()
    assert snap == [StateBatch(10, 10, AVAILABLE, 1), StateBatch(12, 13, ACKNOWLEDGED, 1),
                    StateBatch(15, 15, ARCHIVED, 1)]
    again = SharePartition(sp.start, snap)
    # after a restart every unacknowledged record is delivered again, none of the acknowledged ones
    got, _, _ = again.acquire("b", [LogBatch(o, o) for o in range(10, 25)], 100, now=0)
    delivered = [o for r in got for o in range(r.first, r.last + 1)]
    assert delivered == [10, 11, 14, *list(range(16, 25))]
    assert again.state_of(10) == (ACQUIRED, 2) and again.state_of(11) == (ACQUIRED, 1)


def test_move_start_and_reset():
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 9)), 100, now=0)
    assert sp.move_start(5) and sp.start == 5 and sp.in_flight() == 5
    assert not sp.move_start(3)
    assert sp.acknowledge("a", [(2, 2, [ACCEPT])], now=0)[0] == INVALID_RECORD_STATE
    sp.reset(100)
    assert sp.start == 100 and sp.in_flight() == 0 and sp.fetch_offset() == 100
    assert sp.poll(10**9) == []


def test_random_workload_never_loses_or_duplicates_accepted_records():
    """A model check: members acquire, accept, release, reject and time out at random; every offset ends
    accepted exactly once or archived (rejected / at the delivery limit), never both, never lost."""
    rng = random.Random(5)
    lim = Limits(lock_ms=50, delivery_limit=3, max_locks=40)
    sp = SharePartition(0, limits=lim)
    leo = 300
    accepted: list[int] = []
    rejected: set[int] = set()
    held: dict[str, list[int]] = {m: [] for m in "abcd"}
    counts: dict[int, int] = {}
    now = 0
    for _ in range(4000):
        now += rng.randint(0, 20)
        for b in sp.poll(now):
            for o in range(b.first, b.last + 1):
                for lst in held.values():
                    if o in lst:
                        lst.remove(o)
        m = rng.choice("abcd")
        if held[m] and rng.random() < 0.6:
            o = held[m].pop(rng.randrange(len(held[m])))
            t = rng.choices([ACCEPT, RELEASE, REJECT], [6, 3, 1])[0]
            code, _ = sp.acknowledge(m, [(o, o, [t])], now)
            assert code == 0
            if t == ACCEPT:
                accepted.append(o)
            elif t == REJECT:
                rejected.add(o)
        else:
            got, _, _ = sp.acquire(m, log_from(sp, leo, size=3), rng.randint(1, 10), now)
            for r in got:
                held[m].extend(range(r.first, r.last + 1))
                for o in range(r.first, r.last + 1):
                    assert o not in accepted and o not in rejected
                    counts[o] = r.delivery_count
        if sp.start >= leo:
            break
    assert len(accepted) == len(set(accepted))
    assert not set(accepted) & rejected
    for o in range(sp.start):
        assert o in accepted or o in rejected or counts[o] == lim.delivery_limit
    assert sp.start > 100


def test_whole_batch_paths_split_ranges_by_delivery_count():
    sp = SharePartition(0)
    sp.acquire("a", batches((0, 9)), 100, now=0)
    sp.acknowledge("a", [(0, 2, [RELEASE]), (3, 9, [RELEASE, RELEASE, ACCEPT, RELEASE, RELEASE, RELEASE, RELEASE])], 0)
    sp.acknowledge("b", [], 0)
    got, _, _ = sp.acquire("b", batches((0, 9)), 100, now=0)
    assert got == [Acquired(0, 4, 2), Acquired(6, 9, 2)]
    sp.acknowledge("b", [(6, 9, [RELEASE])], 0)
    got, _, _ = sp.acquire("c", batches((0, 9)), 100, now=0)
    assert got == [Acquired(6, 9, 3)]
    # overlapping or unordered batches are malformed
    assert sp.acknowledge("c", [(6, 7, [ACCEPT]), (7, 9, [ACCEPT])], 0)[0] == INVALID_REQUEST
    assert sp.acknowledge("c", [(8, 9, [ACCEPT]), (6, 7, [ACCEPT])], 0)[0] == INVALID_REQUEST
    code, changed = sp.acknowledge("c", [(6, 7, [ACCEPT]), (8, 9, [ACCEPT])], 0)
    assert code == 0 and changed == [StateBatch(6, 9, ACKNOWLEDGED, 3)]


def test_redeliveries_are_throttled_and_the_last_attempt_goes_alone():
    """Kafka 4.3: from ceil(limit/2) deliveries on, a returning batch is handed out in halves, and a record on its
    last attempt alone (so a poison record does not exhaust the attempts of its whole batch)."""
    sp = SharePartition(0, limits=Limits(delivery_limit=5))
    sizes = []
    for _ in range(30):
        got, _, _ = sp.acquire("m", batches((0, 7)), 500, now=0)
        if not got:
            break
        offs = [o for r in got for o in range(r.first, r.last + 1)]
        sizes.append((len(offs), got[0].delivery_count))
        sp.acknowledge("m", [(offs[0], offs[-1], [RELEASE])], now=0)
    # deliveries 1-3 whole; the 4th in halves (8 >> 1); the 5th (last) one record at a time, earliest first
    assert sizes == [(8, 1), (8, 2), (8, 3), (4, 4)] + [(1, 5)] * 4 + [(4, 4)] + [(1, 5)] * 4
    assert sp.start == 8


def test_record_limit_mode_splits_batches():
    sp = SharePartition(0)
    got, used, _ = sp.acquire("m", batches((0, 9), (10, 19)), 3, now=0, record_limit=True)
    assert got == [Acquired(0, 2, 1)] and [u.base for u in used] == [0]
    got, _, _ = sp.acquire("m", batches((0, 9), (10, 19)), 12, now=0, record_limit=True)
    assert got == [Acquired(3, 14, 1)]
