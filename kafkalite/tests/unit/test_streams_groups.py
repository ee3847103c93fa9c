"""The streams group coordinator (KIP-1071) as a pure state machine: topology configuration and its statuses,
joins, the sticky assignment, the revoke-before-reassign handshake, fencing, leaving and timeouts, offsets."""
from __future__ import annotations

from kafkalite.coordinator.streams import topology as T
from kafkalite.coordinator.streams.coordinator import (
    FENCED_MEMBER_EPOCH,
    INVALID_REQUEST,
    STALE_MEMBER_EPOCH,
    STREAMS_INVALID_TOPOLOGY,
    HeartbeatRequest,
    StreamsConfig,
    StreamsGroupCoordinator,
)
from kafkalite.coordinator.streams.model import Subtopology, Topology

UNKNOWN_MEMBER_ID = 25


def wordcount(epoch: int = 1) -> Topology:
    """Kafka Streams' word count: 0 reads the input and writes a repartition topic; 1 reads it and counts."""
    return Topology(epoch, [
        Subtopology("0", ["in"], [], ["app-rep"], [], [], []),
        Subtopology("1", [], [], [], [("app-rep", 0, -1, {"cleanup.policy": "delete"})],
                    [("app-changelog", 0, -1, {"cleanup.policy": "compact"})], []),
    ])


def join(c: StreamsGroupCoordinator, now: int, mid: str, topics: dict[str, int], process: str | None = None,
         **kw):  # type: ignore[no-untyped-def]
    return c.heartbeat(now, HeartbeatRequest("app", mid, 0, rebalance_timeout_ms=30_000, topology=wordcount(),
                                             process_id=process or mid, active_tasks={}, standby_tasks={},
                                             warmup_tasks={}, **kw), topics)


def hb(c: StreamsGroupCoordinator, now: int, mid: str, epoch: int, topics: dict[str, int], active=None,
       **kw):  # type: ignore[no-untyped-def]
    """A heartbeat; with ``active`` the member reports its owned tasks (all three task lists, as Kafka requires)."""
    lists = {} if active is None else {"active_tasks": active, "standby_tasks": {}, "warmup_tasks": {}}
    return c.heartbeat(now, HeartbeatRequest("app", mid, epoch, **lists, **kw), topics)


def act(res) -> dict[str, set[int]]:  # type: ignore[no-untyped-def]
    return {s: set(p) for s, p in res.tasks.active.items() if p}


READY = {"in": 2, "app-rep": 2, "app-changelog": 2}


def test_missing_source_topics_then_internal_topics_then_tasks() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    r = join(c, 0, "m1", {})
    assert r.error_code == 0 and r.member_epoch == 1
    assert r.statuses == [(T.MISSING_SOURCE_TOPICS, "Source topics in are missing.")]
    assert r.tasks is not None and r.tasks.empty() and not r.create_topics
    r = hb(c, 1, "m1", 1, {"in": 2})
    assert r.statuses == [(T.MISSING_INTERNAL_TOPICS, "Internal topics are missing: [app-changelog, app-rep]")]
    # the repartition topic takes its upstream's partitions, the changelog one per task
    assert r.create_topics == {"app-rep": (2, -1, {"cleanup.policy": "delete"}),
                               "app-changelog": (2, -1, {"cleanup.policy": "compact"})}
    r = hb(c, 2, "m1", r.member_epoch, READY)
    assert r.statuses == [] and r.member_epoch == 2   # the tasks appeared: a new group epoch
    assert act(r) == {"0": {0, 1}, "1": {0, 1}}
    assert c.groups["app"].state() == "Stable"


def test_incorrectly_partitioned_internal_topic() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    r = join(c, 0, "m1", {"in": 2, "app-rep": 3, "app-changelog": 2})
    assert r.statuses == [(T.INCORRECTLY_PARTITIONED_TOPICS, "Existing internal topic app-rep has invalid number "
                           "of partitions: expected: 2; actual: 3")]
    assert r.tasks is not None and r.tasks.empty()


def test_invalid_requests() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    assert c.heartbeat(0, HeartbeatRequest("app", "", 0), READY).error_code == INVALID_REQUEST
    empty: dict[str, set[int]] = {}
    r = c.heartbeat(0, HeartbeatRequest("app", "m", 0, rebalance_timeout_ms=1, process_id="p", active_tasks=empty,
                                        standby_tasks=empty, warmup_tasks=empty), READY)
    assert (r.error_code, r.error_message) == (INVALID_REQUEST, "Topology must be non-null when (re-)joining.")
    r = c.heartbeat(0, HeartbeatRequest("app", "m", 0, rebalance_timeout_ms=1, topology=wordcount()), READY)
    assert (r.error_code, r.error_message) == (INVALID_REQUEST, "ActiveTasks must be empty when (re-)joining.")
    r = c.heartbeat(0, HeartbeatRequest("app", "m", 3, topology=wordcount()), READY)
    assert (r.error_code, r.error_message) == (INVALID_REQUEST, "Topology can only be provided when (re-)joining.")
    assert c.heartbeat(0, HeartbeatRequest("app", "m", -3), READY).error_code == INVALID_REQUEST
    bad = Topology(1, [Subtopology("0", ["app-rep"], [], [], [("app-rep", 0, -1, {})], [], [])])
    r = c.heartbeat(0, HeartbeatRequest("app", "m", 0, rebalance_timeout_ms=1, topology=bad, process_id="p",
                                        active_tasks=empty, standby_tasks=empty, warmup_tasks=empty), READY)
    assert r.error_code == STREAMS_INVALID_TOPOLOGY
    assert hb(c, 0, "nobody", 5, READY).error_code == UNKNOWN_MEMBER_ID


