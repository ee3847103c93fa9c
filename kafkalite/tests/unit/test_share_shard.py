"""The share coordinator's shard (``coordinator/share/shard.py``): Kafka's batch combiner, and the coordinator's
view staying the log's replay while a share-partition's own writes and raw state RPCs interleave, the
share-partition reloading from it after each raw change (``ShareStateManager.reload``)."""
from __future__ import annotations

import random
import uuid

from kafkalite.coordinator.share import shard
from kafkalite.coordinator.share.config import GroupSettings, ShareConfig
from kafkalite.coordinator.share.manager import ShareStateManager
from kafkalite.coordinator.share.partition import ACCEPT, RELEASE, LogBatch, StateBatch
from kafkalite.coordinator.share.records import ShareKey
from kafkalite.coordinator.share.state import StateReplay
from kafkalite_wire.errors import ErrorCode

KEY = ShareKey("g", uuid.UUID(int=9), 0)
B = StateBatch


def test_combine_as_kafkas_persister_state_batch_combiner() -> None:
    assert shard.combine([], [], 0) == []
    # cut at the start offset; batches wholly below it dropped
    assert shard.combine([B(0, 4, 0, 1)], [B(6, 9, 2, 1)], 3) == [B(3, 4, 0, 1), B(6, 9, 2, 1)]
    # an offset covered twice: the higher delivery count wins, then the higher state
    assert shard.combine([B(0, 9, 2, 1)], [B(3, 5, 0, 2)], -1) == [B(0, 2, 2, 1), B(3, 5, 0, 2), B(6, 9, 2, 1)]
    assert shard.combine([B(0, 9, 0, 1)], [B(3, 5, 4, 1)], -1) == [B(0, 2, 0, 1), B(3, 5, 4, 1), B(6, 9, 0, 1)]
    assert shard.combine([B(3, 5, 4, 1)], [B(0, 9, 0, 1)], -1) == [B(0, 2, 0, 1), B(3, 5, 4, 1), B(6, 9, 0, 1)]
    # adjacent equal runs coalesce
    assert shard.combine([B(0, 2, 2, 1)], [B(3, 5, 2, 1)], 0) == [B(0, 5, 2, 1)]


