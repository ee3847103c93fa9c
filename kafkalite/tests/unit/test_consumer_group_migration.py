"""Online conversion between classic and consumer groups (kafkalite/coordinator/consumer/migration.py, classic.py):
the classic coordinator and the consumer coordinator side by side over one record log, as GroupService runs them."""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import GroupState
from kafkalite.coordinator.classic.records import encode_group_key
from kafkalite.coordinator.consumer import records as R
from kafkalite.coordinator.consumer.classic_members import (
    encode_assignment,
    parse_assignment,
    parse_subscription,
)
from kafkalite.coordinator.consumer.coordinator import ConsumerConfig, ConsumerGroupCoordinator
from kafkalite.coordinator.consumer.migration import ClassicBridge
from kafkalite.coordinator.consumer.model import MemberState
from kafkalite_wire.errors import ErrorCode

NONE = 0
REBALANCE = int(ErrorCode.REBALANCE_IN_PROGRESS)
ILLEGAL_GENERATION = int(ErrorCode.ILLEGAL_GENERATION)
GROUP_ID_NOT_FOUND = int(ErrorCode.GROUP_ID_NOT_FOUND)
UNKNOWN_MEMBER_ID = int(ErrorCode.UNKNOWN_MEMBER_ID)
INCONSISTENT = int(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)


@dataclass
class Topic:
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False


def subscription(topics: list[str], owned: dict[str, list[int]] | None = None, version: int = 1) -> bytes:
    """ConsumerProtocolSubscription as the Java client writes it (v0: no owned partitions)."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1)
    if version >= 1:
        items = sorted((owned or {}).items())
        out += struct.pack(">i", len(items))
        for t, ps in items:
            out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps))
            out += b"".join(struct.pack(">i", p) for p in ps)
    return out


class World:
    def __init__(self, policy: str = "bidirectional") -> None:
        self.topics: dict[str, Topic] = {"t": Topic(uuid.uuid4(), 4)}
        self.log: list[tuple[bytes, bytes | None]] = []
        self.now = 10_000
        self.classic = GroupCoordinator(append=lambda p, recs: self.log.extend(recs))
        self.consumer = ConsumerGroupCoordinator(
            ConsumerConfig(session_timeout_ms=10_000, migration_policy=policy),
            lambda g, recs: self.log.extend(recs), lambda: self.topics,
            lambda g: g in self.classic.groups and bool(self.classic.groups[g].members))
        self.consumer.classic_side = ClassicBridge(self.classic)

    @property
    def tid(self) -> uuid.UUID:
        return self.topics["t"].topic_id

    def classic_group(self) -> list[str]:
        """A Stable classic group "g" of two members splitting topic t's partitions (0, 2 and 1, 3)."""
        def join(mid: str):  # type: ignore[no-untyped-def]
            return self.classic.join_group(self.now, "g", mid, None, "c", "/h", 30_000, 10_000, "consumer",
                                           [("range", subscription(["t"]))], require_known_member_id=False)
        p = join("")
        self.now += 1
        self.classic.poll(self.now)         # generation 1 alone (no initial rebalance delay here)
        first = p.result.member_id   # type: ignore[union-attr]
        second = join("")                  # a rebalance: waits for the first to rejoin
        join(first)
        ids = [first, second.result.member_id]   # type: ignore[union-attr]
        parts = [{0, 2}, {1, 3}]
        gen = self.classic.groups["g"].generation_id
        leader = self.classic.groups["g"].leader_id
        for mid in ids:
            assignments = {m: encode_assignment(1, {"t": p}) for m, p in zip(ids, parts, strict=True)} \
                if mid == leader else {}
            self.classic.sync_group(self.now, "g", gen, mid, None, "consumer", "range", assignments)
        assert self.classic.groups["g"].is_(GroupState.STABLE)
        return ids

    def hb(self, member: str, epoch: int, owned: dict | None = None):  # type: ignore[no-untyped-def]
        return self.consumer.heartbeat(self.now, "g", member, epoch, None, None, 30_000 if epoch == 0 else -1,
                                       ["t"] if epoch == 0 else None, None, None,
                                       {} if epoch == 0 and owned is None else owned, version=1)

    def join(self, member: str, owned: list[int] | None = None, protocols: list[str] | None = None):  # type: ignore[no-untyped-def]
        return self.consumer.classic_join(
            self.now, "g", member, None, "cl", "/h", 30_000, 10_000, "consumer",
            [(p, subscription(["t"], {"t": owned or []})) for p in protocols or ["range"]], True)