def test_second_member_waits_for_revocation_then_gets_its_share() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    r1 = join(c, 0, "a", READY)
    assert act(r1) == {"0": {0, 1}, "1": {0, 1}}
    e1 = r1.member_epoch
    r2 = join(c, 1, "b", READY)
    # b's share is still owned by a: nothing yet (unreleased), a new epoch
    assert r2.tasks is not None and r2.tasks.active == {} and r2.member_epoch == e1 + 1
    r1 = hb(c, 2, "a", e1, READY, active={"0": {0, 1}, "1": {0, 1}})
    # a keeps half, revokes the rest, stays at its epoch until it no longer owns them
    kept = act(r1)
    assert sum(len(v) for v in kept.values()) == 2 and r1.member_epoch == e1
    assert c.groups["app"].members["a"].state == "UNREVOKED_TASKS"
    assert hb(c, 3, "b", r2.member_epoch, READY).tasks is None   # still unreleased
    r1 = hb(c, 4, "a", e1, READY, active=kept)
    assert r1.member_epoch == e1 + 1 and act(r1) == kept   # a new epoch: its tasks are sent again
    r2 = hb(c, 5, "b", r2.member_epoch, READY)
    got = act(r2)
    assert sum(len(v) for v in got.values()) == 2
    assert all(not (got.get(s, set()) & kept.get(s, set())) for s in ("0", "1"))
    assert c.groups["app"].state() == "Stable"


def test_standby_on_another_process() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(num_standby_replicas=1, initial_rebalance_delay_ms=0))
    join(c, 0, "a", READY, process="p1")
    join(c, 0, "b", READY, process="p2")
    target = c.groups["app"].target
    for s in ("0", "1"):
        for p in (0, 1):
            owners = [m for m, t in target.items() if p in t.active.get(s, set())]
            standbys = [m for m, t in target.items() if p in t.standby.get(s, set())]
            assert len(owners) == 1 and len(standbys) == 1 and owners != standbys


def test_fencing_leave_and_session_timeout() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(session_timeout_ms=1000, initial_rebalance_delay_ms=0))
    ra = join(c, 0, "a", READY)
    assert hb(c, 1, "a", ra.member_epoch + 1, READY).error_code == FENCED_MEMBER_EPOCH
    join(c, 0, "b", READY)
    assert c.next_deadline() == 1000
    hb(c, 900, "b", c.groups["app"].members["b"].member_epoch, READY)
    c.poll(1000)   # a's session expired: it is fenced, b gets everything
    assert set(c.groups["app"].members) == {"b"}
    rb = hb(c, 1001, "b", c.groups["app"].members["b"].member_epoch, READY)
    assert act(rb) == {"0": {0, 1}, "1": {0, 1}}
    r = hb(c, 1002, "b", -1, READY)
    assert (r.error_code, r.member_epoch) == (0, -1)
    assert c.groups["app"].state() == "Empty"
    assert c.list_groups(set(), {"streams"}) == [
        {"group_id": "app", "protocol_type": "streams", "group_state": "Empty", "group_type": "streams"}]
    assert c.delete_group("app") == 0 and "app" not in c.groups


def test_offset_commit_validation() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    assert c.offset_commit_error("other", "x", 3) is None
    r = join(c, 0, "a", READY)
    assert c.offset_commit_error("app", "a", r.member_epoch) == 0
    assert c.offset_commit_error("app", "a", r.member_epoch - 1) == STALE_MEMBER_EPOCH
    assert c.offset_commit_error("app", "zz", 1) == UNKNOWN_MEMBER_ID
    assert c.offset_commit_error("app", "a", r.member_epoch + 1, transactional=True) == 22   # ILLEGAL_GENERATION


def test_shutdown_application_reaches_every_member() -> None:
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    ra = join(c, 0, "a", READY)
    rb = join(c, 0, "b", READY)
    hb(c, 1, "b", rb.member_epoch, READY, shutdown_application=True)
    r = hb(c, 2, "a", ra.member_epoch, READY)
    assert any(code == T.SHUTDOWN_APPLICATION for code, _ in r.statuses or [])