def test_fencing_checks() -> None:
    sh = shard.Shard()
    out = shard.write(sh, KEY, leader_epoch=0, state_epoch=0, start=0, delivery_complete_count=-1, batches=[],
                      now=1, known=True, updates_per_snapshot=5)
    assert (out.error_code, out.error_message) == (ErrorCode.INVALID_REQUEST, shard.WRITE_UNINITIALIZED)
    for k, v in shard.initialize(sh, KEY, 3, 10, 1, True).records:
        sh.feed(k, v, 0)
    assert shard.initialize(sh, KEY, 2, 0, 1, True).error_code == ErrorCode.FENCED_STATE_EPOCH
    assert shard.initialize(sh, KEY, 3, 0, 1, False).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    read, st = shard.read(sh, KEY, 4, 1, True, 5)
    assert st is not None and (st.state_epoch, st.start) == (3, 10) and len(read.records) == 1   # records epoch 4
    for k, v in read.records:
        sh.feed(k, v, 1)
    assert shard.read(sh, KEY, 4, 1, True, 5)[0].records == []
    assert shard.read(sh, KEY, 3, 1, True, 5)[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    kw = {"start": -1, "delivery_complete_count": -1, "batches": [], "now": 1, "known": True,
          "updates_per_snapshot": 5}
    assert shard.write(sh, KEY, leader_epoch=3, state_epoch=3, **kw).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert shard.write(sh, KEY, leader_epoch=4, state_epoch=2, **kw).error_code == ErrorCode.FENCED_STATE_EPOCH
    assert shard.write(sh, KEY, leader_epoch=4, state_epoch=3, **kw).error_code == 0
    # kafkalite's limit: the state is kept per offset
    wide = {**kw, "batches": [B(10, 10 + shard.MAX_WRITE_SPAN, 2, 1)]}
    assert shard.write(sh, KEY, leader_epoch=4, state_epoch=3, **wide).error_code == ErrorCode.INVALID_REQUEST
    assert shard.write(sh, KEY, leader_epoch=4, state_epoch=3, **{**kw, "batches": [B(12, 11, 2, 1)]}) \
        .error_code == ErrorCode.INVALID_REQUEST
    below = {**kw, "batches": [B(-(1 << 62), 11, 2, 1)]}   # cut at the start offset (10): 2 offsets
    assert shard.write(sh, KEY, leader_epoch=4, state_epoch=3, **below).error_code == 0
    uninit = shard.Shard()
    for k, v in shard.initialize(uninit, KEY, 0, -1, 1, True).records:    # start -1: nothing is cut
        uninit.feed(k, v, 0)
    assert shard.write(uninit, KEY, leader_epoch=0, state_epoch=0, **below).error_code == ErrorCode.INVALID_REQUEST
    for k, v in shard.delete(sh, KEY, True).records:
        sh.feed(k, v, 2)
    assert KEY not in sh.states and KEY not in sh.state_epochs
    assert shard.delete(sh, KEY, True).records == []


def test_the_view_follows_the_log_while_raw_rpcs_and_the_share_partition_interleave() -> None:
    log: list[tuple[bytes, bytes | None]] = []

    def append(part: int, records: list[tuple[bytes, bytes | None]]) -> int:
        log.extend(records)
        return len(log) - len(records)

    cfg = ShareConfig(GroupSettings(lock_ms=30, delivery_limit=5, max_locks=50, auto_offset_reset="earliest"),
                      updates_per_snapshot=4, state_partitions=1)
    mgr = ShareStateManager(cfg, append)
    sh = shard.Shard()

    def catch_up() -> None:
        for off in range(sh.fed_to, len(log)):
            sh.feed(log[off][0], log[off][1], off)
        sh.fed_to = len(log)

    def raw(outcome: shard.Outcome) -> None:
        assert outcome.error_code == 0, outcome
        if outcome.records:
            append(0, outcome.records)
            catch_up()
            mgr.reload(KEY, sh.copy_of(KEY))

    rng = random.Random(5)
    leo, now, epoch = 300, 0, 0
    held: list[int] = []
    for step in range(800):
        now += rng.randint(0, 10)
        mgr.poll(now)
        sp = mgr.partition(KEY, now, 0, leo)
        held = [o for o in held if sp.state_of(o)[0] == 1]
        catch_up()
        r = rng.random()
        if r < 0.02:
            epoch += 1
            raw(shard.initialize(sh, KEY, epoch, rng.randint(0, leo - 1), now, True))
            held = []
        elif r < 0.05:
            st = sh.states[KEY]
            first = max(st.start, 0) + rng.randint(0, 20)
            raw(shard.write(sh, KEY, leader_epoch=0, state_epoch=epoch, start=-1, delivery_complete_count=-1,
                            batches=[B(first, first + rng.randint(0, 5), 2, 1)], now=now, known=True,
                            updates_per_snapshot=4))
            held = []
        elif held and r < 0.55:
            o = held.pop()
            assert mgr.acknowledge(KEY, "m", [(o, o, [rng.choice([ACCEPT, ACCEPT, RELEASE])])], now) == 0
        else:
            got, _ = mgr.acquire(KEY, "m", [LogBatch(o, o) for o in range(sp.fetch_offset(), leo)],
                                 rng.randint(1, 5), now)
            held += [o for a in got for o in range(a.first, a.last + 1)]
        catch_up()
        if step % 10:
            continue
        # the coordinator's view is the log's replay, and the share-partition agrees with it
        again = StateReplay()
        for off, (k, v) in enumerate(log):
            again.feed(k, v, off)
        assert again.states[KEY].batches() == sh.states[KEY].batches()
        assert again.states[KEY].start == sh.states[KEY].start
        assert sh.state_epochs[KEY] == epoch
        live = mgr.parts.get(KEY)
        if live is not None:
            assert live.start == sh.states[KEY].start
            assert live.persisted_batches() == sh.states[KEY].batches()
        # pruning never drops the latest snapshot of the share-partition
        frontier = mgr.prunable().get(0)
        assert frontier is not None and frontier <= sh.states[KEY].snapshot_offset
    assert epoch > 5
