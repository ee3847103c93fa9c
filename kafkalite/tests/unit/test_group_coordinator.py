"""The pure classic-group state machine, driven with explicit ``now_ms`` values."""
from __future__ import annotations

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import GroupState, OffsetAndMetadata
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import GroupConfig

S = GroupState
PROTOS = [("range", b"r-meta"), ("roundrobin", b"rr-meta")]


class Log:
    def __init__(self) -> None:
        self.appends: list[tuple[int, list[tuple[bytes, bytes | None]]]] = []

    def __call__(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> None:
        self.appends.append((partition, records))


def make(**cfg: int) -> tuple[GroupCoordinator, Log]:
    log = Log()
    return GroupCoordinator(GroupConfig(**cfg), log), log


def join(c: GroupCoordinator, now: int, member: str = "", gid: str = "g", protos=PROTOS, instance=None,
         session: int = 10_000, rebalance: int = 30_000, v4: bool = True, skip: bool = False):
    return c.join_group(now, gid, member, instance, "client", "/127.0.0.1", rebalance, session, "consumer",
                        protos, require_known_member_id=v4, support_skip_assignment=skip)


def join_new(c: GroupCoordinator, now: int, **kw):
    """v4+ two-step join: MEMBER_ID_REQUIRED then the real join."""
    first = join(c, now, **kw)
    assert first.done and first.result.error == E.MEMBER_ID_REQUIRED
    assert first.result.member_id.startswith("client-")
    return join(c, now, member=first.result.member_id, **kw)


def stable_single(c: GroupCoordinator, now: int = 0) -> str:
    p = join_new(c, now)
    c.poll(now)
    assert p.done and p.result.error == E.NONE
    mid = p.result.member_id
    s = c.sync_group(now, "g", p.result.generation_id, mid, None, "consumer", "range", {mid: b"A"})
    assert s.done and s.result.error == E.NONE and s.result.assignment == b"A"
    return mid


def test_single_member_join_sync_heartbeat() -> None:
    c, log = make()
    p = join_new(c, 0)
    assert not p.done  # the initial delayed join completes on the timer (delay 0)
    c.poll(0)
    r = p.result
    assert r.error == E.NONE and r.generation_id == 1 and r.leader_id == r.member_id
    assert r.protocol_name == "range" and r.members == [(r.member_id, None, b"r-meta")]
    assert c.groups["g"].state is S.COMPLETING_REBALANCE
    s = c.sync_group(1, "g", 1, r.member_id, None, None, None, {r.member_id: b"assign"})
    assert s.result.error == E.NONE and s.result.assignment == b"assign"
    assert c.groups["g"].state is S.STABLE
    assert len(log.appends) == 1  # the GroupMetadata record written on sync
    assert c.heartbeat(2, "g", r.member_id, None, 1) == E.NONE
    assert c.heartbeat(2, "g", r.member_id, None, 0) == E.ILLEGAL_GENERATION
    assert c.heartbeat(2, "g", "nope", None, 1) == E.UNKNOWN_MEMBER_ID


def test_v3_join_without_member_id_required() -> None:
    c, _ = make()
    p = join(c, 0, v4=False)
    c.poll(0)
    assert p.result.error == E.NONE and p.result.member_id


def test_initial_rebalance_delay_extends_while_members_arrive() -> None:
    c, _ = make(group_initial_rebalance_delay_ms=3000)
    p1 = join_new(c, 0)
    c.poll(2999)
    assert not p1.done
    p2 = join_new(c, 2000)  # new member during the delay: one more delay period
    c.poll(3000)
    assert not p1.done
    assert c.next_deadline() == 6000
    c.poll(6000)
    assert p1.done and p2.done
    assert p1.result.generation_id == p2.result.generation_id == 1
    leader = p1.result.leader_id
    assert {p1.result.member_id, p2.result.member_id} == {m for m, _, _ in
                                                         (p1.result.members or p2.result.members)}
    assert leader in (p1.result.member_id, p2.result.member_id)


def test_second_member_triggers_rebalance_and_completes_when_all_rejoin() -> None:
    c, _ = make()
    a = stable_single(c)
    pb = join_new(c, 100)
    assert c.groups["g"].state is S.PREPARING_REBALANCE and not pb.done
    assert c.heartbeat(150, "g", a, None, 1) == E.REBALANCE_IN_PROGRESS
    # commits from the current generation are still accepted while the rebalance starts
    res = c.commit_offsets(160, "g", a, None, 1, {("t", 0): OffsetAndMetadata(5, commit_timestamp=160)})
    assert res == {("t", 0): E.NONE}
    pa = join(c, 200, member=a)
    assert pa.done and pb.done
    assert pa.result.generation_id == 2 and pa.result.leader_id == a
    assert len(pa.result.members) == 2 and pb.result.members == []
    # CompletingRebalance: commits are refused until SyncGroup finishes
    res = c.commit_offsets(210, "g", a, None, 2, {("t", 0): OffsetAndMetadata(6)})
    assert res == {("t", 0): E.REBALANCE_IN_PROGRESS}
    assert c.heartbeat(210, "g", a, None, 2) == E.NONE
    sb = c.sync_group(220, "g", 2, pb.result.member_id, None, None, None, {})
    assert not sb.done
    sa = c.sync_group(230, "g", 2, a, None, None, None, {a: b"x", pb.result.member_id: b"y"})
    assert sa.result.assignment == b"x" and sb.result.assignment == b"y"
    assert c.groups["g"].state is S.STABLE


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    c, _ = make()
    a = stable_single(c)
    pb = join_new(c, 1000)
    assert c.next_deadline() is not None
    c.poll(1000 + 30_000)  # a never rejoined within its rebalance timeout
    assert pb.done and pb.result.error == E.NONE and pb.result.generation_id == 2
    assert a not in c.groups["g"].members
    assert pb.result.leader_id == pb.result.member_id


def test_session_expiry_removes_member_and_group_becomes_empty() -> None:
    c, log = make()
    a = stable_single(c)
    assert c.heartbeat(5000, "g", a, None, 1) == E.NONE
    c.poll(14_999)
    assert a in c.groups["g"].members
    c.poll(15_000)
    g = c.groups["g"]
    assert g.state is S.EMPTY and not g.members and g.generation_id == 2
    assert len(log.appends) == 2  # the empty-group metadata record


def test_leave_group_and_batched_leave() -> None:
    c, _ = make()
    a = stable_single(c)
    err, per = c.leave_group(10, "g", [(a, None), ("ghost", None)])
    assert err == E.NONE and per == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert c.groups["g"].state is S.EMPTY
    assert c.leave_group(10, "missing", [("x", None)]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])


