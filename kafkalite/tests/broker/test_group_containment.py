"""Issue #12 item 1: one client must not be able to stop the broker through a group.

Pure state-machine tests (duplicate protocol names, JoinGroup's supportsProtocols check, a failure confined to
its group) and the issue's scenario on the wire against an in-process broker.
"""
from __future__ import annotations

import time

import pytest

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import Group, GroupState
from kafkalite.coordinator.common import errors as E
from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.unit.test_group_coordinator import join, make
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest

S = GroupState


def _stable(c: GroupCoordinator, now: int, gid: str, protos: list[tuple[str, bytes]]) -> str:
    """A v3-style join (no MEMBER_ID_REQUIRED step) that completes and syncs; returns the member id."""
    p = join(c, now, gid=gid, protos=protos, v4=False)
    c.poll(now)
    assert p.done and p.result.error == E.NONE
    mid = p.result.member_id
    s = c.sync_group(now, gid, p.result.generation_id, mid, None, None, None, {mid: b"A"})
    assert s.result.error == E.NONE
    return mid


def test_duplicate_protocol_names_count_once_and_survive_the_others_leaving() -> None:
    c, _ = make(group_min_session_timeout_ms=100)
    a = _stable(c, 0, "g", [("range", b"a")])
    pb = join(c, 10, gid="g", protos=[("range", b"b1"), ("range", b"b2")], v4=False, session=1_000)
    assert not pb.done
    g = c.groups["g"]
    assert g.supported_protocols == {"range": 2} and g.candidate_protocols() == {"range"}
    # A never rejoins: the rebalance completes without it, B alone must still have a protocol
    c.poll(100_000)
    assert pb.done and pb.result.error == E.NONE and pb.result.protocol_name == "range"
    assert a not in g.members and g.select_protocol() == "range"
    assert pb.result.members == [(pb.result.member_id, None, b"b1")]   # the first entry's metadata


def test_join_refuses_incompatible_type_or_protocols_at_join_time() -> None:
    c, _ = make()
    _stable(c, 0, "g", [("range", b"a"), ("roundrobin", b"a")])
    assert join(c, 1, gid="g", protos=[("sticky", b"")], v4=False).result.error == E.INCONSISTENT_GROUP_PROTOCOL
    other_type = c.join_group(1, "g", "", None, "cl", "/h", 30_000, 10_000, "connect", [("range", b"")],
                              require_known_member_id=False)
    assert other_type.result.error == E.INCONSISTENT_GROUP_PROTOCOL
    # an empty group accepts anything non-empty, and nothing empty
    empty_protos = c.join_group(1, "h", "", None, "cl", "/h", 30_000, 10_000, "consumer", [],
                                require_known_member_id=False)
    assert empty_protos.result.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert "h" not in c.groups
    ok = join(c, 1, gid="g", protos=[("sticky", b""), ("roundrobin", b"")], v4=False)
    assert not ok.done or ok.result.error == E.NONE


def test_select_protocol_returns_none_instead_of_raising() -> None:
    g = Group("g", 0)
    from kafkalite.coordinator.classic.group import Member

    for mid, name in (("a", "range"), ("b", "roundrobin")):
        g.members[mid] = Member(mid, None, "c", "/h", 1000, 1000, "consumer", [(name, b"")])
    assert g.select_protocol() is None


def test_a_failing_group_is_reset_and_the_others_keep_going(monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    c, _ = make()
    bad = _stable(c, 0, "bad", [("range", b"")])
    good = _stable(c, 0, "good", [("range", b"")])
    c.commit_offsets(1, "bad", bad, None, 1, {("t", 0): _om(7)})
    original = c._poll_group

    def poll_group(group: Group, now_ms: int) -> None:
        if group.group_id == "bad":
            raise RuntimeError("injected")
        original(group, now_ms)

    monkeypatch.setattr(c, "_poll_group", poll_group)
    c.poll(5)   # must not raise
    g = c.groups["bad"]
    assert g.state is S.EMPTY and not g.members and g.generation_id == 2
    assert g.offsets[("t", 0)].offset == 7                      # committed offsets are kept
    assert c.groups["good"].state is S.STABLE and good in c.groups["good"].members
    assert sum("group bad failed during its timers" in r.getMessage() for r in caplog.records) == 1
    assert any(r.exc_info for r in caplog.records if "group bad failed" in r.getMessage())
    # the old member is told to rejoin; a new join works
    assert c.heartbeat(6, "bad", bad, None, 1) == E.UNKNOWN_MEMBER_ID
    monkeypatch.setattr(c, "_poll_group", original)
    assert _stable(c, 7, "bad", [("range", b"")])


def test_parked_requests_of_a_reset_group_are_answered() -> None:
    c, _ = make()
    a = _stable(c, 0, "g", [("range", b"")])
    pb = join(c, 1, gid="g", v4=False)     # B waits for A to rejoin
    assert not pb.done
    try:
        raise ValueError("boom")
    except ValueError:
        c.contain_failure("g", 2, "a test")
    assert pb.done and pb.result.error == E.UNKNOWN_MEMBER_ID
    assert c.sync_group(3, "g", 1, a, None, None, None, {}).result.error == E.UNKNOWN_MEMBER_ID


def _om(offset: int):
    from kafkalite.coordinator.classic.group import OffsetAndMetadata

    return OffsetAndMetadata(offset)


# -- the issue's scenario on the wire ---------------------------------------------------------------------
P = JoinGroupRequest.JoinGroupRequestProtocol


def _join_v3(c: RawClient, group: str, names: list[str], member: str = "", session_ms: int = 3000) -> object:
    """A 3 s session unless told (a member must live from its JoinGroup to its next request on a loaded
    machine); the 500 ms rebalance timeout is what lets a later join drop a member that does not rejoin."""
    return c.request(JoinGroupRequest(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=500,
                                      member_id=member, protocol_type="consumer",
                                      protocols=[P(name=n, metadata=b"m") for n in names]), 3)


def test_issue_scenario_duplicate_protocols_and_session_expiry_keep_the_broker_up() -> None:
    """Two JoinGroup v3, member A [range] and member B [range, range]; A's session expires. The broker used to
    raise out of the group timer and exit; now the group carries on with B and the group id stays usable."""
    with Broker(overrides={"group.min.session.timeout.ms": "100"}) as b:
        a, bee, other = (RawClient(b.host, b.port) for _ in range(3))
        ra = _join_v3(a, "issue", ["range"])
        assert ra.error_code == 0
        assert a.request(SyncGroupRequest(group_id="issue", generation_id=ra.generation_id, member_id=ra.member_id,
                                          assignments=[]), 1).error_code == 0
        rb = _join_v3(bee, "issue", ["range", "range"], session_ms=500)   # parked until A's rebalance timeout
        assert rb.error_code == 0 and rb.protocol_name == "range"
        assert rb.generation_id == ra.generation_id + 1 and rb.leader == rb.member_id
        # B does not heartbeat either: its session expires too, leaving the group empty
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            hb = bee.request(HeartbeatRequest(group_id="issue", generation_id=rb.generation_id,
                                              member_id=rb.member_id), 1)
            if hb.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                break
            time.sleep(0.6)
        # the broker is still serving, and the group id still works
        rc = _join_v3(other, "issue", ["range"])
        assert rc.error_code == 0
        commit = other.request(OffsetCommitRequest(group_id="issue", generation_id_or_member_epoch=rc.generation_id,
                                                   member_id=rc.member_id, topics=[]), 2)
        assert commit.topics == []
        # an incompatible member is refused at join time
        bad = _join_v3(a, "issue", ["roundrobin"])
        assert bad.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