def test_upgrade_converts_a_live_classic_group_and_keeps_its_assignment() -> None:
    w = World()
    a, b = w.classic_group()
    gen = w.classic.groups["g"].generation_id
    w.log.clear()
    r = w.hb("n", 0)
    assert r.error_code == NONE and r.member_epoch == gen + 1 and r.assignment == {}   # all partitions still held
    g = w.consumer.groups["g"]
    assert {m.member_id for m in g.classic_members()} == {a, b}
    assert g.members[a].member_epoch == gen and g.members[a].assigned == {w.tid: {0, 2}}
    assert g.group_epoch == gen + 1
    # the classic shell stays (it holds the offsets), emptied; its GroupMetadata is tombstoned first
    assert not w.classic.groups["g"].members and w.log[0] == (encode_group_key("g"), None)
    types = [R.record_type(k) for k, _ in w.log[1:]]
    assert {R.MEMBER_METADATA, R.GROUP_METADATA, R.TARGET_MEMBER, R.TARGET_METADATA,
            R.CURRENT_ASSIGNMENT} <= set(types)
    # the classic members are told to rejoin, and reconcile through JoinGroup / SyncGroup
    assert w.consumer.classic_heartbeat(w.now, "g", a, None, gen) == REBALANCE
    assert w.consumer.classic_heartbeat(w.now, "g", a, None, gen + 5) == ILLEGAL_GENERATION
    j = w.join(a, owned=[0, 2])                 # still owns its partitions: must revoke what moves to n
    m = g.members[a]
    if m.state == MemberState.UNREVOKED_PARTITIONS:
        assert j.generation_id == gen
        s = w.consumer.classic_sync(w.now, "g", gen, a, None, "consumer", "range")
        assert s.error == NONE and parse_assignment(s.assignment) == {"t": m.assigned[w.tid]}
        j = w.join(a, owned=sorted(m.assigned[w.tid]))
    assert j.error == NONE and j.generation_id == gen + 1 and j.protocol_name == "range" and j.leader_id == ""
    s = w.consumer.classic_sync(w.now, "g", gen + 1, a, None, "consumer", "range")
    assert s.error == NONE and parse_assignment(s.assignment) == {"t": g.members[a].assigned[w.tid]}
    assert w.consumer.classic_sync(w.now, "g", gen + 1, a, None, "consumer", "roundrobin").error == INCONSISTENT


def test_upgrade_refused_by_policy_or_protocol() -> None:
    for policy in ("disabled", "downgrade"):
        w = World(policy)
        w.classic_group()
        r = w.hb("n", 0)
        assert r.error_code == GROUP_ID_NOT_FOUND and "not a consumer group" in (r.error_message or "")
        assert len(w.classic.groups["g"].members) == 2 and "g" not in w.consumer.groups
    w = World()
    w.classic.join_group(w.now, "g", "", None, "c", "/h", 30_000, 10_000, "connect", [("x", b"")],
                         require_known_member_id=False)
    assert w.hb("n", 0).error_code == GROUP_ID_NOT_FOUND


def test_upgrade_answers_a_rebalance_in_progress() -> None:
    w = World()
    a, b = w.classic_group()
    gen = w.classic.groups["g"].generation_id
    p = w.classic.join_group(w.now, "g", a, None, "c", "/h", 30_000, 10_000, "consumer",
                             [("range", subscription(["t"], {"t": [0, 2]}))], require_known_member_id=False)
    assert not p.done and w.classic.groups["g"].is_(GroupState.PREPARING_REBALANCE)
    assert w.hb("n", 0).error_code == NONE
    assert p.done and p.result.error == REBALANCE   # type: ignore[union-attr]
    assert w.consumer.groups["g"].members[b].member_epoch == gen


def test_classic_join_rules() -> None:
    w = World()
    w.classic_group()
    w.hb("n", 0)
    r = w.consumer.classic_join(w.now, "g", "", None, "cl", "/h", 30_000, 10_000, "consumer",
                                [("range", subscription(["t"]))], True)
    assert r.error == int(ErrorCode.MEMBER_ID_REQUIRED) and r.member_id
    assert w.join(r.member_id, protocols=["roundrobin"]).error == INCONSISTENT   # not supported by every classic member
    r2 = w.join(r.member_id)
    assert r2.error == NONE and w.consumer.groups["g"].members[r.member_id].classic is not None
    assert w.consumer.classic_sync(w.now, "g", 0, "n", None, None, None).error == UNKNOWN_MEMBER_ID  # not classic
    # a classic member that does not rejoin within its rebalance timeout after being told to is fenced
    g = w.consumer.groups["g"]
    assert w.consumer.classic_sync(w.now, "g", r2.generation_id, r.member_id, None, None, None).error in (
        NONE, REBALANCE)
    w.hb("o", 0)   # a new member: the group epoch moves past the classic member's
    assert w.consumer.classic_heartbeat(w.now, "g", r.member_id, None, r2.generation_id) == REBALANCE
    w.now += 31_000
    for m in g.members.values():
        m.session_deadline = w.now + 60_000   # every session alive: only the join timer fires
    w.consumer.poll(w.now)
    assert r.member_id not in g.members and "g" in w.consumer.groups


