"""AlterShareGroupOffsets (key 91): v0.

Sets share-partition start offsets of a share group with no members (NON_EMPTY_GROUP otherwise): each becomes
a new state epoch starting at the given offset, written to ``__share_group_state`` as a ShareSnapshot, and every
record from there on is delivered afresh. An unknown group is created, empty, as Kafka 4.x does
(``GroupMetadataManager.alterShareGroupOffsets``: offsets can be set before the first member joins); a group id
a classic group holds is GROUP_ID_NOT_FOUND ("Group X is not a share group."). Unknown topics or partitions
answer UNKNOWN_TOPIC_OR_PARTITION per partition, with Kafka's message.

Authorization (``KafkaApis.handleAlterShareGroupOffsetsRequest``): READ on the group (else a top-level
GROUP_AUTHORIZATION_FAILED with Kafka's message), READ on each topic, checked before its existence (else
TOPIC_AUTHORIZATION_FAILED for its partitions, nothing altered there).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.describe_producers import UNKNOWN_MESSAGE
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.share_group_heartbeat import classic_group_exists
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse

_Resp = AlterShareGroupOffsetsResponse


@handler(AlterShareGroupOffsetsRequest, min_version=0, max_version=0)
async def alter_share_group_offsets(ctx: RequestContext,
                                    req: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    state = ctx.broker
    svc = state.shares
    if svc is None:
        return _Resp(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, responses=[])
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return _Resp(error_code=err, error_message="Group authorization failed.",
                     responses=[])
    if group_id_error(req.group_id) is not None:
        return _Resp(error_code=ErrorCode.INVALID_GROUP_ID, error_message="The group id is invalid.", responses=[])
    await svc.loaded.wait()
    if classic_group_exists(ctx, req.group_id):
        return _Resp(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                     error_message=f"Group {req.group_id} is not a share group.", responses=[])
    wanted: dict = {}
    bad: dict[tuple[str, int], int] = {}
    refused = authz.denied(ctx, authz.Op.READ, authz.TOPIC, (t.topic_name for t in req.topics))
    for t in req.topics:
        info = state.topics.get(t.topic_name)
        for p in t.partitions:
            if t.topic_name in refused:
                bad[(t.topic_name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or info.internal or not 0 <= p.partition_index < info.partitions:
                bad[(t.topic_name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.start_offset < -1:
                bad[(t.topic_name, p.partition_index)] = ErrorCode.INVALID_REQUEST
            else:
                wanted[(info.topic_id, p.partition_index)] = p.start_offset
    err, codes = svc.alter_offsets(req.group_id, wanted)
    if err:
        return _Resp(error_code=err, error_message="The group is not empty." if err == ErrorCode.NON_EMPTY_GROUP
                     else None, responses=[])
    out = []
    for t in req.topics:
        info = state.topics.get(t.topic_name)
        parts = []
        for p in t.partitions:
            code = bad.get((t.topic_name, p.partition_index),
                           codes.get((info.topic_id, p.partition_index), 0) if info is not None else 0)
            parts.append(_Resp.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=code,
                error_message=UNKNOWN_MESSAGE if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None))
        topic = _Resp.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=parts)
        if info is not None:
            topic.topic_id = info.topic_id
        out.append(topic)
    return _Resp(throttle_time_ms=0, error_code=0, responses=out)