def test_pending_member_blocks_join_until_it_expires() -> None:
    c, _ = make()
    a = stable_single(c)
    first = join(c, 100)  # MEMBER_ID_REQUIRED, never comes back
    assert first.result.error == E.MEMBER_ID_REQUIRED
    pa = join(c, 200, member=a)
    assert not pa.done  # nothing started yet? the group is Stable and a is leader -> rebalance
    assert c.groups["g"].state is S.PREPARING_REBALANCE
    c.poll(100 + 10_000)  # pending member's session timeout
    assert pa.done and pa.result.error == E.NONE and pa.result.generation_id == 2


def test_sync_errors() -> None:
    c, _ = make()
    a = stable_single(c)
    assert c.sync_group(1, "g", 7, a, None, None, None, {}).result.error == E.ILLEGAL_GENERATION
    assert c.sync_group(1, "g", 1, "x", None, None, None, {}).result.error == E.UNKNOWN_MEMBER_ID
    assert c.sync_group(1, "g", 1, a, None, "other", None, {}).result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert c.sync_group(1, "nope", 1, a, None, None, None, {}).result.error == E.UNKNOWN_MEMBER_ID
    assert c.sync_group(1, "g", 1, a, None, None, None, {}).result.assignment == b"A"  # Stable: current


def test_pending_sync_expiry_removes_silent_members() -> None:
    c, _ = make()
    a = stable_single(c)
    pb = join_new(c, 10, session=60_000)  # outlives the sync deadline
    join(c, 20, member=a)
    assert pb.done
    c.sync_group(30, "g", 2, a, None, None, None, {})  # leader syncs, b never does
    # group went Stable with the leader's (empty) assignment; b is still pending sync
    for t in (9000, 18_000, 27_000):
        assert c.heartbeat(t, "g", a, None, 2) == E.NONE
    c.poll(20 + 30_000)
    g = c.groups["g"]
    assert pb.result.member_id not in g.members
    assert g.state is S.PREPARING_REBALANCE


