"""OffsetForLeaderEpoch (key 23): v0–v4 (librdkafka uses exactly v2; Java validates positions only when v3+
is offered).

kafkalite leads every partition at leader epoch 0: epoch 0 ends at the log end offset. Logs written by a
real Kafka carry older epochs in ``leader-epoch-checkpoint``; those are answered from that history (largest
epoch <= requested and its end offset), and an unknown epoch with UNDEFINED_EPOCH -1 / offset -1. A CurrentLeaderEpoch (v2+) above ours answers
UNKNOWN_LEADER_EPOCH; below ours, FENCED_LEADER_EPOCH.
"""
from __future__ import annotations

from typing import Any

from kafkalite.handlers.registry import RequestContext, handler
from wire.errors import ErrorCode
from wire.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

LEADER_EPOCH = 0
_Part = OffsetForLeaderEpochResponse.EpochEndOffset


def end_offset(plog: Any, epoch: int) -> tuple[int, int]:
    """(epoch, end offset) per the log's leader-epoch history; our own epoch 0 ends at the log end offset."""
    latest = plog.latest_epoch() if hasattr(plog, "latest_epoch") else -1
    if epoch == LEADER_EPOCH and latest <= LEADER_EPOCH:
        return LEADER_EPOCH, plog.log_end_offset
    if epoch < 0 or not hasattr(plog, "end_offset_for_epoch"):
        return -1, -1
    found = plog.end_offset_for_epoch(epoch)
    return int(found[0]), int(found[1])


@handler(OffsetForLeaderEpochRequest, min_version=0, max_version=4)
async def offset_for_leader_epoch(ctx: RequestContext,
                                  req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    state = ctx.broker
    topics_out = []
    for t in req.topics:
        parts: list[Any] = []
        for p in t.partitions:
            plog = state.logs.get_log(t.topic, p.partition) if t.topic in state.topics else None
            if plog is None:
                parts.append(_Part(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
                continue
            current = p.current_leader_epoch if ctx.version >= 2 else -1
            if current > LEADER_EPOCH:
                parts.append(_Part(error_code=ErrorCode.UNKNOWN_LEADER_EPOCH, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
            elif 0 <= current < LEADER_EPOCH:
                parts.append(_Part(error_code=ErrorCode.FENCED_LEADER_EPOCH, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
            else:
                epoch, end = end_offset(plog, p.leader_epoch)
                parts.append(_Part(error_code=ErrorCode.NONE, partition=p.partition, leader_epoch=epoch,
                                   end_offset=end))
        topics_out.append(OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(topic=t.topic,
                                                                                  partitions=parts))
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=topics_out)
