"""The trio glue: long-polled JoinGroup/SyncGroup and timers, on trio's MockClock."""
from __future__ import annotations

import trio
import trio.lowlevel
import trio.testing

from kafkalite.coordinator.classic.service import GroupService
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import GroupConfig

PROTOS = [("range", b"meta")]


async def _join(svc: GroupService, member: str = "", session: int = 10_000, rebalance: int = 20_000):
    r = await svc.join_group("g", member, None, "cid", "/h", rebalance, session, "consumer", PROTOS,
                             require_known_member_id=True)
    if r.error == E.MEMBER_ID_REQUIRED:
        r = await svc.join_group("g", r.member_id, None, "cid", "/h", rebalance, session, "consumer", PROTOS,
                                 require_known_member_id=True)
    return r


async def test_join_sync_and_session_expiry_on_mock_clock(autojump_clock: trio.testing.MockClock) -> None:
    svc = GroupService(None, GroupConfig(group_initial_rebalance_delay_ms=3000))
    async with trio.open_nursery() as nursery:
        await nursery.start(svc.run)
        await svc.loaded.wait()
        t0 = trio.current_time()
        results = []

        async def member() -> None:
            results.append(await _join(svc))

        async with trio.open_nursery() as joins:
            joins.start_soon(member)
            joins.start_soon(member)
        # both joined inside one initial delay (3 s), no earlier
        assert trio.current_time() - t0 >= 3.0
        assert len(results) == 2 and results[0].generation_id == results[1].generation_id == 1
        leader = next(r for r in results if r.leader_id == r.member_id)
        follower = next(r for r in results if r is not leader)
        synced = {}

        async def sync(r, assignments) -> None:
            synced[r.member_id] = await svc.sync_group("g", 1, r.member_id, None, None, None, assignments)

        async with trio.open_nursery() as syncs:
            syncs.start_soon(sync, follower, {})
            await trio.sleep(1)  # the follower's SyncGroup waits for the leader
            assert follower.member_id not in synced
            syncs.start_soon(sync, leader, {leader.member_id: b"L", follower.member_id: b"F"})
        assert synced[follower.member_id].assignment == b"F"
        assert synced[leader.member_id].assignment == b"L"
        # the follower keeps heartbeating, the leader goes silent: after its session timeout the group
        # rebalances without it
        for _ in range(4):
            await trio.sleep(4)
            err = svc.heartbeat("g", follower.member_id, None, 1)
        assert err == E.REBALANCE_IN_PROGRESS
        r = await _join(svc, follower.member_id)
        assert r.error == E.NONE and r.generation_id == 2 and r.leader_id == follower.member_id
        assert svc.describe_group("g")[1]["state"] == "CompletingRebalance"
        svc.close()


async def test_close_answers_parked_joins(autojump_clock: trio.testing.MockClock) -> None:
    svc = GroupService(None, GroupConfig(group_initial_rebalance_delay_ms=60_000))
    async with trio.open_nursery() as nursery:
        await nursery.start(svc.run)
        await svc.loaded.wait()
        out = []

        async def member() -> None:
            out.append(await _join(svc))

        nursery.start_soon(member)
        await trio.sleep(1)
        assert not out
        svc.close()
        await trio.lowlevel.checkpoint()
    assert out[0].error == E.NOT_COORDINATOR
