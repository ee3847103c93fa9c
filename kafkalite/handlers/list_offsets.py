"""ListOffsets (key 2): v0–v9.

Special timestamps: -1 LATEST (the log end offset, or the last stable offset under read_committed), -2
EARLIEST (log start offset), -3 MAX_TIMESTAMP (v7+: the record with the largest timestamp), -4 EARLIEST_LOCAL
(v8+: no tiered storage, so = earliest), -5 LATEST_TIERED (v9+: nothing is tiered, so offset -1). Any other
timestamp: the first offset whose record timestamp is >= it (from the time index), or -1 if none.

v0 answers in the old format: ``OldStyleOffsets`` (here at most one offset). v1+ carry Timestamp and
Offset; v4+ a LeaderEpoch (the partition's current one, -1 when nothing was found).

Timestamp and MAX_TIMESTAMP lookups read records (bounded streaming decompression in storage; work follows
the bytes present, never a client-claimed RecordsCount), which can take long for a large batch: they run in a
worker thread so the event loop keeps answering others. LATEST/EARLIEST answer inline.
- Authorization: DESCRIBE on each topic, else TOPIC_AUTHORIZATION_FAILED on its partitions.
"""
from __future__ import annotations

from typing import Any

import trio

from kafkalite import authz
from kafkalite.errors import error_code_for
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state import leader_epoch
from kafkalite_storage.errors import StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ListOffsetsRequest, ListOffsetsResponse

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
_Part = ListOffsetsResponse.ListOffsetsPartitionResponse


def lookup(plog: Any, timestamp: int, read_committed: bool) -> tuple[int, int] | None:
    """(offset, timestamp) for a ListOffsets query, or None when nothing matches."""
    if timestamp == LATEST:
        end = getattr(plog, "last_stable_offset", plog.high_watermark) if read_committed else plog.high_watermark
        return end, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return plog.log_start_offset, -1
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp_offset()
        return None if found is None else (found[0], found[1])
    if timestamp == LATEST_TIERED or timestamp < 0:
        return None
    found = plog.offset_for_timestamp(timestamp)
    return None if found is None else (found[0], found[1])


@handler(ListOffsetsRequest, min_version=0, max_version=9)
async def list_offsets(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    state = ctx.broker
    version = ctx.version
    read_committed = version >= 2 and req.isolation_level == 1
    topics_out = []
    work = Slices()   # a request may list a million partitions: each lookup is independent, done in slices
    denied = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        parts: list[Any] = []
        for p in t.partitions:
            if work.due():
                await work.pause()
            plog = state.logs.get_log(t.name, p.partition_index) if t.name in state.topics else None
            if t.name in state.topics and t.name not in denied:
                code = state.placement.leader_error(t.name, p.partition_index)
                if code:   # several brokers: only the leader answers (kafkalite.cluster)
                    parts.append(_Part(partition_index=p.partition_index, error_code=code, old_style_offsets=[],
                                       timestamp=-1, offset=-1, leader_epoch=-1))
                    continue
            if t.name in denied:
                parts.append(_Part(partition_index=p.partition_index,
                                   error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, old_style_offsets=[],
                                   timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            if plog is None:
                parts.append(_Part(partition_index=p.partition_index,
                                   error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, old_style_offsets=[],
                                   timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            try:
                if p.timestamp >= 0 or p.timestamp == MAX_TIMESTAMP:
                    found = await trio.to_thread.run_sync(lookup, plog, p.timestamp, read_committed)
                else:
                    found = lookup(plog, p.timestamp, read_committed)
            except StorageError as exc:
                parts.append(_Part(partition_index=p.partition_index, error_code=error_code_for(exc),
                                   old_style_offsets=[], timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            if found is None:
                parts.append(_Part(partition_index=p.partition_index, error_code=ErrorCode.NONE,
                                   old_style_offsets=[], timestamp=-1, offset=-1, leader_epoch=-1))
            else:
                offset, ts = found
                olds = [offset] if version == 0 and p.max_num_offsets > 0 else []
                parts.append(_Part(partition_index=p.partition_index, error_code=ErrorCode.NONE,
                                   old_style_offsets=olds, timestamp=ts, offset=offset,
                                   leader_epoch=leader_epoch(plog)))
        topics_out.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics_out)
