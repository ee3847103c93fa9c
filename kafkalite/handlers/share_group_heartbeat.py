"""ShareGroupHeartbeat (key 76): v0-v1. v1 is KIP-932's GA version; v0, Kafka 4.0's early access (removed in 4.1),
is what the Java client 3.9.1's KafkaShareConsumer speaks: there the coordinator names a member that joins with
an empty MemberId (a random Kafka Uuid string), otherwise the same. ``--emulate-kafka 4.3`` does not advertise v0.

Membership of a share group (``kafkalite.coordinator.share.group``): MemberEpoch 0 joins (SubscribedTopicNames
required), -1 leaves (its share session stays until it is closed: a closing consumer's last acknowledgements
may come after its leave), otherwise the member's current epoch (FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID
otherwise). The response carries the member's partitions (by topic
id) whenever its assignment epoch moved, null otherwise. An empty or unstorable group id is INVALID_GROUP_ID,
a group id used by a classic group GROUP_ID_NOT_FOUND ("not a share group"), and while
``__share_group_state`` loads COORDINATOR_LOAD_IN_PROGRESS. Membership changes are written to ``__consumer_offsets``
(Kafka's share group record types) before the answer; a failed write answers COORDINATOR_NOT_AVAILABLE.

Authorization (``KafkaApis.handleShareGroupHeartbeat``): READ on the group, else GROUP_AUTHORIZATION_FAILED;
a non-empty SubscribedTopicNames needs DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

import uuid

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.coordinator.share.records import java_uuid_str
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse

_Resp = ShareGroupHeartbeatResponse


def classic_group_exists(ctx: RequestContext, group_id: str) -> bool:
    state = ctx.broker
    groups = getattr(getattr(state.groups, "coordinator", None), "groups", {})
    return group_id in groups


@handler(ShareGroupHeartbeatRequest, min_version=0, max_version=1)
async def share_group_heartbeat(ctx: RequestContext, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    state = ctx.broker
    svc = state.shares
    if svc is None:
        return _Resp(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return _Resp(error_code=err)
    if req.subscribed_topic_names and authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, req.subscribed_topic_names):
        return _Resp(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    bad = group_id_error(req.group_id)
    if bad is not None:
        return _Resp(error_code=bad, error_message="The group id is invalid.")
    if classic_group_exists(ctx, req.group_id):
        return _Resp(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {req.group_id} is not a share group.")
    subscribed = list(req.subscribed_topic_names) if req.subscribed_topic_names is not None else None
    await svc.membership.ensure_topic()      # membership is written to __consumer_offsets
    member_id = req.member_id
    if ctx.version == 0 and not member_id and req.member_epoch == 0:   # v0: the coordinator names the member
        member_id = java_uuid_str(uuid.uuid4())
    r = svc.heartbeat(req.group_id, member_id, req.member_epoch, req.rack_id, subscribed,
                      ctx.client_id or "", f"/{ctx.client_host}")
    assignment = None
    if r.assignment is not None:
        assignment = _Resp.Assignment(topic_partitions=[
            _Resp.TopicPartitions(topic_id=tid, partitions=parts) for tid, parts in r.assignment.items()])
    return _Resp(throttle_time_ms=0, error_code=r.error, error_message=r.message,
                 member_id=r.member_id if not r.error else None, member_epoch=r.member_epoch,
                 heartbeat_interval_ms=r.interval_ms, assignment=assignment)
