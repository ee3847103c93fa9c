"""ShareGroupDescribe (key 77): v0–v1 (v0, Kafka 4.0's early access, has the same fields).

Per group: state (Empty / Stable), group epoch, assignment epoch, assignor ``simple``, and each member's epoch,
client id and host, rack, subscribed topic names and assigned partitions (topic id and name). An unknown
group, or one that is a classic group, is GROUP_ID_NOT_FOUND, as Kafka answers.

Authorization (``KafkaApis.handleShareGroupDescribe``): DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED),
AuthorizedOperations when asked for; a group whose members are assigned a topic the principal may not
DESCRIBE answers TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.share_group_heartbeat import classic_group_exists
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse

_Resp = ShareGroupDescribeResponse
_UNKNOWN_OPERATIONS = -(2**31)
HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


@handler(ShareGroupDescribeRequest, min_version=0, max_version=1)
async def share_group_describe(ctx: RequestContext, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    state = ctx.broker
    svc = state.shares
    out = []
    for gid in req.group_ids:
        def failed(code: int, msg: str | None = None, gid: str = gid) -> _Resp.DescribedGroup:
            return _Resp.DescribedGroup(error_code=code, error_message=msg, group_id=gid, group_state="",
                                        authorized_operations=_UNKNOWN_OPERATIONS)
        if err := authz.group_error(ctx, authz.Op.DESCRIBE, gid):
            out.append(_Resp.DescribedGroup(group_id=gid, error_code=err))
            continue
        if svc is None:
            out.append(failed(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            continue
        if group_id_error(gid) is not None:
            out.append(failed(ErrorCode.INVALID_GROUP_ID))
            continue
        if svc.loading:
            out.append(failed(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            continue
        g = svc.groups.groups.get(gid)
        if g is None or classic_group_exists(ctx, gid):
            out.append(failed(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} not found."))
            continue
        members = []
        for m in g.members.values():
            tps: dict = {}
            for tid, p in sorted(m.assignment):
                tps.setdefault(tid, []).append(p)
            members.append(_Resp.Member(
                member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=list(m.subscribed),
                assignment=_Resp.Assignment(topic_partitions=[
                    _Resp.TopicPartitions(topic_id=tid, topic_name=svc.topic_name(tid) or "", partitions=ps)
                    for tid, ps in tps.items()])))
        seen = {tp.topic_name for m in members for tp in m.assignment.topic_partitions} - {""}
        if authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, seen):
            out.append(_Resp.DescribedGroup(group_id=gid, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            error_message=HIDDEN_TOPICS, members=[]))
            continue
        ops = authz.group_ops(ctx, gid) if req.include_authorized_operations else _UNKNOWN_OPERATIONS
        out.append(_Resp.DescribedGroup(error_code=0, group_id=gid, group_state=g.state, group_epoch=g.epoch,
                                        assignment_epoch=g.assignment_epoch, assignor_name="simple",
                                        members=members, authorized_operations=ops))
    return _Resp(throttle_time_ms=0, groups=out)
