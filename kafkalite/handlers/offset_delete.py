"""OffsetDelete (key 47): v0.

Deletes committed offsets of a group (KIP-496). An Empty group may lose any offset; a live consumer
group (a classic group of protocol type "consumer", or a KIP-848 consumer group: its members' topic names and
regex matches) only offsets of topics none of its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC otherwise);
other live groups answer NON_EMPTY_GROUP; unknown groups GROUP_ID_NOT_FOUND. Partitions that do not exist
(unknown topic or partition index out of range, Kafka's metadata-cache check) get UNKNOWN_TOPIC_OR_PARTITION.
A group-level error leaves the topic list empty.

The list is walked in slices (``kafkalite.runtime.slices``; a 4 MB request can name a million partitions) and the
coordinator gets each existing partition once, so its work is bounded by the partitions that exist.
- Authorization: DELETE on the group (else GROUP_AUTHORIZATION_FAILED), READ on each topic (else
  TOPIC_AUTHORIZATION_FAILED on its partitions).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import OffsetDeleteRequest, OffsetDeleteResponse

R = OffsetDeleteResponse


@handler(OffsetDeleteRequest, min_version=0, max_version=0)
async def offset_delete(ctx: RequestContext, req: OffsetDeleteRequest) -> OffsetDeleteResponse:
    state = ctx.broker
    svc = state.groups
    if svc is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if authz.group_error(ctx, authz.Op.DELETE, req.group_id):
        return R(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    denied = authz.denied(ctx, authz.Op.READ, authz.TOPIC, (t.name for t in req.topics))
    work = Slices()
    errors: dict[tuple[str, int], int] = {}
    wanted: dict[tuple[str, int], None] = {}
    for t in req.topics:
        info = state.topics.get(t.name)
        for p in t.partitions:
            if work.due():
                await work.pause()
            tp = (t.name, p.partition_index)
            if t.name in denied:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif info is None or not 0 <= p.partition_index < info.partitions:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted[tp] = None
    err, per = svc.delete_offsets(req.group_id, list(wanted))
    if err != ErrorCode.NONE:
        return R(error_code=err, throttle_time_ms=0)
    errors.update(per)
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            if work.due():
                await work.pause()
            parts.append(R.OffsetDeleteResponsePartition(
                partition_index=p.partition_index,
                error_code=errors.get((t.name, p.partition_index), ErrorCode.NONE)))
        topics.append(R.OffsetDeleteResponseTopic(name=t.name, partitions=parts))
    return R(error_code=ErrorCode.NONE, throttle_time_ms=0, topics=topics)