def test_classic_leave_and_offset_commit_validation() -> None:
    w = World()
    a, _b = w.classic_group()
    gen = w.classic.groups["g"].generation_id
    w.hb("n", 0)
    c = w.consumer
    assert c.validate_offset_commit("g", a, gen, 2) == NONE                # classic members: any version
    assert c.validate_offset_commit("g", a, gen + 7, 8) == ILLEGAL_GENERATION
    assert c.validate_offset_commit("g", "n", 99, 9) == int(ErrorCode.STALE_MEMBER_EPOCH)
    epoch = c.groups["g"].group_epoch
    assert c.classic_leave(w.now, "g", [(a, None), ("nobody", None)]) == (NONE, [NONE, UNKNOWN_MEMBER_ID])
    assert a not in c.groups["g"].members and c.groups["g"].group_epoch == epoch + 1


def test_downgrade_when_the_last_consumer_protocol_member_leaves() -> None:
    w = World()
    a, b = w.classic_group()
    r = w.hb("n", 0)
    epoch = w.consumer.groups["g"].group_epoch
    target_a = w.consumer.groups["g"].target[a]
    w.log.clear()
    assert w.hb("n", -1).member_epoch == -1
    assert "g" not in w.consumer.groups
    cg = w.classic.groups["g"]
    assert cg.generation_id == epoch and set(cg.members) == {a, b}
    assert cg.is_(GroupState.PREPARING_REBALANCE)      # the members rejoin as a classic group
    assert parse_assignment(cg.members[a].assignment) == {"t": target_a[w.tid]}
    tombstoned = {R.record_type(k) for k, v in w.log if v is None}
    assert {R.CURRENT_ASSIGNMENT, R.TARGET_MEMBER, R.TARGET_METADATA, R.MEMBER_METADATA, R.PARTITION_METADATA,
            R.GROUP_METADATA} <= tombstoned
    assert (encode_group_key("g"), None) not in w.log and any(k == encode_group_key("g") for k, _ in w.log)
    assert r.error_code == NONE


def test_no_downgrade_when_disabled_or_consumer_members_remain() -> None:
    w = World("upgrade")
    w.classic_group()
    w.hb("n", 0)
    w.hb("n", -1)
    assert "g" in w.consumer.groups and len(w.consumer.groups["g"].members) == 2
    w = World()
    w.classic_group()
    w.hb("n", 0)
    w.hb("o", 0)
    w.hb("n", -1)
    assert "g" in w.consumer.groups
    # fenced by its session timeout: the same conversion
    w.now += 11_000
    for m in w.consumer.groups["g"].classic_members():
        m.session_deadline = w.now + 60_000
    w.consumer.poll(w.now)
    assert "g" not in w.consumer.groups and len(w.classic.groups["g"].members) == 2


def test_classic_member_metadata_survives_a_reload() -> None:
    w = World()
    a, _b = w.classic_group()
    w.hb("n", 0)
    again = ConsumerGroupCoordinator(ConsumerConfig(), lambda g, recs: None, lambda: w.topics)
    again.load([(k, v) for k, v in w.log if R.record_type(k) in R.TYPES], w.now)
    m = again.groups["g"].members[a]
    assert m.classic is not None and m.classic.session_timeout_ms == 10_000
    assert m.classic.protocols[0][0] == "range" and parse_subscription(m.classic.protocols[0][1]).topics == ["t"]
    assert again.groups["g"].members["n"].classic is None


def test_classic_static_member_replacing_the_last_consumer_member_downgrades() -> None:
    """validateOnlineDowngradeWithReplacedMemberId: the classic static member takes over the consumer-protocol
    member's assignment and the group becomes classic at once, Stable, without a rebalance."""
    w = World()
    a, b = w.classic_group()
    r = w.consumer.heartbeat(w.now, "g", "n", 0, "i1", None, 30_000, ["t"], None, None, {}, version=1)
    assert r.error_code == NONE
    target_n = w.consumer.groups["g"].target["n"]
    j = w.consumer.classic_join(w.now, "g", "", "i1", "cl", "/h", 30_000, 10_000, "consumer",
                                [("range", subscription(["t"]))], True)
    assert j.error == NONE and j.member_id not in ("", "n")
    assert "g" not in w.consumer.groups
    cg = w.classic.groups["g"]
    assert set(cg.members) == {a, b, j.member_id} and cg.is_(GroupState.STABLE)
    assert cg.current_static_member_id("i1") == j.member_id
    got = parse_assignment(cg.members[j.member_id].assignment)
    assert got == ({"t": target_n[w.tid]} if target_n.get(w.tid) else {})
