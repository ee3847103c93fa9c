"""ConsumerGroupDescribe (key 69): v0-v1 -- KIP-848 consumer groups.

Per group: state (Empty, Assigning, Reconciling, Stable), group epoch, target assignment epoch, the assignor,
and per member its epoch, client, subscription, current assignment and target assignment (topic ids and names).
v1 adds MemberType (1: a consumer-protocol member, 0: a classic-protocol member of a converted group). A member
that subscribed by names has SubscribedTopicRegex "" (Kafka's ConsumerGroupMember default), not null. An unknown group, or a classic one, is GROUP_ID_NOT_FOUND;
while the coordinator loads __consumer_offsets at start, COORDINATOR_LOAD_IN_PROGRESS (retriable).
The group ids are walked in slices (kafkalite.runtime.slices): each answer reads the coordinator's state only.

Authorization (Kafka 4.x ``KafkaApis.handleConsumerGroupDescribe``): DESCRIBE on each group, else that group
answers GROUP_AUTHORIZATION_FAILED; AuthorizedOperations (when asked for) are the principal's operations on
the group. With an authorizer, a group whose members' assignments or target assignments name a topic the
principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED ("The group has described topic(s) that the
client is not authorized to describe.") and no members.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse

R = ConsumerGroupDescribeResponse
NOT_REQUESTED = -(2**31)
HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _assignment(a: dict, names: dict) -> ConsumerGroupDescribeResponse.Assignment:
    return R.Assignment(topic_partitions=[
        R.TopicPartitions(topic_id=t, topic_name=names.get(t, ""), partitions=sorted(ps))
        for t, ps in sorted(a.items(), key=lambda x: str(x[0])) if ps])


@handler(ConsumerGroupDescribeRequest, min_version=0, max_version=1)
async def consumer_group_describe(ctx: RequestContext,
                                  req: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    state = ctx.broker
    svc = state.groups
    names = {info.topic_id: name for name, info in state.topics.items()}
    out = []
    work = Slices()   # a request may name a million groups: answered in slices of the event loop
    for gid in req.group_ids:
        if work.due():
            await work.pause()
        if err := authz.group_error(ctx, authz.Op.DESCRIBE, gid):
            out.append(R.DescribedGroup(group_id=gid, error_code=err))
            continue
        if svc is None:
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
            continue
        coord = svc.consumer.coordinator
        if coord.loading:   # __consumer_offsets still being read at start: Kafka's retriable answer
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            continue
        g = coord.groups.get(gid)
        if g is None:
            classic = gid in svc.coordinator.groups
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=(
                f"Group {gid} is not a consumer group." if classic else f"Group {gid} not found.")))
            continue
        ops = authz.group_ops(ctx, gid) if req.include_authorized_operations else NOT_REQUESTED
        described = {names.get(t, "") for m in g.members.values() for a in (m.assigned, g.target.get(m.member_id, {}))
                     for t, ps in a.items() if ps} - {""}
        if authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, described):
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                        error_message=HIDDEN_TOPICS, members=[]))
            continue
        out.append(R.DescribedGroup(
            group_id=gid, group_state=g.state(), group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
            assignor_name=coord._assignor(g), authorized_operations=ops, members=[
                R.Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                         member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                         subscribed_topic_names=sorted(m.subscribed_topic_names),
                         subscribed_topic_regex=m.subscribed_topic_regex or "",   # Kafka: "" for none
                         assignment=_assignment(m.assigned, names),
                         target_assignment=_assignment(g.target.get(m.member_id, {}), names),
                         member_type=(0 if m.classic is not None else 1) if ctx.version >= 1 else -1)
                for m in g.members.values()]))
    return R(throttle_time_ms=0, groups=out)
