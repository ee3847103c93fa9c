"""ListOffsets (key 2): v0–v11.

Special timestamps: -1 LATEST (the log end offset, or the last stable offset under read_committed), -2
EARLIEST (log start offset), -3 MAX_TIMESTAMP (v7+: the record with the largest timestamp), -4 EARLIEST_LOCAL
(v8+: no tiered storage, so = earliest), -5 LATEST_TIERED (v9+: nothing is tiered, so offset -1), -6
EARLIEST_PENDING_UPLOAD (v11+, KIP-1023: nothing waits for upload, offset -1). Any other timestamp: the first
offset whose record timestamp is >= it (from the time index), or -1 if none. From v1, a negative timestamp this
version does not know answers UNSUPPORTED_VERSION and a partition named twice INVALID_REQUEST, as Kafka's
(``timestampMinSupportedVersion``). v10 adds TimeoutMs, for tiered storage's asynchronous lookups: ignored.

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

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
#: the first version that knows each special timestamp (v1+ requests; Kafka's timestampMinSupportedVersion)
MIN_VERSION = {EARLIEST: 1, LATEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
               EARLIEST_PENDING_UPLOAD: 11}
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
    if timestamp < 0:   # LATEST_TIERED, EARLIEST_PENDING_UPLOAD: nothing is tiered
        return None
    found = plog.offset_for_timestamp(timestamp)
    return None if found is None else (found[0], found[1])


def _error(index: int, code: int) -> Any:
    return _Part(partition_index=index, error_code=code, old_style_offsets=[], timestamp=-1, offset=-1,
                 leader_epoch=-1)


@handler(ListOffsetsRequest, min_version=0, max_version=11)
async def list_offsets(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    state = ctx.broker
    version = ctx.version
    read_committed = version >= 2 and req.isolation_level == 1
    topics_out = []
    work = Slices()   # a request may list a million partitions: each lookup is independent, done in slices
    denied = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in req.topics))
    seen: set[tuple[str, int]] = set()
    twice: set[tuple[str, int]] = set()
    if version >= 1:
        for t in req.topics:
            for p in t.partitions:
                key = (t.name, p.partition_index)
                (twice if key in seen else seen).add(key)
    for t in req.topics:
        parts: list[Any] = []
        for p in t.partitions:
            if work.due():
                await work.pause()
            if t.name not in denied and version >= 1:
                if (t.name, p.partition_index) in twice:
                    parts.append(_error(p.partition_index, ErrorCode.INVALID_REQUEST))
                    continue
                if p.timestamp < 0 and version < MIN_VERSION.get(p.timestamp, 1 << 15):
                    parts.append(_error(p.partition_index, ErrorCode.UNSUPPORTED_VERSION))
                    continue
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