def test_protocol_vote_and_inconsistent_protocol() -> None:
    c, _ = make()
    p1 = join_new(c, 0, protos=[("cooperative-sticky", b"c"), ("range", b"r")])
    p2 = join_new(c, 0, protos=[("range", b"r"), ("cooperative-sticky", b"c")])
    p3 = join_new(c, 0, protos=[("cooperative-sticky", b"c")])
    c.poll(0)
    # first member alone formed generation 1; later joins rebalanced
    for p in (p1, p2, p3):
        if not p.done:
            c.poll(100_000)
    bad = join(c, 0, protos=[("roundrobin", b"x")])
    assert bad.result.error == E.INCONSISTENT_GROUP_PROTOCOL
    g = c.groups["g"]
    assert g.select_protocol() == "cooperative-sticky"


def test_invalid_session_timeout_and_group_id() -> None:
    c, _ = make()
    assert join(c, 0, session=10).result.error == E.INVALID_SESSION_TIMEOUT
    assert join(c, 0, gid="").result.error == E.INVALID_GROUP_ID
    assert join(c, 0, member="unknown").result.error == E.UNKNOWN_MEMBER_ID
    assert "g" not in c.groups


def test_static_member_rejoin_keeps_generation_and_fences_old_id() -> None:
    c, _ = make()
    p = join(c, 0, instance="i-1")
    c.poll(0)
    old = p.result.member_id
    assert old.startswith("i-1-")
    c.sync_group(0, "g", 1, old, "i-1", None, None, {old: b"A"})
    again = join(c, 100, instance="i-1", skip=True)  # restart: empty member id, same instance
    r = again.result
    assert r.error == E.NONE and r.generation_id == 1 and r.member_id != old
    assert r.skip_assignment and r.leader_id == r.member_id
    assert c.heartbeat(150, "g", old, "i-1", 1) == E.FENCED_INSTANCE_ID
    assert c.heartbeat(150, "g", r.member_id, "i-1", 1) == E.NONE
    s = c.sync_group(150, "g", 1, r.member_id, "i-1", None, None, {})
    assert s.result.assignment == b"A"
    _err, per = c.leave_group(200, "g", [("", "i-1")])
    assert per == [E.NONE] and c.groups["g"].state is S.EMPTY


def test_offsets_simple_commit_fetch_and_validation() -> None:
    c, _log = make()
    om = OffsetAndMetadata(42, 3, "meta", 1000)
    assert c.commit_offsets(0, "simple", "", None, -1, {("t", 0): om}) == {("t", 0): E.NONE}
    err, rows = c.fetch_offsets(0, "simple", [("t", 0), ("t", 1)])
    assert err == E.NONE
    assert rows[0] == ("t", 0, om, E.NONE) and rows[1] == ("t", 1, None, E.NONE)
    assert c.fetch_offsets(0, "simple", None)[1] == [("t", 0, om, E.NONE)]
    assert c.fetch_offsets(0, "none", [("t", 0)])[1] == [("t", 0, None, E.NONE)]
    assert c.commit_offsets(0, "other", "m", None, 3, {("t", 0): om}) == {("t", 0): E.ILLEGAL_GENERATION}
    big = OffsetAndMetadata(1, metadata="x" * 5000)
    assert c.commit_offsets(0, "simple", "", None, -1, {("t", 1): big}) == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    # a live group refuses simple commits
    stable_single(c)
    assert c.commit_offsets(0, "g", "", None, -1, {("t", 0): om}) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    lst = c.list_groups()[1]
    assert {x["group_id"] for x in lst} == {"simple", "g"}
    assert c.list_groups(states=["stable"])[1][0]["group_id"] == "g"
    assert c.list_groups(types=["consumer"])[1] == []


