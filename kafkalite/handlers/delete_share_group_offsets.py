"""DeleteShareGroupOffsets (key 92): v0.

Forgets a share group's delivery state for whole topics (tombstones in ``__share_group_state``): the next
member to fetch starts again from ``share.auto.offset.reset``. Only for an existing share group without
members (NON_EMPTY_GROUP / GROUP_ID_NOT_FOUND "Group X not found."); an unknown topic is
UNKNOWN_TOPIC_OR_PARTITION, with Kafka's message.

Authorization (``KafkaApis.handleDeleteShareGroupOffsetsRequest``): DELETE on the group (else a top-level
GROUP_AUTHORIZATION_FAILED with Kafka's message), READ on each topic (else TOPIC_AUTHORIZATION_FAILED with
Kafka's message for that topic, whose state is kept).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.describe_producers import UNKNOWN_MESSAGE
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.share_group_heartbeat import classic_group_exists
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse

_Resp = DeleteShareGroupOffsetsResponse
NO_OFFSETS_MESSAGE = "There is no offset information to delete."


@handler(DeleteShareGroupOffsetsRequest, min_version=0, max_version=0)
async def delete_share_group_offsets(ctx: RequestContext,
                                     req: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    state = ctx.broker
    svc = state.shares
    if svc is None:
        return _Resp(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, responses=[])
    if err := authz.group_error(ctx, authz.Op.DELETE, req.group_id):
        return _Resp(error_code=err, error_message="Group authorization failed.",
                     responses=[])
    if group_id_error(req.group_id) is not None:
        return _Resp(error_code=ErrorCode.INVALID_GROUP_ID, error_message="The group id is invalid.", responses=[])
    await svc.loaded.wait()
    if classic_group_exists(ctx, req.group_id):
        return _Resp(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                     error_message=f"Group {req.group_id} is not a share group.", responses=[])
    if req.group_id not in svc.groups.groups:
        return _Resp(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {req.group_id} not found.",
                     responses=[])
    refused = authz.denied(ctx, authz.Op.READ, authz.TOPIC, (t.topic_name for t in req.topics))
    ids = [state.topics[t.topic_name].topic_id for t in req.topics if t.topic_name not in refused
           and t.topic_name in state.topics and not state.topics[t.topic_name].internal]
    err, codes = svc.delete_offsets(req.group_id, ids)
    if err:
        return _Resp(error_code=err, error_message="The group is not empty.", responses=[])
    out = []
    for t in req.topics:
        info = state.topics.get(t.topic_name)
        if t.topic_name in refused:
            out.append(_Resp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                error_message=authz.TOPIC_DENIED_MESSAGE))
        elif info is None or info.internal:
            out.append(_Resp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=UNKNOWN_MESSAGE))
        else:
            code = codes.get(info.topic_id, 0)
            out.append(_Resp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=code,
                error_message=NO_OFFSETS_MESSAGE if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None))
            if code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:   # Kafka's error entries carry no topic id
                out[-1].topic_id = info.topic_id
    return _Resp(throttle_time_ms=0, error_code=0, responses=out)
