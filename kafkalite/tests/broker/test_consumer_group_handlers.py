"""KIP-848 groups through the broker's handlers (raw requests to an embedded broker): heartbeats, the offset
APIs' member-epoch checks, and how ListGroups / DescribeGroups / DeleteGroups / JoinGroup see a consumer group."""
from __future__ import annotations

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

OC = OffsetCommitRequest


def _commit(c: RawClient, epoch: int, member: str, version: int = 9) -> int:
    req = OC(group_id="g", generation_id_or_member_epoch=epoch, member_id=member, topics=[
        OC.OffsetCommitRequestTopic(name="t", partitions=[OC.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=5)])])
    return int(c.request(req, version).topics[0].partitions[0].error_code)


def _fetch(c: RawClient, member: str | None, epoch: int) -> tuple[int, int]:
    g = OffsetFetchRequest.OffsetFetchRequestGroup(group_id="g", member_id=member, member_epoch=epoch, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])
    resp = c.request(OffsetFetchRequest(groups=[g]), 9).groups[0]
    return resp.error_code, (resp.topics[0].partitions[0].committed_offset if resp.topics else -2)


def test_consumer_group_through_the_handlers() -> None:
    with Broker() as b, RawClient(b.host, b.port) as c:
        c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="t", num_partitions=2, replication_factor=1)], timeout_ms=5000), 5)
        hb = c.request(ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=0,
                                                     rebalance_timeout_ms=5000, subscribed_topic_names=["t"],
                                                     topic_partitions=[]), 1)
        # Kafka 4.1+ starts a new group at epoch 1; the first member's subscription bumps it to 2
        assert hb.error_code == 0 and hb.member_epoch == 2 and hb.heartbeat_interval_ms == 5000
        assert sorted(hb.assignment.topic_partitions[0].partitions) == [0, 1]
        # v1 requires a client-generated member id
        bad = c.request(ConsumerGroupHeartbeatRequest(group_id="g", member_epoch=0, rebalance_timeout_ms=1,
                                                      subscribed_topic_names=["t"], topic_partitions=[]), 1)
        assert bad.error_code == ErrorCode.INVALID_REQUEST
        # offsets: the member's epoch must be current, v9+, members only while the group has members
        assert _commit(c, 2, "m1") == 0
        assert _commit(c, 1, "m1") == ErrorCode.STALE_MEMBER_EPOCH
        assert _commit(c, 2, "m1", version=8) == ErrorCode.UNSUPPORTED_VERSION
        assert _commit(c, -1, "") == ErrorCode.UNKNOWN_MEMBER_ID
        assert _fetch(c, "m1", 2) == (0, 5)
        assert _fetch(c, "m1", 7)[0] == ErrorCode.STALE_MEMBER_EPOCH
        assert _fetch(c, None, -1) == (0, 5)     # an admin fetch
        # the group as the other group APIs see it
        listed = c.request(ListGroupsRequest(), 5).groups
        assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == \
            [("g", "consumer", "Stable", "consumer")]
        assert c.request(ListGroupsRequest(types_filter=["classic"]), 5).groups == []
        assert c.request(DescribeGroupsRequest(groups=["g"]), 5).groups[0].group_state == "Dead"
        d = c.request(ConsumerGroupDescribeRequest(group_ids=["g", "nope"]), 1).groups
        assert (d[0].group_state, d[0].group_epoch, [m.member_id for m in d[0].members]) == ("Stable", 2, ["m1"])
        # subscribed by names: the regex is "" as Kafka 4.4 describes it (ConsumerGroupMember's default), not null
        assert (d[0].members[0].subscribed_topic_names, d[0].members[0].subscribed_topic_regex) == (["t"], "")
        assert d[1].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        # a classic JoinGroup is served by the consumer group (a classic-protocol member, Kafka 4.0): a member id
        # first (v4+), and only the "consumer" embedded protocol
        def join(ptype: str) -> object:
            return c.request(JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                              member_id="", protocol_type=ptype, protocols=[
                                                  JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                                          metadata=b"")]), 5)
        assert join("connect").error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        first = join("consumer")
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
        dg = c.request(DeleteGroupsRequest(groups_names=["g"]), 2).results[0]
        assert dg.error_code == ErrorCode.NON_EMPTY_GROUP
        left = c.request(ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=-1), 1)
        assert left.error_code == 0 and left.member_epoch == -1
        assert c.request(ListGroupsRequest(), 5).groups[0].group_state == "Empty"
        assert _commit(c, -1, "") == 0          # an empty group takes admin commits
        assert c.request(DeleteGroupsRequest(groups_names=["g"]), 2).results[0].error_code == 0
        assert c.request(ListGroupsRequest(), 5).groups == []
        assert _fetch(c, None, -1) == (0, -1)    # its offsets went with it
