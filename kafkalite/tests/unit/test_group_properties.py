"""Random operation sequences against the pure coordinator: invariants hold, state survives a reload."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import GroupState, OffsetAndMetadata
from kafkalite.coordinator.classic.loader import StateLoader
from kafkalite.coordinator.classic.records import build_batch, iter_records
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import GroupConfig

PROTOS = [("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff")]

op = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 3)),
    st.tuples(st.just("rejoin"), st.integers(0, 3)),
    st.tuples(st.just("sync"), st.integers(0, 3)),
    st.tuples(st.just("heartbeat"), st.integers(0, 3)),
    st.tuples(st.just("leave"), st.integers(0, 3)),
    st.tuples(st.just("commit"), st.integers(0, 3)),
    st.tuples(st.just("simple_commit"), st.integers(0, 3)),
    st.tuples(st.just("advance"), st.sampled_from([1, 500, 3000, 11_000, 31_000])),
)


class Harness:
    def __init__(self, delay: int) -> None:
        self.batches: list[bytes] = []
        self.c = GroupCoordinator(GroupConfig(group_initial_rebalance_delay_ms=delay),
                                  lambda p, recs: self.batches.append(build_batch(recs, 0)))
        self.now = 0
        self.members: dict[int, dict] = {}  # client slot -> {"id", "gen", "join", "sync"}
        self.max_gen = 0

    def apply(self, kind: str, arg: int) -> None:
        c, now = self.c, self.now
        slot = self.members.get(arg)
        if kind == "advance":
            self.now += arg
            c.poll(self.now)
        elif kind in ("join", "rejoin"):
            mid = slot["id"] if (kind == "rejoin" and slot) else ""
            p = c.join_group(now, "g", mid, None, f"c{arg}", "/h", 30_000, 10_000, "consumer", PROTOS,
                             require_known_member_id=True)
            if p.done and p.result.error == E.MEMBER_ID_REQUIRED:
                p = c.join_group(now, "g", p.result.member_id, None, f"c{arg}", "/h", 30_000, 10_000, "consumer",
                                 PROTOS, require_known_member_id=True)
            self.members[arg] = {"id": mid, "gen": -1, "join": p, "sync": None}
        elif slot is None:
            if kind == "simple_commit":
                res = c.commit_offsets(now, "g", "", None, -1, {("t", arg): OffsetAndMetadata(arg, commit_timestamp=now)})
                g = c.groups.get("g")
                assert res[("t", arg)] in (E.NONE, E.UNKNOWN_MEMBER_ID)
                assert res[("t", arg)] == E.NONE or (g is not None and not g.is_(GroupState.EMPTY))
            return
        else:
            jp = slot["join"]
            if jp is not None and jp.done:
                if jp.result.error == E.NONE:
                    slot["id"], slot["gen"] = jp.result.member_id, jp.result.generation_id
                slot["join"] = None
            if kind == "sync" and slot["gen"] >= 0:
                assignments = {}
                g = c.groups.get("g")
                if g is not None and g.leader_id == slot["id"]:
                    assignments = dict.fromkeys(g.members, b"x")
                slot["sync"] = c.sync_group(now, "g", slot["gen"], slot["id"], None, None, None, assignments)
            elif kind == "heartbeat":
                err = c.heartbeat(now, "g", slot["id"], None, slot["gen"])
                assert err in (E.NONE, E.REBALANCE_IN_PROGRESS, E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION)
            elif kind == "leave":
                c.leave_group(now, "g", [(slot["id"], None)])
                del self.members[arg]
            elif kind == "commit":
                res = c.commit_offsets(now, "g", slot["id"], None, slot["gen"],
                                       {("t", arg): OffsetAndMetadata(now, commit_timestamp=now)})
                assert res[("t", arg)] in (E.NONE, E.REBALANCE_IN_PROGRESS, E.UNKNOWN_MEMBER_ID,
                                           E.ILLEGAL_GENERATION)
        self.check()

    def check(self) -> None:
        g = self.c.groups.get("g")
        if g is None:
            return
        assert g.generation_id >= self.max_gen
        self.max_gen = g.generation_id
        if g.members:
            assert g.leader_id in g.members
            assert g.protocol_type == "consumer"
        if g.is_(GroupState.EMPTY):
            assert not g.members
        if g.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            assert g.members and g.protocol_name == "range"
            assert not any(m.is_awaiting_join for m in g.members.values())
        if not g.is_(GroupState.COMPLETING_REBALANCE):
            assert not any(m.is_awaiting_sync for m in g.members.values())
        assert self.c.next_deadline() is None or self.c.next_deadline() >= 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40), st.sampled_from([0, 3000]))
def test_random_operations_keep_invariants_and_reload(ops: list[tuple[str, int]], delay: int) -> None:
    h = Harness(delay)
    for kind, arg in ops:
        h.apply(kind, arg)
    # time passing with nobody heartbeating empties the group; every parked request is answered
    for _ in range(6):
        h.now += 31_000
        h.c.poll(h.now)
    g = h.c.groups.get("g")
    assert g is None or g.is_(GroupState.EMPTY)
    for slot in h.members.values():
        for p in (slot["join"], slot["sync"]):
            assert p is None or p.done
    # what was written reloads to the same committed offsets and generation
    loader = StateLoader()
    for b in h.batches:
        loader.feed((k, v) for _o, k, v in iter_records(b))
    groups = loader.build(h.now)
    if g is None:
        assert "g" not in groups or not groups["g"].offsets
    else:
        assert groups["g"].offsets == g.offsets
        assert groups["g"].generation_id == g.generation_id and groups["g"].state is GroupState.EMPTY