def test_initial_rebalance_delay_holds_the_first_assignment() -> None:
    """Kafka 4.4: a new group's first members get no tasks (status ASSIGNMENT_DELAYED) until
    group.streams.initial.rebalance.delay.ms has passed; the timer then computes the assignment."""
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=3000))
    r = join(c, 0, "a", READY)
    assert (r.member_epoch, r.statuses) == (1, [(T.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured "
                                                                       "initial rebalance delay.")])
    assert r.tasks is not None and r.tasks.empty()
    assert c.next_deadline() == 3000
    c.poll(3000)   # the delay is over: a new group epoch and its assignment
    r = hb(c, 3001, "a", 1, READY, active={})
    assert r.statuses == [] and r.member_epoch == 2 and act(r) == {"0": {0, 1}, "1": {0, 1}}


def test_records_round_trip_and_diff() -> None:
    """The group written as Kafka 4.3's records (types 17, 19-23) and read back gives the same group; what is
    written after a change is only the difference, and a member that left is tombstoned."""
    from kafkalite.coordinator.streams import records as REC

    log: list[tuple[bytes, bytes | None]] = []
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0, num_standby_replicas=1))
    c.write = lambda _gid, recs: log.extend(recs)
    ra = join(c, 0, "a", READY, user_endpoint=("h1", 8080), client_tags={"zone": "z1"})
    join(c, 1, "b", READY, instance_id="i-b")
    hb(c, 2, "a", ra.member_epoch, READY, active={"0": {0, 1}, "1": {0, 1}})
    assert {REC.decode_key(k)[0] for k, _ in log} == set(REC.TYPES)
    loaded, written = REC.load(log, 100, 45_000)
    g, h = c.groups["app"], loaded["app"]
    assert (h.group_epoch, h.target_epoch, h.topology) == (g.group_epoch, g.target_epoch, g.topology)
    assert h.target == g.target and set(h.members) == {"a", "b"}
    for mid, m in g.members.items():
        n = h.members[mid]
        assert (n.member_epoch, n.previous_member_epoch, n.state, n.assigned, n.pending_revocation, n.process_id,
                n.user_endpoint, n.client_tags, n.instance_id) == (
            m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation, m.process_id,
            m.user_endpoint, m.client_tags, m.instance_id)
    assert h.static == {"i-b": "b"} and written["app"] == c._written["app"]
    log.clear()
    hb(c, 3, "b", c.groups["app"].members["b"].member_epoch, READY, instance_id="i-b")
    hb(c, 4, "b", -1, READY)
    tombstones = {REC.decode_key(k) for k, v in log if v is None}
    assert {(t, m) for t, _g, m in tombstones} == {(REC.MEMBER_METADATA, "b"), (REC.CURRENT_ASSIGNMENT, "b"),
                                                   (REC.TARGET_MEMBER, "b")}
    hb(c, 5, "a", -1, READY)
    assert c.delete_group("app") == 0   # tombstones for all its records: a replay no longer has the group
    loaded, _ = REC.load([*REC.diff({}, written["app"]), *log], 6, 45_000)
    assert "app" not in loaded


def test_group_config_overrides() -> None:
    """streams.num.standby.replicas / streams.heartbeat.interval.ms set on the group (IncrementalAlterConfigs on
    the GROUP resource) override the broker's group.streams.* defaults."""
    overrides = {"app": {"streams.num.standby.replicas": "1", "streams.heartbeat.interval.ms": "7000"}}
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0,
                                              group_configs=lambda gid: overrides.get(gid, {})))
    join(c, 0, "a", READY, process="p1")
    r = join(c, 0, "b", READY, process="p2")
    assert r.heartbeat_interval_ms == 7000
    assert sum(len(ps) for t in c.groups["app"].target.values() for ps in t.standby.values()) == 4


def test_static_member_leaves_temporarily_and_comes_back() -> None:
    """Epoch -2 (a static member's temporary leave) keeps its tasks for its instance id; a new member id under
    that instance id takes them back without a rebalance; while the old one is there, another is refused."""
    c = StreamsGroupCoordinator(StreamsConfig(initial_rebalance_delay_ms=0))
    r = join(c, 0, "a", READY, instance_id="i1", process="p1")
    epoch = r.member_epoch
    assert hb(c, 1, "a", -2, READY, instance_id="i1").member_epoch == -2
    g = c.groups["app"]
    assert g.members["a"].member_epoch == -2 and g.group_epoch == epoch
    r = join(c, 2, "a2", READY, instance_id="i1", process="p1")
    assert r.error_code == 0 and "a" not in g.members and act(r) == {"0": {0, 1}, "1": {0, 1}}
    assert g.group_epoch == epoch   # no rebalance (the same process; a new process id is a new input)
    r = join(c, 3, "a3", READY, instance_id="i1")
    assert r.error_code == 111   # UNRELEASED_INSTANCE_ID
