"""Share groups in the broker, below the protocol: the service over real storage — records shared among
members, locks expiring on trio's MockClock, read_committed, long polls, and the share state read back from
``__share_group_state`` after a crash (a copy of the live data directory, as SIGKILL leaves it)."""
from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import trio
import trio.testing

from kafkalite.config.broker import BrokerConfig
from kafkalite.coordinator.share.partition import ACCEPT, REJECT, RELEASE
from kafkalite.coordinator.share.service import ShareService
from kafkalite.server.serve import open_state
from kafkalite_storage.testing import Rec, encode_batch

T0 = 1_700_000_000_000


def make_state(path: Path, **overrides: str):  # type: ignore[no-untyped-def]
    # a small state topic keeps unclean restarts quick (Kafka's default is 50 partitions)
    return open_state(BrokerConfig({"log.dir": str(path), "share.coordinator.state.topic.num.partitions": "3",
                                    **overrides}))


def produce(state, topic: str, n: int, per_batch: int = 1, **kw) -> None:  # type: ignore[no-untyped-def]
    plog = state.get_log(topic, 0)
    for i in range(0, n, per_batch):
        recs = [Rec(b"v%d" % (i + j)) for j in range(min(per_batch, n - i))]
        plog.append(encode_batch(recs, **kw), now_ms=T0)
        state.notify_append(topic, 0)


def offsets(fetched) -> list[int]:  # type: ignore[no-untyped-def]
    return [o for r in fetched.values() for a in r.acquired for o in range(a.first, a.last + 1)]


async def started(state) -> ShareService:  # type: ignore[no-untyped-def]
    svc = ShareService(state)
    state.shares = svc
    return svc


async def fetch(svc: ShareService, member: str, tid: uuid.UUID, wait_ms: int = 0, max_records: int = 500):  # type: ignore[no-untyped-def]
    return await svc.fetch("g", member, [(tid, 0)], max_records=max_records, max_bytes=1 << 20,
                           max_wait_ms=wait_ms)


