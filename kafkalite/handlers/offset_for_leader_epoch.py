"""OffsetForLeaderEpoch (key 23): v0–v4 (librdkafka uses exactly v2; Java validates positions only when v3+
is offered).

kafkalite leads every partition at the log's latest leader epoch (0 for logs it created; a data dir written by
Kafka keeps its history in ``leader-epoch-checkpoint``). The current epoch ends at the log end offset; older
epochs are answered from the history (largest epoch <= requested and its end offset); an epoch above ours,
or before the history, with UNDEFINED_EPOCH -1 / offset -1. A CurrentLeaderEpoch (v2+) above ours answers
UNKNOWN_LEADER_EPOCH; below ours, FENCED_LEADER_EPOCH.
- Authorization: DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED on its partitions.
- Several brokers (``kafkalite.cluster``): only the partition's leader answers; others NOT_LEADER_OR_FOLLOWER
  (LEADER_NOT_AVAILABLE without a running leader). The leader's epoch history gets a new epoch at its log end
  each time leadership moves, so a client validating its position after a move gets the epoch boundary.
"""
from __future__ import annotations

from typing import Any

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.state import leader_epoch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

_Part = OffsetForLeaderEpochResponse.EpochEndOffset


def end_offset(plog: Any, epoch: int) -> tuple[int, int]:
    """(largest epoch <= requested, its end offset) from the log's epoch history; the current epoch ends at
    the log end offset; (-1, -1) when the requested epoch precedes the history."""
    current = leader_epoch(plog)
    if epoch >= current:
        return (current, plog.log_end_offset) if epoch == current else (-1, -1)
    if epoch < 0 or not hasattr(plog, "end_offset_for_epoch"):
        return -1, -1
    found = plog.end_offset_for_epoch(epoch)
    return int(found[0]), int(found[1])


@handler(OffsetForLeaderEpochRequest, min_version=0, max_version=4)
async def offset_for_leader_epoch(ctx: RequestContext,
                                  req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    state = ctx.broker
    topics_out = []
    denied = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.topic for t in req.topics))
    for t in req.topics:
        parts: list[Any] = []
        for p in t.partitions:
            plog = state.logs.get_log(t.topic, p.partition) if t.topic in state.topics else None
            if t.topic in denied:
                parts.append(_Part(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
                continue
            if t.topic in state.topics:   # several brokers: the leader answers
                code = state.placement.leader_error(t.topic, p.partition)
                if code:
                    parts.append(_Part(error_code=code, partition=p.partition, leader_epoch=-1, end_offset=-1))
                    continue
            if plog is None:
                parts.append(_Part(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
                continue
            ours = leader_epoch(plog)
            current = p.current_leader_epoch if ctx.version >= 2 else -1
            if current > ours:
                parts.append(_Part(error_code=ErrorCode.UNKNOWN_LEADER_EPOCH, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
            elif 0 <= current < ours:
                parts.append(_Part(error_code=ErrorCode.FENCED_LEADER_EPOCH, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
            else:
                epoch, end = end_offset(plog, p.leader_epoch)
                parts.append(_Part(error_code=ErrorCode.NONE, partition=p.partition, leader_epoch=epoch,
                                   end_offset=end))
        topics_out.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic,
                                                                                  partitions=parts))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics_out)
