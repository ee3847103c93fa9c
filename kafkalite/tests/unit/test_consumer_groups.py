"""KIP-848 consumer groups, the pure coordinator (kafkalite/coordinator/consumer/): assignors, reconciliation with
revocation before reassignment, epochs and their errors, static membership, timeouts, regex subscriptions, the
``__consumer_offsets`` records and reloading them."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from kafkalite.coordinator.consumer import records as R
from kafkalite.coordinator.consumer.assignors import range_assign, uniform_assign
from kafkalite.coordinator.consumer.coordinator import ConsumerConfig, ConsumerGroupCoordinator
from kafkalite.coordinator.consumer.model import ClassicMeta
from kafkalite.coordinator.consumer.regex import RegexError, compile_re2
from kafkalite_wire.errors import ErrorCode


@dataclass
class Topic:
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False


class World:
    """Topics, a log of appended records, a clock and a coordinator over them."""

    def __init__(self, **cfg: object) -> None:
        self.topics: dict[str, Topic] = {}
        self.log: list[tuple[bytes, bytes | None]] = []
        self.now = 1_000
        self.coord = self.make()
        self.cfg = cfg

    def make(self) -> ConsumerGroupCoordinator:
        return ConsumerGroupCoordinator(ConsumerConfig(session_timeout_ms=10_000), lambda g, recs: self.log.extend(recs),
                                        lambda: self.topics)

    def topic(self, name: str, n: int) -> uuid.UUID:
        self.topics[name] = Topic(uuid.uuid4(), n)
        self.now += 1_000   # past the metadata refresh interval
        return self.topics[name].topic_id

    def hb(self, member: str, epoch: int, owned: dict | None = None, topics: list[str] | None = None,
           regex: str | None = None, instance: str | None = None, group: str = "g", assignor: str | None = None):
        if epoch == 0 and owned is None:
            owned = {}
        return self.coord.heartbeat(self.now, group, member, epoch, instance, None, 30_000 if epoch == 0 else -1,
                                    topics, regex,
                                    assignor, owned, version=1)


def _count(a: dict) -> int:
    return sum(len(ps) for ps in a.values())


# -- assignors ---------------------------------------------------------------------------------------------
def test_uniform_is_balanced_and_sticky() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    subs = {m: {t1, t2} for m in ("a", "b", "c")}
    first = uniform_assign(subs, {t1: 4, t2: 3}, {})
    assert sorted(_count(a) for a in first.values()) == [2, 2, 3]
    every = sorted((t, p) for a in first.values() for t, ps in a.items() for p in ps)
    assert every == sorted([(t1, p) for p in range(4)] + [(t2, p) for p in range(3)])
    # a fourth member: only what it needs moves to it
    subs["d"] = {t1, t2}
    second = uniform_assign(subs, {t1: 4, t2: 3}, first)
    moved = sum(len(ps - second[m].get(t, set())) for m, a in first.items() for t, ps in a.items())
    assert sorted(_count(a) for a in second.values()) == [1, 2, 2, 2] and moved == _count(second["d"])


def test_uniform_heterogeneous_subscriptions() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    out = uniform_assign({"a": {t1}, "b": {t1, t2}}, {t1: 2, t2: 2}, {})
    assert t2 not in out["a"] and _count(out["a"]) + _count(out["b"]) == 4
    assert _count(out["a"]) >= 1


def test_range_gives_contiguous_ranges_per_topic() -> None:
    t1, t2 = uuid.uuid4(), uuid.uuid4()
    out = range_assign({"b": {t1, t2}, "a": {t1, t2}}, {t1: 5, t2: 5})
    assert out["a"] == {t1: {0, 1, 2}, t2: {0, 1, 2}} and out["b"] == {t1: {3, 4}, t2: {3, 4}}


# -- heartbeats and reconciliation ---------------------------------------------------------------------------
def test_single_member_gets_everything() -> None:
    w = World()
    tid = w.topic("t", 3)
    r = w.hb("m1", 0, topics=["t"])
    assert r.error_code == 0 and r.member_epoch == 1 and r.assignment == {tid: {0, 1, 2}}
    assert w.coord.groups["g"].state() == "Stable"
    r = w.hb("m1", 1, owned={tid: {0, 1, 2}})
    assert r.error_code == 0 and r.member_epoch == 1 and r.assignment is None   # unchanged: not sent


def test_groups_start_at_epoch_one_as_kafka_4_does() -> None:
    """Kafka 4.1+ (ModernGroup) starts a new group at epoch 1 and bumps it only for a subscription (or metadata)
    change: a member joining without topics gets epoch 1 and no epoch record, one with topics epoch 2."""
    w = World()
    w.coord.config.initial_epoch = 1
    tid = w.topic("t", 2)
    r = w.hb("m1", 0, topics=[], group="empty")
    assert (r.error_code, r.member_epoch) == (0, 1)
    assert not [k for k, _ in w.log if R.decode_key(k).type == R.GROUP_METADATA]
    r = w.hb("m1", 0, topics=["t"], group="g")
    assert (r.error_code, r.member_epoch, r.assignment) == (0, 2, {tid: {0, 1}})
    g = w.coord.groups["g"]
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    r = w.hb("m1", 1, topics=["t"], group="empty")   # subscribing later: one bump
    assert (r.error_code, r.member_epoch) == (0, 2)


def test_revocation_before_reassignment() -> None:
    """A partition moves to the new member only after its owner stops reporting it."""
    w = World()
    tid = w.topic("t", 4)
    w.hb("m1", 0, topics=["t"])
    r2 = w.hb("m2", 0, topics=["t"])
    assert r2.member_epoch == 2 and r2.assignment == {}          # target has 2 for it, but m1 still owns them
    g = w.coord.groups["g"]
    assert g.state() == "Reconciling"
    target2 = g.target["m2"][tid]
    r1 = w.hb("m1", 1, owned={tid: {0, 1, 2, 3}})                # m1 is asked to revoke, stays at epoch 1
    assert r1.member_epoch == 1 and r1.assignment == {tid: {0, 1, 2, 3} - target2}
    r2 = w.hb("m2", 2, owned={})
    assert r2.assignment is None                                 # still held by m1
    r1 = w.hb("m1", 1, owned={tid: {0, 1, 2, 3}})                # has not revoked yet
    assert r1.member_epoch == 1 and r1.assignment is None
    r1 = w.hb("m1", 1, owned={tid: {0, 1, 2, 3} - target2})      # revoked: moves to epoch 2
    assert r1.member_epoch == 2
    r2 = w.hb("m2", 2, owned={})
    assert r2.assignment == {tid: target2}
    assert g.state() == "Stable"
    owners = g.partition_owner_epochs()
    assert len(owners) == 4


def test_leave_reassigns_and_writes_tombstones() -> None:
    w = World()
    tid = w.topic("t", 2)
    w.hb("m1", 0, topics=["t"])
    w.hb("m1", 1, owned={tid: {0, 1}})
    w.hb("m2", 0, topics=["t"])
    r = w.hb("m2", -1)
    assert r.member_epoch == -1 and "m2" not in w.coord.groups["g"].members
    tombstoned = {R.decode_key(k) for k, v in w.log if v is None}
    assert R.Key(R.MEMBER_METADATA, "g", "m2") in tombstoned
    assert R.Key(R.CURRENT_ASSIGNMENT, "g", "m2") in tombstoned


def test_epoch_errors() -> None:
    w = World()
    tid = w.topic("t", 2)
    w.hb("m1", 0, topics=["t"])
    assert w.hb("m1", 5, owned={}).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert w.hb("nobody", 1, owned={}).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert w.hb("m1", 1, owned={tid: {0, 1}}, group="other").error_code == ErrorCode.GROUP_ID_NOT_FOUND
    w.hb("m2", 0, topics=["t"])                                   # group epoch 2; m1 at 1
    w.hb("m1", 1, owned={tid: {0, 1}})
    w.hb("m1", 1, owned={tid: set(w.coord.groups["g"].members["m1"].assigned.get(tid, set()))})
    m1 = w.coord.groups["g"].members["m1"]
    assert m1.member_epoch == 2 and m1.previous_member_epoch == 1
    # the previous epoch is accepted with a subset of the assignment (a lost response), nothing older
    assert w.hb("m1", 1, owned={tid: set(m1.assigned[tid])}).error_code == 0
    assert w.hb("m1", 0, owned=None, topics=["t"]).error_code == 0   # rejoin with epoch 0 is always allowed
    assert w.coord.heartbeat(w.now, "g", "", 0, None, None, 1000, ["t"], None, None, {}, version=1).error_code \
        == ErrorCode.INVALID_REQUEST
    assert w.coord.heartbeat(w.now, "g", "x", 0, None, None, 1000, ["t"], None, "sticky", {}, version=1) \
        .error_code == ErrorCode.UNSUPPORTED_ASSIGNOR


def test_unstorable_strings_are_refused_before_a_group_exists() -> None:
    """Strings over 0x7fff bytes (which Kafka's request parser refuses) never reach the group state: a fuzzed
    32 KiB group id once created a group that ListGroups could then not encode."""
    w = World()
    w.topic("t", 1)
    long = "g" * 32768
    assert w.coord.heartbeat(w.now, long, "m", 0, None, None, 1000, ["t"], None, None, {}, version=1) \
        .error_code == ErrorCode.INVALID_GROUP_ID
    assert long not in w.coord.groups
    for kwargs in ({"member": long}, {"instance": long}, {"topics": [long]}):
        args = {"member": "m", "instance": None, "topics": ["t"], **kwargs}
        r = w.coord.heartbeat(w.now, "g2", args["member"], 0, args["instance"], None, 1000, args["topics"], None,
                              None, {}, version=1)
        assert r.error_code == ErrorCode.INVALID_REQUEST, kwargs
    assert "g2" not in w.coord.groups


def test_static_membership() -> None:
    w = World()
    tid = w.topic("t", 2)
    r = w.hb("a", 0, topics=["t"], instance="i1")
    assert r.assignment == {tid: {0, 1}}
    assert w.hb("b", 0, topics=["t"], instance="i1").error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert w.hb("a", -2, instance="i1").member_epoch == -2          # temporary leave keeps the assignment
    r = w.hb("b", 0, topics=["t"], instance="i1")                   # comes back under a new member id
    assert r.error_code == 0 and r.assignment == {tid: {0, 1}} and set(w.coord.groups["g"].members) == {"b"}
    assert w.hb("a", 1, owned={}, instance="i1").error_code == ErrorCode.FENCED_INSTANCE_ID


def test_session_timeout_fences_and_reassigns() -> None:
    w = World()
    tid = w.topic("t", 2)
    w.hb("m1", 0, topics=["t"])
    w.hb("m2", 0, topics=["t"])
    w.now += 5_000
    w.hb("m2", 2, owned={})
    w.now += 6_000                                                  # m1 silent for 11 s > 10 s
    assert w.coord.next_deadline() is not None and w.coord.next_deadline() <= w.now
    w.coord.poll(w.now)
    g = w.coord.groups["g"]
    assert set(g.members) == {"m2"}
    r = w.hb("m2", 2, owned={})
    assert r.member_epoch == g.group_epoch and r.assignment == {tid: {0, 1}}


def test_regex_subscription_picks_up_new_topics() -> None:
    w = World()
    a = w.topic("orders-a", 1)
    w.topic("other", 1)
    r = w.hb("m1", 0, regex="orders-.*")
    assert r.assignment == {a: {0}}
    b = w.topic("orders-b", 2)
    r = w.hb("m1", r.member_epoch, owned={a: {0}})
    assert r.assignment == {a: {0}, b: {0, 1}}
    assert w.hb("m2", 0, regex="(a)\\1").error_code == ErrorCode.INVALID_REGULAR_EXPRESSION


def test_re2_checks() -> None:
    assert compile_re2("topic-[0-9]+").fullmatch("topic-12")
    for bad in ("(?=x)", "(a)\\1", "a++", "(?<!a)b", "["):
        with pytest.raises(RegexError):
            compile_re2(bad)


# -- offsets -----------------------------------------------------------------------------------------------
def test_offset_commit_and_fetch_validation() -> None:
    w = World()
    w.topic("t", 1)
    w.hb("m1", 0, topics=["t"])
    c = w.coord
    assert c.validate_offset_commit("classic-or-unknown", "m", 1, 9) is None
    assert c.validate_offset_commit("g", "m1", 1, 9) == 0
    assert c.validate_offset_commit("g", "m1", 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert c.validate_offset_commit("g", "zz", 1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert c.validate_offset_commit("g", "m1", 1, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert c.validate_offset_commit("g", "", -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID   # not empty: members only
    assert c.validate_offset_fetch("g", None, -1) == 0
    assert c.validate_offset_fetch("g", "m1", 3) == ErrorCode.STALE_MEMBER_EPOCH


# -- records and reload ---------------------------------------------------------------------------------------
def test_records_reload_the_same_state() -> None:
    w = World()
    tid = w.topic("t", 3)
    w.hb("m1", 0, topics=["t"], instance="s1")
    w.hb("m2", 0, topics=["t"], assignor="range")
    w.hb("m1", 1, owned={tid: {0, 1, 2}})
    before = w.coord.groups["g"]
    fresh = w.make()
    fresh.load(list(w.log), w.now)
    after = fresh.groups["g"]
    assert (after.group_epoch, after.assignment_epoch, after.target, after.topics) == \
        (before.group_epoch, before.assignment_epoch, before.target, before.topics)
    for mid, m in before.members.items():
        n = after.members[mid]
        assert (n.assignment_key(), n.metadata_key()) == (m.assignment_key(), m.metadata_key())
    # a deleted (empty) group stays deleted after a reload
    for mid in list(before.members):
        w.hb(mid, -1, instance="s1" if mid == "m1" else None)
    assert w.coord.delete_group("g") == 0
    fresh = w.make()
    fresh.load(list(w.log), w.now)
    assert "g" not in fresh.groups


def test_value_encodings_match_kafka_schemas() -> None:
    """Hand-checked bytes: ConsumerGroupMetadataValue v0 = version, Epoch, empty tagged fields."""
    assert R.group_metadata_value(7) == b"\x00\x00" + (7).to_bytes(4, "big") + b"\x00"
    assert R.encode_key(R.MEMBER_METADATA, "g", "m") == b"\x00\x05\x00\x01g\x00\x01m"
    tid = uuid.UUID(int=1)
    v = R.target_member_value({tid: {2, 1}})
    assert v == b"\x00\x00" + b"\x02" + tid.bytes + b"\x03" + b"\x00\x00\x00\x01\x00\x00\x00\x02" + b"\x00" + b"\x00"
    assert R.decode_value(R.TARGET_MEMBER, v) == {tid: {1, 2}}


def test_backtracking_shapes_are_refused() -> None:
    """Python's re backtracks where RE2 does not: nested repetition and many unbounded repetitions are refused
    (each would hold the event loop for seconds on one long topic name)."""
    for bad in ("(a+)+$", "(a|aa)*", "(?:a*)*", ".*.*.*.*x", "a{2,}b{3,}c*d+"):
        with pytest.raises(RegexError):
            compile_re2(bad)
    # librdkafka sends a subscription "^orders-.*" as "(^orders-.*)"
    for ok in ("^(foo|bar)-.*", "(abc)+", ".*foo.*bar.*", "[*+]+x", "(ab){2}", "(^orders-.*)", "(a*)"):
        assert compile_re2(ok) is not None


def test_offsets_of_topics_a_live_consumer_group_reads_do_not_expire() -> None:
    from kafkalite.coordinator.classic.coordinator import GroupCoordinator
    from kafkalite.coordinator.classic.group import OffsetAndMetadata
    from kafkalite.coordinator.common.config import GroupConfig

    c = GroupCoordinator(GroupConfig(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000),
                         lambda p, recs: None)
    live = {"g": {"read"}}
    c.consumer_group_topics = lambda gid: live.get(gid, set())
    c.commit_offsets(0, "g", "", None, -1, {("read", 0): OffsetAndMetadata(1, commit_timestamp=0),
                                             ("old", 0): OffsetAndMetadata(2, commit_timestamp=0)})
    c.poll(0)
    c.poll(61_000)
    assert set(c.groups["g"].offsets) == {("read", 0)}
    live.clear()   # the group emptied: its offsets expire a retention after commit
    c.poll(123_000)
    assert "g" not in c.groups


def test_group_configs_override_the_broker_timeouts() -> None:
    """consumer.session.timeout.ms / consumer.heartbeat.interval.ms of a group (IncrementalAlterConfigs GROUP
    resources, through the broker's group config store) win over group.consumer.*."""
    w = World()
    store = {"g": {"consumer.session.timeout.ms": "3000", "consumer.heartbeat.interval.ms": "250"}}
    w.coord.config.group_configs = lambda gid: store.get(gid, {})
    w.topic("t", 1)
    r = w.hb("m1", 0, topics=["t"])
    assert r.heartbeat_interval_ms == 250
    assert w.hb("m2", 0, topics=["t"], group="other").heartbeat_interval_ms == 5_000
    w.now += 3_500
    w.coord.poll(w.now)
    assert "m1" not in w.coord.groups["g"].members and "m2" in w.coord.groups["other"].members


# -- rack awareness (synthetic racks: one broker has none) -------------------------------------------------------
def _racks(layout: dict[int, str]):  # type: ignore[no-untyped-def]
    """Partition p of every topic has its one replica on rack layout[p]."""
    return lambda t, p: frozenset({layout[p]})


def test_uniform_prefers_partitions_on_the_members_rack() -> None:
    from kafkalite.coordinator.consumer.assignors import assign

    t = uuid.uuid4()
    subs = {"a": {t}, "b": {t}}
    layout = {0: "r1", 1: "r2", 2: "r1", 3: "r2"}
    out = assign("uniform", subs, {t: 4}, {}, {"a": "r2", "b": "r1"}, _racks(layout))
    assert out == {"a": {t: {1, 3}}, "b": {t: {0, 2}}}
    # sticky current owners on the wrong rack give their partitions up to a same-rack member
    out = assign("uniform", subs, {t: 4}, {"a": {t: {0, 2}}, "b": {t: {1, 3}}}, {"a": "r2", "b": "r1"},
                 _racks(layout))
    assert out == {"a": {t: {1, 3}}, "b": {t: {0, 2}}}
    # without racks the same call is purely sticky
    assert assign("uniform", subs, {t: 4}, {"a": {t: {0, 2}}, "b": {t: {1, 3}}}) == \
        {"a": {t: {0, 2}}, "b": {t: {1, 3}}}


def test_rack_awareness_never_beats_balance() -> None:
    from kafkalite.coordinator.consumer.assignors import assign

    t = uuid.uuid4()
    layout = dict.fromkeys(range(6), "r1") | {5: "r2"}
    out = assign("uniform", {"a": {t}, "b": {t}}, {t: 6}, {}, {"a": "r1", "b": "r2"}, _racks(layout))
    assert sorted(len(a[t]) for a in out.values()) == [3, 3] and 5 in out["b"][t]
    out = assign("range", {"a": {t}, "b": {t}}, {t: 6}, {}, {"a": "r1", "b": "r2"}, _racks(layout))
    assert out["a"][t] == {0, 1, 2} and out["b"][t] == {3, 4, 5}


def test_range_gives_each_member_its_racks_partitions_first() -> None:
    from kafkalite.coordinator.consumer.assignors import assign

    t = uuid.uuid4()
    layout = {0: "r2", 1: "r1", 2: "r2", 3: "r1"}
    out = assign("range", {"a": {t}, "b": {t}}, {t: 4}, {}, {"a": "r1", "b": "r2"}, _racks(layout))
    assert out == {"a": {t: {1, 3}}, "b": {t: {0, 2}}}
    assert assign("range", {"a": {t}, "b": {t}}, {t: 4}, {}) == {"a": {t: {0, 1}}, "b": {t: {2, 3}}}


def test_rack_strategy_off_when_locality_cannot_differ() -> None:
    """Every partition on the same racks (one broker), no member racks, or member racks that meet no partition:
    the rack-less assignment."""
    from kafkalite.coordinator.consumer.assignors import assign

    t = uuid.uuid4()
    subs = {"a": {t}, "b": {t}}
    plain = assign("range", subs, {t: 4}, {})
    assert assign("range", subs, {t: 4}, {}, {"a": "r1", "b": "r2"}, lambda t_, p: frozenset({"r1"})) == plain
    assert assign("range", subs, {t: 4}, {}, {"a": None, "b": None}, _racks({0: "r1", 1: "r2", 2: "r1",
                                                                             3: "r2"})) == plain
    assert assign("range", subs, {t: 4}, {}, {"a": "x", "b": "y"}, _racks({0: "r1", 1: "r2", 2: "r1",
                                                                           3: "r2"})) == plain


def test_heartbeat_rack_id_reaches_the_assignor() -> None:
    w = World()
    tid = w.topic("t", 4)
    w.coord.partition_racks = lambda name, p: {"r1"} if p % 2 == 0 else {"r2"}
    for m, rack in (("m1", "r2"), ("m2", "r1")):
        w.coord.heartbeat(w.now, "g", m, 0, None, rack, 30_000, ["t"], None, None, {}, version=1)
    g = w.coord.groups["g"]
    assert g.target == {"m1": {tid: {1, 3}}, "m2": {tid: {0, 2}}}


# -- per-partition assignment epochs (KIP-1251, Kafka 4.3) --------------------------------------------------------
def test_assignment_epochs_relax_offset_commits_and_survive_a_reload() -> None:
    w = World()
    tid = w.topic("t", 4)
    w.hb("m1", 0, topics=["t"])                                    # epoch 1: all four partitions, each at epoch 1
    w.hb("m2", 0, topics=["t"])                                    # epoch 2: two move to m2 once m1 revokes them
    g = w.coord.groups["g"]
    target2 = g.target["m2"][tid]
    w.hb("m1", 1, owned={tid: {0, 1, 2, 3} - target2})             # revoked: m1 is at epoch 2, keeps the rest
    w.hb("m2", 2, owned={})
    m1, m2 = g.members["m1"], g.members["m2"]
    kept = sorted({0, 1, 2, 3} - target2)
    assert m1.member_epoch == 2 and {m1.epochs[(tid, p)] for p in kept} == {1}
    assert {m2.epochs[(tid, p)] for p in target2} == {2}
    c = w.coord
    # m1 commits with the epoch it had before it heard of epoch 2: fine for the partitions it held since then
    assert c.offset_commit_errors("g", "m1", 1, 9, [("t", kept[0])]) == {("t", kept[0]): 0}
    stale = int(ErrorCode.STALE_MEMBER_EPOCH)
    moved = sorted(target2)[0]
    assert c.offset_commit_errors("g", "m1", 1, 9, [("t", moved)]) == {("t", moved): stale}   # not its own now
    assert c.offset_commit_errors("g", "m2", 1, 9, [("t", moved)]) == {("t", moved): stale}   # given at epoch 2
    assert c.offset_commit_errors("g", "m2", 2, 9, [("t", moved)]) == {("t", moved): 0}
    assert c.offset_commit_errors("g", "m1", 3, 9, [("t", kept[0])]) == {("t", kept[0]): stale}   # from the future
    assert c.offset_commit_errors("nope", "m1", 1, 9, [("t", 0)]) is None
    # a classic-protocol member's generation is checked the same way (Kafka 4.4), refused as ILLEGAL_GENERATION
    m1.classic = m2.classic = ClassicMeta(10_000, [("range", b"")])
    illegal = int(ErrorCode.ILLEGAL_GENERATION)
    assert c.offset_commit_errors("g", "m1", 1, 2, [("t", kept[0]), ("t", moved)]) == {("t", kept[0]): 0,
                                                                                       ("t", moved): illegal}
    assert c.offset_commit_errors("g", "m2", 1, 2, [("t", moved)]) == {("t", moved): illegal}
    assert c.offset_commit_errors("g", "m1", 3, 2, [("t", kept[0])]) == {("t", kept[0]): illegal}
    m1.classic = m2.classic = None
    # the epochs are in the CurrentMemberAssignment records (AssignmentEpochs, tag 0) and come back on a load
    again = w.make()
    again.load(list(w.log), w.now)
    assert again.groups["g"].members["m1"].epochs == m1.epochs and again.groups["g"].members["m2"].epochs == m2.epochs


def test_tagged_fields_match_kafkas_generated_layout() -> None:
    """Hand-checked bytes of the two tagged fields written here, laid out as Kafka's generated code does: the
    AssignmentEpochs array (tag 0 of TopicPartitions: size, compact array) and the nullable ClassicMemberMetadata
    struct (tag 0 of MemberMetadata: size, presence varint 1, the struct)."""
    from kafkalite.coordinator.consumer.model import ConsumerMember, MemberState

    tid = uuid.UUID(int=1)
    m = ConsumerMember("m", member_epoch=5, previous_member_epoch=4, state=MemberState.STABLE,
                       assigned={tid: {1, 2}}, epochs={(tid, 1): 3, (tid, 2): 5})
    v = R.current_assignment_value(m)
    epochs = b"\x03" + (3).to_bytes(4, "big") + (5).to_bytes(4, "big")
    assert v == (b"\x00\x00" + (5).to_bytes(4, "big") + (4).to_bytes(4, "big") + b"\x00"
                 + b"\x02" + tid.bytes + b"\x03" + (1).to_bytes(4, "big") + (2).to_bytes(4, "big")
                 + b"\x01\x00" + bytes([len(epochs)]) + epochs + b"\x01" + b"\x00")
    assert R.decode_value(R.CURRENT_ASSIGNMENT, v)[5] == m.epochs
    c = ConsumerMember("c", client_id="cid", client_host="/h", subscribed_topic_names=["t"],
                       rebalance_timeout_ms=300, classic=ClassicMeta(10_000, [("range", b"\xab\xcd")]))
    v = R.member_metadata_value(c)
    struct_ = b"\x01" + (10_000).to_bytes(4, "big") + b"\x02" + b"\x06range" + b"\x03\xab\xcd" + b"\x00" + b"\x00"
    assert v.endswith(b"\x01\x00" + bytes([len(struct_)]) + struct_)
    assert R.decode_value(R.MEMBER_METADATA, v).classic == (10_000, [("range", b"\xab\xcd")])


def test_empty_group_assignment_epoch_catches_up() -> None:
    """Kafka 4.3 (KAFKA-20442): when the last member leaves, the assignment epoch is written up to the group
    epoch, so an empty group never looks like it is still assigning."""
    w = World()
    w.topic("t", 2)
    w.hb("m1", 0, topics=["t"])
    w.log.clear()
    w.hb("m1", -1)
    g = w.coord.groups["g"]
    assert g.state() == "Empty" and g.assignment_epoch == g.group_epoch == 2
    assert any(R.record_type(k) == R.TARGET_METADATA and v is not None for k, v in w.log)
