"""The group APIs on the wire, across their versions, against an embedded broker."""
from __future__ import annotations

import struct
import time
from collections.abc import Callable

from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

Connect = Callable[[], RawClient]


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def create_topic(c: RawClient, name: str, partitions: int = 2) -> None:
    resp = c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=10000), 4)
    assert resp.topics[0].error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)


def join(c: RawClient, group: str, version: int, member_id: str = "", topic: str = "t", instance: str | None = None):
    req = JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000,
                           member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                           protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                                metadata=subscription(topic))])
    return c.request(req, version)


def commit(c: RawClient, group: str, version: int, topic: str, offsets: dict[int, int], generation: int = -1,
           member: str = "") -> dict[int, int]:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                              topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                                  OffsetCommitRequest.OffsetCommitRequestPartition(
                                      partition_index=p, committed_offset=o, committed_metadata="m")
                                  for p, o in offsets.items()])])
    resp = c.request(req, version)
    return {p.partition_index: p.error_code for t in resp.topics for p in t.partitions}


def test_find_coordinator_versions(raw: Connect, broker) -> None:
    c = raw()
    r0 = c.request(FindCoordinatorRequest(key="g"), 0)
    assert r0.error_code == 0 and r0.node_id == 1 and r0.port == broker.port
    r3 = c.request(FindCoordinatorRequest(key="tx", key_type=1), 3)
    assert r3.error_code == 0 and r3.port == broker.port
    r4 = c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4)
    assert [(x.key, x.error_code, x.port) for x in r4.coordinators] == [("a", 0, broker.port), ("b", 0, broker.port)]
    bad = c.request(FindCoordinatorRequest(key="g", key_type=7), 2)
    assert bad.error_code == ErrorCode.INVALID_REQUEST


def test_classic_flow_v0_and_simple_commits(raw: Connect) -> None:
    c = raw()
    create_topic(c, "t")
    j = join(c, "g0", 0)
    assert j.error_code == 0 and j.generation_id == 1 and j.leader == j.member_id and j.protocol_name == "range"
    assert len(j.members) == 1
    s = c.request(SyncGroupRequest(group_id="g0", generation_id=1, member_id=j.member_id, assignments=[
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=j.member_id, assignment=b"A")]), 0)
    assert s.error_code == 0 and bytes(s.assignment) == b"A"
    hb = c.request(HeartbeatRequest(group_id="g0", generation_id=1, member_id=j.member_id), 0)
    assert hb.error_code == 0
    assert commit(c, "g0", 2, "t", {0: 5, 1: 7}, 1, j.member_id) == {0: 0, 1: 0}
    assert commit(c, "g0", 2, "t", {0: 6}, 9, j.member_id) == {0: ErrorCode.ILLEGAL_GENERATION}
    assert commit(c, "g0", 2, "nope", {0: 6}, 1, j.member_id) == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert commit(c, "g0", 0, "t", {0: 6}) == {0: ErrorCode.UNKNOWN_MEMBER_ID}  # v0 = simple commit
    f1 = c.request(OffsetFetchRequest(group_id="g0", topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
        name="t", partition_indexes=[0, 1, 2])]), 1)
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in f1.topics[0].partitions] == [
        (0, 5, "m"), (1, 7, "m"), (2, -1, "")]
    leave = c.request(LeaveGroupRequest(group_id="g0", member_id=j.member_id), 0)
    assert leave.error_code == 0
    lst = c.request(ListGroupsRequest(states_filter=["Empty"]), 4)
    assert ("g0", "consumer", "Empty") in {(g.group_id, g.protocol_type, g.group_state) for g in lst.groups}
    assert c.request(ListGroupsRequest(types_filter=["consumer"]), 5).groups == []
    # simple commits on the now Empty group, then fetch "all" (v2+) and batched (v8)
    assert commit(c, "g0", 5, "t", {1: 9}) == {1: 0}
    fa = c.request(OffsetFetchRequest(group_id="g0", topics=None), 5)
    assert fa.error_code == 0
    assert {(p.partition_index, p.committed_offset) for p in fa.topics[0].partitions} == {(0, 5), (1, 9)}
    f8 = c.request(OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g0", topics=None),
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id="other", topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])]), 8)
    assert [g.group_id for g in f8.groups] == ["g0", "other"]
    assert f8.groups[1].topics[0].partitions[0].committed_offset == -1
    od = c.request(OffsetDeleteRequest(group_id="g0", topics=[OffsetDeleteRequest.OffsetDeleteRequestTopic(
        name="t", partitions=[OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=1)])]), 0)
    assert od.error_code == 0 and od.topics[0].partitions[0].error_code == 0
    d = c.request(DeleteGroupsRequest(groups_names=["g0", "missing"]), 2)
    assert {(r.group_id, r.error_code) for r in d.results} == {("g0", 0), ("missing", ErrorCode.GROUP_ID_NOT_FOUND)}
    desc = c.request(DescribeGroupsRequest(groups=["g0"]), 5)
    assert desc.groups[0].group_state == "Dead"


def test_member_id_required_static_members_and_batched_leave(raw: Connect) -> None:
    c = raw()
    create_topic(c, "t")
    first = join(c, "g4", 4)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    j = join(c, "g4", 4, first.member_id)
    assert j.error_code == 0 and j.member_id == first.member_id
    s = c.request(SyncGroupRequest(group_id="g4", generation_id=j.generation_id, member_id=j.member_id,
                                   protocol_type="consumer", protocol_name="range", assignments=[]), 5)
    assert s.error_code == 0 and s.protocol_name == "range"
    desc = c.request(DescribeGroupsRequest(groups=["g4"], include_authorized_operations=True), 5)
    g = desc.groups[0]
    assert g.group_state == "Stable" and g.protocol_data == "range" and g.authorized_operations > 0
    assert [m.member_id for m in g.members] == [j.member_id] and g.members[0].client_host.startswith("/")
    # a static member joins (v5): a rebalance starts and waits for the first member, which leaves
    c2 = raw()
    req = JoinGroupRequest(group_id="g4", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                           group_instance_id="inst-1", protocol_type="consumer", protocols=[
                               JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("t"))])
    c2.send(req, 5)
    for _ in range(200):  # the two connections race: wait until the static join parked
        if c.request(DescribeGroupsRequest(groups=["g4"]), 5).groups[0].group_state == "PreparingRebalance":
            break
        time.sleep(0.01)
    leave = c.request(LeaveGroupRequest(group_id="g4", members=[
        LeaveGroupRequest.MemberIdentity(member_id=j.member_id)]), 3)
    assert [m.error_code for m in leave.members] == [0]
    _cid, st = c2.recv(11, 5)
    assert st.error_code == 0 and st.member_id.startswith("inst-1-") and st.leader == st.member_id
    assert st.generation_id == j.generation_id + 1
    leave = c.request(LeaveGroupRequest(group_id="g4", members=[
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="inst-1"),
        LeaveGroupRequest.MemberIdentity(member_id="ghost")]), 5)
    assert leave.error_code == 0
    assert [m.error_code for m in leave.members] == [0, ErrorCode.UNKNOWN_MEMBER_ID]
    hb = c.request(HeartbeatRequest(group_id="g4", generation_id=j.generation_id, member_id=j.member_id), 4)
    assert hb.error_code == ErrorCode.UNKNOWN_MEMBER_ID
