"""DeleteRecords (key 21): v0–v2.

Moves each partition's log start offset forward to ``Offset`` (-1 = the high watermark); whole segments
below it are deleted by storage. Answers the new low watermark. An offset beyond the high watermark answers
OFFSET_OUT_OF_RANGE; unknown partitions UNKNOWN_TOPIC_OR_PARTITION; a topic whose cleanup.policy lacks
"delete" POLICY_VIOLATION (as Kafka's Partition.deleteRecordsOnLeader); an internal topic's partitions
INVALID_TOPIC_EXCEPTION (ReplicaManager.deleteRecords: "Cannot delete records of internal topic"), whatever
its cleanup.policy, so group, transaction and share state is never cut away.
- Authorization: DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED on its partitions.
"""
from __future__ import annotations

from typing import Any

from kafkalite import authz
from kafkalite.errors import error_code_for
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import INTERNAL_TOPICS
from kafkalite.runtime.slices import Slices
from kafkalite_storage.errors import StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DeleteRecordsRequest, DeleteRecordsResponse

_Part = DeleteRecordsResponse.DeleteRecordsPartitionResult


@handler(DeleteRecordsRequest, min_version=0, max_version=2)
async def delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    state = ctx.broker
    topics = []
    work = Slices()   # a request may list a million partitions: each deletion is independent, done in slices
    denied = authz.denied(ctx, authz.Op.DELETE, authz.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        parts: list[Any] = []
        for p in t.partitions:
            if work.due():
                await work.pause()
            if t.name in denied:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            plog = state.logs.get_log(t.name, p.partition_index) if t.name in state.topics else None
            if plog is None:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            if t.name in INTERNAL_TOPICS:   # ReplicaManager.deleteRecords, whatever the topic's cleanup.policy
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ErrorCode.INVALID_TOPIC_EXCEPTION))
                continue
            if "delete" not in plog.config.cleanup_policy:  # Kafka: compact-only topics refuse it
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ErrorCode.POLICY_VIOLATION))
                continue
            offset = plog.high_watermark if p.offset == -1 else p.offset
            if offset < 0 or offset > plog.high_watermark:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=ErrorCode.OFFSET_OUT_OF_RANGE))
                continue
            try:
                low = plog.delete_records_before(offset)
            except StorageError as exc:
                parts.append(_Part(partition_index=p.partition_index, low_watermark=-1,
                                   error_code=error_code_for(exc)))
                continue
            parts.append(_Part(partition_index=p.partition_index, low_watermark=low, error_code=ErrorCode.NONE))
        topics.append(DeleteRecordsResponse.DeleteRecordsTopicResult(name=t.name, partitions=parts))
    return DeleteRecordsResponse(throttle_time_ms=0, topics=topics)