async def test_members_share_records_each_delivered_once(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    state = make_state(tmp_path, **{"kafkalite.share.auto.offset.reset": "earliest"})
    tid = state.topics.create("t", 1).topic_id
    produce(state, "t", 40, per_batch=2)
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        seen: list[int] = []
        for _round in range(20):
            for m in ("a", "b", "c", "d"):
                got = await fetch(svc, m, tid, max_records=3)
                offs = offsets(got)
                seen += offs
                if offs:
                    acks = {(tid, 0): [(o, o, [ACCEPT]) for o in offs]}
                    assert svc.acknowledge("g", m, acks) == {(tid, 0): 0}
        assert sorted(seen) == list(range(40))
        assert svc.states.start_of(next(iter(svc.states.parts))) == 40
        n.cancel_scope.cancel()
    state.logs.close()


async def test_lock_expiry_redelivers_then_archives(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    state = make_state(tmp_path, **{"kafkalite.share.auto.offset.reset": "earliest",
                                    "group.share.record.lock.duration.ms": "2000",
                                    "group.share.min.record.lock.duration.ms": "1000",
                                    "group.share.delivery.count.limit": "2"})
    tid = state.topics.create("t", 1).topic_id
    produce(state, "t", 1)
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        got = await fetch(svc, "a", tid)
        assert [a.delivery_count for a in got[(tid, 0)].acquired] == [1]
        t = trio.current_time()
        got = await fetch(svc, "b", tid, wait_ms=10_000)       # parked until a's lock expires
        assert offsets(got) == [0] and got[(tid, 0)].acquired[0].delivery_count == 2
        assert 2.0 <= trio.current_time() - t < 3.0
        await trio.sleep(2.5)                                  # expires again: the limit archives it
        got = await fetch(svc, "c", tid, wait_ms=3_000)
        assert offsets(got) == []
        key = next(iter(svc.states.parts))
        assert svc.states.start_of(key) == 1
        n.cancel_scope.cancel()
    state.logs.close()


async def test_state_survives_a_crash(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    live, image = tmp_path / "live", tmp_path / "image"
    state = make_state(live, **{"kafkalite.share.auto.offset.reset": "earliest"})
    tid = state.topics.create("t", 1).topic_id
    produce(state, "t", 20, per_batch=5)
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        assert offsets(await fetch(svc, "a", tid, max_records=10)) == list(range(10))
        acks = [(0, 4, [ACCEPT]), (5, 5, [REJECT]), (6, 6, [RELEASE]), (8, 8, [ACCEPT])]
        assert svc.acknowledge("g", "a", {(tid, 0): acks}) == {(tid, 0): 0}
        # 7 and 9 stay acquired when the broker dies: they must be delivered again
        shutil.copytree(live, image)
        n.cancel_scope.cancel()
    state.logs.close()

    state2 = make_state(image, **{"kafkalite.share.auto.offset.reset": "latest"})   # persisted start wins
    svc2 = await started(state2)
    async with trio.open_nursery() as n:
        await n.start(svc2.run)
        await svc2.loaded.wait()
        assert "g" in svc2.groups.groups                       # the group is known (Empty) from its state
        got = await fetch(svc2, "b", tid)
        counts = {o: a.delivery_count for a in got[(tid, 0)].acquired for o in range(a.first, a.last + 1)}
        assert sorted(counts) == [6, 7, 9, *list(range(10, 20))]
        assert counts[6] == 2 and counts[7] == 1 and counts[10] == 1
        n.cancel_scope.cancel()
    state2.logs.close()


async def test_read_committed_skips_aborted_and_markers(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    state = make_state(tmp_path, **{"kafkalite.share.auto.offset.reset": "earliest",
                                    "kafkalite.share.isolation.level": "read_committed"})
    tid = state.topics.create("t", 1).topic_id
    plog = state.get_log("t", 0)
    produce(state, "t", 1)                                                           # 0
    plog.append(encode_batch([Rec(b"x"), Rec(b"y")], producer_id=9, producer_epoch=0, base_sequence=0,
                             transactional=True), now_ms=T0)                         # 1-2
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        assert offsets(await fetch(svc, "a", tid)) == [0]        # the open transaction is past the LSO
        plog.append_control(0, producer_id=9, producer_epoch=0, coordinator_epoch=0, now_ms=T0)   # 3: ABORT
        plog.append(encode_batch([Rec(b"z")], producer_id=10, producer_epoch=0, base_sequence=0,
                                 transactional=True), now_ms=T0)                     # 4
        plog.append_control(1, producer_id=10, producer_epoch=0, coordinator_epoch=0, now_ms=T0)  # 5: COMMIT
        produce(state, "t", 1)                                                       # 6
        got = await fetch(svc, "a", tid)
        assert offsets(got) == [4, 6]
        assert svc.acknowledge("g", "a", {(tid, 0): [(0, 0, [ACCEPT]), (4, 4, [ACCEPT]), (6, 6, [ACCEPT])]}) \
            == {(tid, 0): 0}
        assert svc.states.start_of(next(iter(svc.states.parts))) == 7
        n.cancel_scope.cancel()
    state.logs.close()


async def test_latest_starts_at_the_end_and_long_poll_wakes_on_append(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    state = make_state(tmp_path)
    tid = state.topics.create("t", 1).topic_id
    produce(state, "t", 5)
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        assert offsets(await fetch(svc, "a", tid)) == []          # latest: the five old records are skipped

        async def later() -> None:
            await trio.sleep(1)
            produce(state, "t", 1)

        n.start_soon(later)
        t = trio.current_time()
        assert offsets(await fetch(svc, "a", tid, wait_ms=30_000)) == [5]
        assert trio.current_time() - t < 2
        n.cancel_scope.cancel()
    state.logs.close()


async def test_pruned_state_topic_replays_the_same(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    live, image = tmp_path / "live", tmp_path / "image"
    state = make_state(live, **{"kafkalite.share.auto.offset.reset": "earliest",
                                "share.coordinator.snapshot.update.records.per.snapshot": "3"})
    tid = state.topics.create("t", 1).topic_id
    produce(state, "t", 60)
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        for i in range(0, 40, 2):                     # 20 acknowledgements: snapshots every 3 updates
            got = await fetch(svc, "a", tid, max_records=2)
            offs = offsets(got)
            assert offs == [i, i + 1]
            svc.acknowledge("g", "a", {(tid, 0): [(i, i, [ACCEPT]), (i + 1, i + 1, [RELEASE])]})
            assert offsets(await fetch(svc, "b", tid, max_records=1)) == [i + 1]
            svc.acknowledge("g", "b", {(tid, 0): [(i + 1, i + 1, [ACCEPT])]})
        key = next(iter(svc.states.parts))
        part = svc.states._partition_of(key)
        plog = state.get_log("__share_group_state", part)
        before = plog.log_start_offset
        assert svc.prune() >= 1
        assert plog.log_start_offset > before and plog.log_start_offset == svc.states.snapshot_offsets[key]
        assert offsets(await fetch(svc, "a", tid, max_records=1)) == [40]     # held across the crash
        shutil.copytree(live, image)
        n.cancel_scope.cancel()
    state.logs.close()

    state2 = make_state(image)
    svc2 = await started(state2)
    async with trio.open_nursery() as n:
        await n.start(svc2.run)
        await svc2.loaded.wait()
        assert svc2.states.start_of(key) == 40
        got = await fetch(svc2, "c", tid)
        assert offsets(got) == list(range(40, 60))
        n.cancel_scope.cancel()
    state2.logs.close()


async def test_a_left_member_session_is_closed_after_a_lock_duration(
        tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    state = make_state(tmp_path, **{"kafkalite.share.auto.offset.reset": "earliest",
                                    "group.share.record.lock.duration.ms": "60000"})
    tid = state.topics.create("t", 1).topic_id
    produce(state, "t", 3)
    svc = await started(state)
    async with trio.open_nursery() as n:
        await n.start(svc.run)
        await svc.loaded.wait()
        await svc.ensure_state_topic()      # (created in a worker thread: the autojump clock would run on meanwhile)
        assert svc.heartbeat("g", "m", 0, None, ["t"], "c", "/h").error == 0
        svc.open_fetch("g", "m", 0, [(tid, 0)], [], False)
        assert offsets(await fetch(svc, "m", tid)) == [0, 1, 2]
        assert svc.heartbeat("g", "m", -1, None, None, "c", "/h").member_epoch == -1
        assert ("g", "m") in svc.sessions.sessions            # acknowledgements may still come
        await trio.sleep(61)
        assert ("g", "m") not in svc.sessions.sessions        # closed; its records released long before expiry
        assert offsets(await fetch(svc, "other", tid)) == [0, 1, 2]
        n.cancel_scope.cancel()
    state.logs.close()
