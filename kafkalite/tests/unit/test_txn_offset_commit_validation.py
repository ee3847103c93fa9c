"""TxnOffsetCommit validation for every group type, on the pure coordinators (issue #30).

Kafka 4.x, ``OffsetMetadataManager.validateTransactionalOffsetCommit`` over ``Group.validateOffsetCommit(...,
isTransactional=true)``:

* an unknown group id: generation < 0 creates a simple (classic) group, otherwise ILLEGAL_GENERATION;
* a KIP-848 consumer group (``ConsumerGroup``): epoch < 0 commits to an empty group; no member id, no instance id
  and generation -1 skips the check; the member id must be a current member (UNKNOWN_MEMBER_ID) and the generation
  is its member epoch; a refused epoch is STALE_MEMBER_EPOCH inside the group, which this API answers as
  ILLEGAL_GENERATION; KIP-1251 (4.3) accepts an older epoch for partitions held since then;
* a classic group (``ClassicGroup``): the member (and a static member's instance id: FENCED_INSTANCE_ID) at the
  current generation; no member given is accepted in any state, and a rebalance in progress refuses nothing;
* a share group (``ShareGroup``): GROUP_ID_NOT_FOUND.

A refusal covers every partition of the request and leaves nothing pending.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import GroupState, OffsetAndMetadata
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import GroupConfig
from kafkalite.coordinator.consumer.coordinator import ConsumerConfig, ConsumerGroupCoordinator
from kafkalite.coordinator.consumer.model import ClassicMeta
from kafkalite_wire.errors import ErrorCode

PID = 7000


@dataclass
class Topic:
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False


class Groups:
    """The classic coordinator (which keeps every group's offsets) wired to a consumer group coordinator, as
    ``GroupService`` wires them, over one clock and a list of appended records."""

    def __init__(self) -> None:
        self.now = 1_000
        self.topics: dict[str, Topic] = {}
        self.log: list[tuple[bytes, bytes | None]] = []
        self.shares: set[str] = set()
        self.classic = GroupCoordinator(GroupConfig(), lambda p, recs: self.log.extend(recs))
        self.consumer = ConsumerGroupCoordinator(ConsumerConfig(session_timeout_ms=10_000),
                                                 lambda g, recs: self.log.extend(recs), lambda: self.topics)
        self.classic.consumer_txn_offset_error = self.consumer.txn_offset_commit_error
        self.classic.is_share_group = lambda gid: gid in self.shares

    def topic(self, name: str, n: int) -> uuid.UUID:
        self.topics[name] = Topic(uuid.uuid4(), n)
        self.now += 1_000
        return self.topics[name].topic_id

    def hb(self, member: str, epoch: int, owned: dict | None = None, topics: list[str] | None = None,
           instance: str | None = None, group: str = "g"):
        if epoch == 0 and owned is None:
            owned = {}
        r = self.consumer.heartbeat(self.now, group, member, epoch, instance, None, 30_000 if epoch == 0 else -1,
                                    topics, None, None, owned, version=1)
        return r

    def txn(self, member: str, epoch: int, parts: list[tuple[str, int]], instance: str | None = None,
            group: str = "g", pid: int = PID, offset: int = 5) -> set[int]:
        """The codes a TxnOffsetCommit of ``parts`` got (one code when the whole request had one answer)."""
        out = self.classic.txn_commit_offsets(self.now, group, pid, member, instance, epoch,
                                              {tp: OffsetAndMetadata(offset) for tp in parts})
        assert set(out) == set(parts)
        return set(out.values())

    def pending(self, group: str = "g", pid: int = PID) -> dict:
        g = self.classic.groups.get(group)
        return dict(g.pending_txn_offsets.get(pid, {})) if g is not None else {}


def consumer_group_of_two() -> tuple[Groups, uuid.UUID]:
    """Consumer group ``g`` on topic ``t`` (4 partitions): m1 and m2 reconciled at member epoch 2."""
    w = Groups()
    tid = w.topic("t", 4)
    w.hb("m1", 0, topics=["t"])
    w.hb("m2", 0, topics=["t"])
    g = w.consumer.groups["g"]
    target2 = g.target["m2"][tid]
    w.hb("m1", 1, owned={tid: {0, 1, 2, 3} - target2})
    w.hb("m2", 2, owned={})
    w.hb("m2", 2, owned={tid: set(g.members["m2"].assigned.get(tid, set()))})
    assert (g.members["m1"].member_epoch, g.members["m2"].member_epoch) == (2, 2)
    return w, tid


def owned_by(w: Groups, tid: uuid.UUID, member: str) -> list[tuple[str, int]]:
    return [("t", p) for p in sorted(w.consumer.groups["g"].members[member].assigned.get(tid, set()))]


# -- consumer groups (KIP-848) ----------------------------------------------------------------------------------
def test_a_current_member_at_its_epoch_commits_and_the_offsets_wait_for_the_marker() -> None:
    w, tid = consumer_group_of_two()
    mine = owned_by(w, tid, "m1")
    assert w.txn("m1", 2, mine) == {E.NONE}
    # kept with the group's offsets (a group without members or protocol here), pending until the marker
    assert set(w.pending()) == set(mine)
    assert not w.classic.groups["g"].members and w.classic.groups["g"].offsets == {}
    w.classic.complete_txn(w.now, PID, commit=True)
    assert {tp: om.offset for tp, om in w.classic.groups["g"].offsets.items()} == dict.fromkeys(mine, 5)
    # an aborted transaction leaves nothing
    assert w.txn("m2", 2, owned_by(w, tid, "m2"), pid=PID + 1, offset=9) == {E.NONE}
    w.classic.complete_txn(w.now, PID + 1, commit=False)
    assert {tp: om.offset for tp, om in w.classic.groups["g"].offsets.items()} == dict.fromkeys(mine, 5)


def test_an_unknown_member_is_unknown_member_id_and_nothing_is_created() -> None:
    w, tid = consumer_group_of_two()
    assert w.txn("nobody", 2, owned_by(w, tid, "m1")) == {ErrorCode.UNKNOWN_MEMBER_ID}
    assert "g" not in w.classic.groups   # no classic group appeared under the consumer group's id
    # a member id with generation -1 is still checked (it is given)
    assert w.txn("nobody", -1, [("t", 0)]) == {ErrorCode.UNKNOWN_MEMBER_ID}
    # an instance id with neither member id nor generation: the member "" is looked up, and is not there
    assert w.txn("", -1, [("t", 0)], instance="i-1") == {ErrorCode.UNKNOWN_MEMBER_ID}


def test_a_newer_epoch_is_illegal_generation_for_the_whole_request() -> None:
    w, tid = consumer_group_of_two()
    assert w.txn("m1", 3, owned_by(w, tid, "m1")) == {ErrorCode.ILLEGAL_GENERATION}
    assert w.pending() == {}


def test_an_older_epoch_commits_only_partitions_held_since_then() -> None:
    """KIP-1251 (Kafka 4.3): m1 has held its partitions since epoch 1; m2 got its own at epoch 2."""
    w, tid = consumer_group_of_two()
    m1, m2 = owned_by(w, tid, "m1"), owned_by(w, tid, "m2")
    assert w.txn("m1", 1, m1) == {E.NONE}
    # a partition it gave away at epoch 2 refuses the whole request (STALE_MEMBER_EPOCH -> ILLEGAL_GENERATION)
    assert w.txn("m1", 1, [*m1, m2[0]], pid=PID + 1) == {ErrorCode.ILLEGAL_GENERATION}
    assert w.pending(pid=PID + 1) == {}
    assert w.txn("m2", 1, m2, pid=PID + 2) == {ErrorCode.ILLEGAL_GENERATION}   # given to it at epoch 2


def test_no_member_id_and_generation_minus_one_skips_the_check() -> None:
    """A producer given no group metadata (or TxnOffsetCommit v0-v2) commits even while the group has members."""
    w, _tid = consumer_group_of_two()
    assert w.txn("", -1, [("t", 0), ("t", 3)]) == {E.NONE}
    # but -2 with no member id is not the "unknown generation": the member "" is looked up
    assert w.txn("", -2, [("t", 0)], pid=PID + 1) == {ErrorCode.UNKNOWN_MEMBER_ID}


def test_a_member_that_left_or_was_fenced_or_replaced_is_unknown() -> None:
    w, _tid = consumer_group_of_two()
    w.hb("m1", -1)                                         # m1 leaves
    assert w.txn("m1", 2, [("t", 0)]) == {ErrorCode.UNKNOWN_MEMBER_ID}
    w.now += 20_000                                        # m2's session expires: fenced
    w.consumer.poll(w.now)
    assert "m2" not in w.consumer.groups["g"].members
    assert w.txn("m2", 2, [("t", 0)]) == {ErrorCode.UNKNOWN_MEMBER_ID}
    # the group is empty now: an admin-style commit (epoch < 0) is accepted
    assert w.txn("", -1, [("t", 0)]) == {E.NONE}
    # a static member replaced under its instance id by a new member id: the old id is gone
    s = Groups()
    s.topic("t", 2)
    s.hb("a", 0, topics=["t"], instance="i1")
    s.hb("a", -2, instance="i1")                           # a static member's temporary leave
    assert s.txn("a", 1, [("t", 0)], instance="i1") == {ErrorCode.ILLEGAL_GENERATION}   # epoch -2 now
    s.hb("b", 0, topics=["t"], instance="i1")              # comes back as b
    assert s.txn("a", 1, [("t", 0)], instance="i1") == {ErrorCode.UNKNOWN_MEMBER_ID}
    epoch = s.consumer.groups["g"].members["b"].member_epoch
    assert s.txn("b", epoch, [("t", 0)], instance="i1") == {E.NONE}


def test_rebalance_mid_transaction() -> None:
    """A member keeps its epoch until it has revoked what it gives away: its open transaction commits at that
    epoch; once it revoked and moved on, the commit at the old epoch for the revoked partition is refused."""
    w = Groups()
    tid = w.topic("t", 4)
    w.hb("m1", 0, topics=["t"])
    assert w.txn("m1", 1, [("t", p) for p in range(4)]) == {E.NONE}   # the transaction opened at epoch 1
    w.hb("m2", 0, topics=["t"])                                         # m1 must give two partitions away
    w.hb("m1", 1, owned={tid: {0, 1, 2, 3}})                           # told to revoke two, still at epoch 1
    m1 = w.consumer.groups["g"].members["m1"]
    assert m1.member_epoch == 1 and len(m1.pending_revocation[tid]) == 2
    assert w.txn("m1", 1, [("t", p) for p in range(4)]) == {E.NONE}   # still its own until revoked: accepted
    w.hb("m1", 1, owned={tid: set(m1.assigned[tid])})                 # revoked: epoch 2
    assert m1.member_epoch == 2
    gone = sorted({0, 1, 2, 3} - m1.assigned[tid])
    assert w.txn("m1", 1, [("t", gone[0])], pid=PID + 1) == {ErrorCode.ILLEGAL_GENERATION}
    assert w.txn("m1", 2, [("t", p) for p in sorted(m1.assigned[tid])], pid=PID + 1) == {E.NONE}


def test_classic_protocol_member_of_a_consumer_group_commits_as_a_consumer_protocol_member() -> None:
    """Kafka 4.4's ConsumerGroup.validateOffsetCommit builds the same assignment-epoch validator for a
    classic-protocol member: its older generation commits the partitions it has held since then."""
    w, tid = consumer_group_of_two()
    for mid in ("m1", "m2"):
        w.consumer.groups["g"].members[mid].classic = ClassicMeta(10_000, [("range", b"")])
    m1, m2 = owned_by(w, tid, "m1"), owned_by(w, tid, "m2")
    assert w.txn("m1", 2, m1) == {E.NONE}
    assert w.txn("m1", 1, m1, pid=PID + 1) == {E.NONE}                              # held since epoch 1
    assert w.txn("m1", 1, [*m1, m2[0]], pid=PID + 2) == {ErrorCode.ILLEGAL_GENERATION}   # not its own
    assert w.txn("m2", 1, m2, pid=PID + 3) == {ErrorCode.ILLEGAL_GENERATION}        # given to it at epoch 2
    assert w.txn("m1", 3, m1, pid=PID + 4) == {ErrorCode.ILLEGAL_GENERATION}        # newer than its epoch


# -- classic groups ----------------------------------------------------------------------------------------------
def classic_stable(w: Groups, instance: str | None = None) -> str:
    c = w.classic
    p = c.join_group(0, "c", "", instance, "client", "/h", 30_000, 10_000, "consumer", [("range", b"")],
                     require_known_member_id=True)
    if instance is None:   # v4+: MEMBER_ID_REQUIRED first
        p = c.join_group(0, "c", p.result.member_id, None, "client", "/h", 30_000, 10_000, "consumer",
                         [("range", b"")], require_known_member_id=True)
    c.poll(0)
    mid = p.result.member_id
    assert c.sync_group(0, "c", 1, mid, instance, None, None, {mid: b""}).result.error == E.NONE
    return mid


def test_classic_group_rules() -> None:
    w = Groups()
    mid = classic_stable(w)
    assert w.txn(mid, 1, [("t", 0)], group="c") == {E.NONE}
    assert w.txn(mid, 2, [("t", 0)], group="c") == {ErrorCode.ILLEGAL_GENERATION}
    assert w.txn("other", 1, [("t", 0)], group="c") == {ErrorCode.UNKNOWN_MEMBER_ID}
    # unlike OffsetCommit: no member given is accepted on a live group
    assert w.txn("", -1, [("t", 1)], group="c", pid=PID + 1) == {E.NONE}
    # a rebalance in progress refuses nothing (OffsetCommit answers REBALANCE_IN_PROGRESS there)
    w.classic.join_group(0, "c", mid, None, "client", "/h", 30_000, 10_000, "consumer", [("range", b"")],
                         require_known_member_id=True)
    w.classic.poll(0)
    assert w.classic.groups["c"].state is GroupState.COMPLETING_REBALANCE
    assert w.txn(mid, 2, [("t", 0)], group="c", pid=PID + 2) == {E.NONE}


def test_classic_static_member_replaced_is_fenced_instance_id() -> None:
    w = Groups()
    old = classic_stable(w, instance="i-1")
    again = w.classic.join_group(100, "c", "", "i-1", "client", "/h", 30_000, 10_000, "consumer",
                                 [("range", b"")], require_known_member_id=True, support_skip_assignment=True)
    new = again.result.member_id
    assert new != old
    assert w.txn(old, 1, [("t", 0)], instance="i-1", group="c") == {ErrorCode.FENCED_INSTANCE_ID}
    assert w.txn(new, 1, [("t", 0)], instance="i-1", group="c") == {E.NONE}
    assert w.txn(new, 1, [("t", 0)], instance="i-2", group="c") == {ErrorCode.UNKNOWN_MEMBER_ID}


def test_unknown_group_id() -> None:
    w = Groups()
    assert w.txn("m", 3, [("t", 0)], group="new") == {ErrorCode.ILLEGAL_GENERATION}
    assert "new" not in w.classic.groups
    assert w.txn("", -1, [("t", 0)], group="new") == {E.NONE}     # a simple group
    assert w.classic.groups["new"].state is GroupState.EMPTY and set(w.pending("new")) == {("t", 0)}


# -- other group types and coordinator states ------------------------------------------------------------------
def test_a_share_groups_id_is_group_id_not_found() -> None:
    w = Groups()
    w.shares.add("s")
    assert w.txn("", -1, [("t", 0)], group="s") == {ErrorCode.GROUP_ID_NOT_FOUND}
    assert w.txn("m", 1, [("t", 0)], group="s") == {ErrorCode.GROUP_ID_NOT_FOUND}
    assert "s" not in w.classic.groups


def test_loading_and_not_coordinator_come_first() -> None:
    w, tid = consumer_group_of_two()
    w.classic.loading = True
    assert w.txn("m1", 2, [("t", 0)]) == {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
    w.classic.loading = False
    w.classic.owns = lambda gid: False   # another broker leads the group's __consumer_offsets partition
    assert w.txn("m1", 2, [("t", 0)]) == {ErrorCode.NOT_COORDINATOR}
    w.classic.owns = None
    assert w.txn("m1", 2, owned_by(w, tid, "m1")) == {E.NONE}


def test_the_checks_hold_after_the_consumer_group_is_reloaded() -> None:
    """A coordinator move rebuilds the group from its records; the new coordinator answers the same."""
    w, tid = consumer_group_of_two()
    again = ConsumerGroupCoordinator(ConsumerConfig(session_timeout_ms=10_000), lambda g, recs: None,
                                     lambda: w.topics)
    again.load(list(w.log), w.now)
    w.consumer = again
    w.classic = GroupCoordinator(GroupConfig(), lambda p, recs: None)
    w.classic.consumer_txn_offset_error = again.txn_offset_commit_error
    m1 = owned_by(w, tid, "m1")
    assert w.txn("m1", 2, m1) == {E.NONE}
    assert w.txn("m1", 1, m1, pid=PID + 1) == {E.NONE}                      # assignment epochs came back too
    assert w.txn("m1", 3, m1, pid=PID + 2) == {ErrorCode.ILLEGAL_GENERATION}
    assert w.txn("zz", 2, m1, pid=PID + 3) == {ErrorCode.UNKNOWN_MEMBER_ID}