def test_delete_groups_and_offsets() -> None:
    c, log = make()
    mid = stable_single(c)
    c.commit_offsets(0, "g", mid, None, 1, {("t", 0): OffsetAndMetadata(1), ("u", 0): OffsetAndMetadata(2)})
    assert c.delete_groups(0, ["g", "nope"]) == {"g": E.NON_EMPTY_GROUP, "nope": E.GROUP_ID_NOT_FOUND}
    # u is not subscribed (subscription metadata is not a consumer subscription: unknown -> refuse)
    c.leave_group(0, "g", [(mid, None)])
    err, per = c.delete_offsets(0, "g", [("t", 0)])
    assert err == E.NONE and per == {("t", 0): E.NONE}
    n = len(log.appends)
    assert c.delete_groups(0, ["g"]) == {"g": E.NONE}
    assert "g" not in c.groups
    keys_values = log.appends[n][1]
    assert all(v is None for _, v in keys_values) and len(keys_values) == 2  # offset + group tombstones
    assert c.describe_group("g") == (E.NONE, None)


def test_offset_retention_after_group_empty() -> None:
    c, _log = make(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    c.commit_offsets(0, "s", "", None, -1, {("t", 0): OffsetAndMetadata(1, commit_timestamp=0)})
    c.poll(0)
    c.poll(30_000)
    assert ("t", 0) in c.groups["s"].offsets
    c.poll(61_000)
    assert "s" not in c.groups


def test_loading_answers() -> None:
    c, _ = make()
    c.loading = True
    assert join(c, 0).result.error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert c.sync_group(0, "g", 1, "m", None, None, None, {}).result.error == E.REBALANCE_IN_PROGRESS
    assert c.heartbeat(0, "g", "m", None, 1) == E.NONE
    assert c.commit_offsets(0, "g", "", None, -1, {("t", 0): OffsetAndMetadata(1)}) == {
        ("t", 0): E.COORDINATOR_LOAD_IN_PROGRESS}
    assert c.list_groups()[0] == E.COORDINATOR_LOAD_IN_PROGRESS


def test_deleted_topic_offsets_are_removed() -> None:
    c, log = make()
    c.commit_offsets(0, "s", "", None, -1, {("gone", 0): OffsetAndMetadata(1), ("kept", 0): OffsetAndMetadata(2)})
    assert c.remove_topic_offsets(0, {"gone"}) == 1
    assert list(c.groups["s"].offsets) == [("kept", 0)]
    assert log.appends[-1][1][0][1] is None  # tombstone
    c.remove_topic_offsets(0, {"kept"})
    assert "s" not in c.groups  # an Empty group without offsets is gone


def test_config_from_broker_properties() -> None:
    from kafkalite.config.broker import BrokerConfig

    cfg = GroupConfig.from_mapping(BrokerConfig({"group.initial.rebalance.delay.ms": "3000",
                                                 "offsets.topic.num.partitions": "7", "group.max.size": "2"}))
    assert cfg.group_initial_rebalance_delay_ms == 3000 and cfg.offsets_topic_num_partitions == 7
    assert cfg.group_max_size == 2 and cfg.group_min_session_timeout_ms == 6000


def test_group_max_size() -> None:
    c, _ = make(group_max_size=1)
    stable_single(c)
    p = join(c, 10, v4=False)
    assert p.result.error == E.GROUP_MAX_SIZE_REACHED


def _subscription(*topics: str) -> bytes:
    import struct

    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def test_retention_of_unsubscribed_topics_in_a_stable_group() -> None:
    c, _ = make(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    p = join(c, 0, v4=False, protos=[("range", _subscription("sub"))])
    c.poll(0)
    mid = p.result.member_id
    c.sync_group(0, "g", 1, mid, None, None, None, {})
    assert c.groups["g"].subscribed_topics == {"sub"}
    c.commit_offsets(0, "g", mid, None, 1, {("sub", 0): OffsetAndMetadata(1, commit_timestamp=0),
                                            ("old", 0): OffsetAndMetadata(2, commit_timestamp=0)})
    for t in range(5_000, 70_000, 5_000):
        assert c.heartbeat(t, "g", mid, None, 1) == E.NONE
    # offsets of a topic the group still reads are kept; the others expire a retention after commit
    assert set(c.groups["g"].offsets) == {("sub", 0)}
    # OffsetDelete refuses subscribed topics of a live consumer group
    err, per = c.delete_offsets(70_000, "g", [("sub", 0)])
    assert err == E.NONE and per == {("sub", 0): E.GROUP_SUBSCRIBED_TO_TOPIC}
