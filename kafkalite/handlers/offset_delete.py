"""OffsetDelete (key 47): v0.

Deletes committed offsets of a group (KIP-496). An Empty group may lose any offset; a live consumer
group only offsets of topics none of its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise);
other live groups answer NON_EMPTY_GROUP; unknown groups GROUP_ID_NOT_FOUND. Partitions of unknown
topics get UNKNOWN_TOPIC_OR_PARTITION. A group-level error leaves the topic list empty.
"""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from wire.errors import ErrorCode
from wire.messages import OffsetDeleteRequest, OffsetDeleteResponse

R = OffsetDeleteResponse


@handler(OffsetDeleteRequest, min_version=0, max_version=0)
async def offset_delete(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    svc = ctx.broker.groups
    if svc is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    errors: dict[tuple[str, int], int] = {}
    wanted = []
    for t in req.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if t.name not in ctx.broker.topics:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append(tp)
    err, per = svc.delete_offsets(req.group_id, wanted)
    if err != ErrorCode.NONE:
        return R(error_code=err, throttle_time_ms=0)
    errors.update(per)
    return R(error_code=ErrorCode.NONE, throttle_time_ms=0, topics=[
        R.OffsetDeleteResponseTopic(name=t.name, partitions=[
            R.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                            error_code=errors.get((t.name, p.partition_index), ErrorCode.NONE))
            for p in t.partitions])
        for t in req.topics])
