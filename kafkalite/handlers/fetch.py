"""Fetch (key 1): v4–v18 (v4 is the first with isolation level and LSO; every client sends ≥4 when offered).
v18 adds a follower's known high watermark (KIP-1166, tagged): a consumer's fetch never carries one and kafkalite
has no Kafka followers, so it is read and ignored.

- Long poll: if fewer than MinBytes are available (and no partition errored), wait until an append to one of
  the requested partitions (per-partition events set by Produce, see BrokerState.append_waiter) or until
  MaxWaitMs passes — never a sleep loop. Broker shutdown wakes every poll.
- Sizes: MaxBytes (v3+) bounds the response, PartitionMaxBytes each partition; whole batches only, and the
  first partition that has data returns at least one batch even when it is larger than both (KIP-74).
- Records are file regions ``(file handle, position, length)`` from storage, sent with sendfile by the
  connection (which pins the handle's descriptor while it sends). An
  offset inside a batch returns the whole batch; clients skip the earlier records.
- v13+: topics are named by topic id; an unknown id answers UNKNOWN_TOPIC_ID.
- OFFSET_OUT_OF_RANGE below the log start offset or beyond the log end offset. An error partition carries
  -1 for the high watermark, last stable offset and log start offset (the client resets with ListOffsets),
  as Kafka's; AbortedTransactions is empty when the partition was refused before a read, null when its read
  failed (``_error_part``).
- Several brokers (``kafkalite.cluster``): a partition this broker does not lead answers NOT_LEADER_OR_FOLLOWER
  with the KIP-951 current leader (v12+) and its endpoint (v16+); consumers never read past the high
  watermark (records the ISR does not all hold yet are cut off at the batch boundary).
- No fetch sessions: SessionId is always 0, so clients keep sending full fetch requests (KIP-227 allows it).
- Isolation: LastStableOffset = the storage's LSO; read_committed fetches never return batches at or past
  it (regions are trimmed at batch boundaries);
  AbortedTransactions is null for read_uncommitted and the storage's list (or empty) for read_committed.
- Flexible versions: an empty Records field is zero-length bytes, never null (librdkafka rejects null).
- Client quotas (consumer_byte_rate, kafkalite.quotas): a fetch is capped at the quota's window allowance;
  one that would break the quota is answered empty with throttle_time_ms (its bytes not counted), as Kafka.
- Authorization: READ on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions; a fetch as a follower
  (replica id >= 0) needs CLUSTER_ACTION on the cluster instead (KafkaApis).
- A request naming ``SLICE_AFTER`` partitions or more is read in slices (``kafkalite.runtime.slices``): on a broker of
  many partitions each read may open files, and other clients are answered in between. Its partitions'
  records of up to ``INLINE_BYTES`` are read into the response at once rather than sent as file regions
  (which would reopen each file as the response is sent).
"""
from __future__ import annotations

import os
import uuid
from typing import Any

import trio

from kafkalite import authz
from kafkalite.errors import error_code_for
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state import BrokerState
from kafkalite_storage.errors import OffsetOutOfRangeError, StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import FetchRequest, FetchResponse

_Part = FetchResponse.PartitionData
_ZERO_UUID = uuid.UUID(int=0)
READ_COMMITTED = 1
#: requests naming more partitions than this are read in slices, their partitions' small regions read at once
SLICE_AFTER = 128
INLINE_BYTES = 16 * 1024
INLINE_TOTAL = 4 * 1024 * 1024


def _error_part(index: int, code: ErrorCode, read: bool = False) -> Any:
    """A partition that failed carries no offsets (-1). One refused before any read (unknown topic or partition,
    authorization) is Kafka's ``FetchResponse.partitionResponse``: an empty AbortedTransactions list; one whose
    read failed (``read``: OFFSET_OUT_OF_RANGE, a storage error, not the leader) is ReplicaManager's
    ``createLogReadResult(e)``: no aborted transactions at all (null)."""
    return _Part(partition_index=index, error_code=code, high_watermark=-1, last_stable_offset=-1,
                 log_start_offset=-1, aborted_transactions=None if read else [], preferred_read_replica=-1,
                 records=b"")


def trim_regions(regions: list[tuple[Any, int, int]], end_offset: int) -> list[tuple[Any, int, int]]:
    """Cut file regions of whole batches so no batch starting at or after ``end_offset`` is included.

    Only read_committed fetches with an open transaction (LSO < high watermark) need this: it reads the
    12-byte BaseOffset/BatchLength prefix of each batch in the regions with pread, never the records.
    """
    out: list[tuple[Any, int, int]] = []
    for fd, pos, length in regions:
        cur, end = pos, pos + length
        while cur + 12 <= end:
            head = os.pread(fd, 12, cur) if isinstance(fd, int) else fd.pread(12, cur)
            if len(head) < 12 or int.from_bytes(head[:8], "big", signed=True) >= end_offset:
                break
            cur += 12 + int.from_bytes(head[8:12], "big", signed=True)
        cur = min(cur, end)
        if cur > pos:
            out.append((fd, pos, cur - pos))
        if cur < end:
            break
    return out


class _Budget:
    """What a fetch has read so far: MaxBytes left, bytes of records, whether a partition erred."""

    __slots__ = ("errored", "inline", "remaining", "total")

    def __init__(self, max_bytes: int, inline: int = 0) -> None:
        self.remaining = max_bytes if max_bytes > 0 else 0x7FFFFFFF
        self.total = 0
        self.errored = False
        self.inline = inline   # bytes of small regions still to read into memory at once (see _inline)


def _inline(regions: list[tuple[Any, int, int]], size: int) -> Any:
    """A partition's regions of at most INLINE_BYTES in all, as bytes read now, while their file is open.
    Sent as file regions, a response naming more partitions than the descriptor cache holds reopened (and
    closed again) every file on the event loop as it sent them: 0.1-0.2 s for 2,000 partitions of a broker of
    20,000 under RLIMIT_NOFILE 1,024. Read here, each costs one pread. At most INLINE_TOTAL bytes a response
    are read so (MaxBytes is the client's: a request naming one partition a million times would otherwise
    hold a million copies of its records in memory); the rest stays file regions."""
    if size > INLINE_BYTES:
        return regions
    out = bytearray()
    for src, offset, length in regions:
        data = os.pread(src, length, offset) if type(src) is int else src.pread(length, offset)
        if len(data) != length:   # cut short meanwhile (retention, truncation): left to the sender to judge
            return regions
        out += data
    return out


def _topic(state: BrokerState, t: Any, by_id: bool, topics_out: list[Any]) -> tuple[str | None, ErrorCode, list[Any]]:
    if by_id:
        info = state.topics_by_id.get(t.topic_id)
        name = info.name if info is not None else None
        missing = ErrorCode.UNKNOWN_TOPIC_ID
    else:
        name = t.topic
        missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    parts: list[Any] = []
    topics_out.append(FetchResponse.FetchableTopicResponse(topic=t.topic if not by_id else "",
                                                           topic_id=t.topic_id, partitions=parts))
    return name, missing, parts


def _partition(state: BrokerState, name: str | None, missing: ErrorCode, p: Any, committed: bool,
               budget: _Budget) -> Any:
    """Read one requested partition now (its answer)."""
    if name is not None and name in state.topics:
        code = state.placement.leader_error(name, p.partition)   # several brokers: only the leader answers
        if code:
            budget.errored = True
            part = _error_part(p.partition, ErrorCode(code), read=True)
            part.current_leader = state.placement.current_leader(name, p.partition, FetchResponse.LeaderIdAndEpoch)
            return part
    plog = state.logs.get_log(name, p.partition) if name is not None and name in state.topics else None
    if plog is None:
        budget.errored = True
        return _error_part(p.partition, missing if name is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    hw = plog.high_watermark
    log_start = plog.log_start_offset
    lso = getattr(plog, "last_stable_offset", hw)
    offset = p.fetch_offset
    if offset < log_start or offset > plog.log_end_offset:
        budget.errored = True
        return _error_part(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, read=True)
    total = budget.total
    limit = min(p.partition_max_bytes, budget.remaining)
    records: Any = b""
    if offset < (lso if committed else hw) and (limit > 0 or total == 0):
        try:
            regions = plog.read(offset, max(limit, 0), min_one=(total == 0))
        except OffsetOutOfRangeError:
            budget.errored = True
            return _error_part(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE, read=True)
        except StorageError as exc:
            budget.errored = True
            return _error_part(p.partition, error_code_for(exc), read=True)
        if regions and committed and lso < hw:
            regions = trim_regions(regions, lso)
        elif regions and hw < plog.log_end_offset:   # replicated: nothing past the high watermark
            regions = trim_regions(regions, hw)
        if regions:
            size = sum(r[2] for r in regions)
            budget.total = total + size
            budget.remaining -= size
            if budget.inline >= size:
                records = _inline(regions, size)
                if records is not regions:
                    budget.inline -= size
            else:
                records = regions
    aborted: list[Any] | None = None
    if committed:
        lister = getattr(plog, "aborted_transactions", None)
        aborted = [FetchResponse.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                   for a in (lister(offset, lso) if lister is not None else [])]
    return _Part(partition_index=p.partition, error_code=ErrorCode.NONE, high_watermark=hw, last_stable_offset=lso,
                 log_start_offset=log_start, aborted_transactions=aborted, preferred_read_replica=-1,
                 records=records)


def _collect(state: BrokerState, req: FetchRequest, version: int, denied: Any = ()
             ) -> tuple[FetchResponse, int, bool]:
    """Read every requested partition now. Returns (response, bytes of records, whether any partition erred)."""
    by_id = version >= 13
    committed = req.isolation_level == READ_COMMITTED
    budget = _Budget(req.max_bytes)
    topics_out: list[FetchResponse.FetchableTopicResponse] = []
    for t in req.topics:
        name, missing, parts = _topic(state, t, by_id, topics_out)
        for p in t.partitions:
            if name in denied:
                parts.append(_error_part(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                budget.errored = True
                continue
            parts.append(_partition(state, name, missing, p, committed, budget))
    resp = FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics_out)
    return resp, budget.total, budget.errored


async def _collect_sliced(state: BrokerState, req: FetchRequest, version: int, denied: Any = ()
                          ) -> tuple[FetchResponse, int, bool]:
    """``_collect`` in slices, for a request naming many partitions: each partition is read on its own (as in
    Kafka), and on a broker of many partitions a read may open and close files (descriptors on demand), so a
    Fetch of 2,000 partitions at 20,000 partitions under RLIMIT_NOFILE 1,024 held the loop 0.2-0.7 s."""
    by_id = version >= 13
    committed = req.isolation_level == READ_COMMITTED
    budget = _Budget(req.max_bytes, inline=INLINE_TOTAL)
    topics_out: list[FetchResponse.FetchableTopicResponse] = []
    work = Slices(every=16)
    for t in req.topics:
        name, missing, parts = _topic(state, t, by_id, topics_out)
        for p in t.partitions:
            if work.due():
                await work.pause()
            if name in denied:
                parts.append(_error_part(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                budget.errored = True
                continue
            parts.append(_partition(state, name, missing, p, committed, budget))
    resp = FetchResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, session_id=0, responses=topics_out)
    return resp, budget.total, budget.errored


def _keys(state: BrokerState, req: FetchRequest, version: int) -> list[tuple[str, int]]:
    keys = []
    for t in req.topics:
        if version >= 13:
            info = state.topics_by_id.get(t.topic_id)
            if info is None:
                continue
            name = info.name
        else:
            name = t.topic
        keys.extend((name, p.partition) for p in t.partitions)
    return keys


@handler(FetchRequest, min_version=4, max_version=18)
async def fetch(ctx: RequestContext, req: FetchRequest) -> FetchResponse:
    state = ctx.broker
    quotas = state.quotas
    if not quotas.active:
        return _with_endpoints(ctx, (await _fetch(ctx, req))[0])
    cap = quotas.max_fetch_bytes(ctx)   # consumer_byte_rate: never more than a window's allowance
    if cap is not None:
        req.max_bytes = min(req.max_bytes, cap) if req.max_bytes > 0 else cap
    resp, total = await _fetch(ctx, req)
    throttle = quotas.fetch_throttle(ctx, total) if total else 0
    if throttle:   # over the quota: an empty answer with the throttle time (the bytes are not counted)
        return FetchResponse(throttle_time_ms=throttle, error_code=ErrorCode.NONE, session_id=0, responses=[])
    return _with_endpoints(ctx, resp)


def _with_endpoints(ctx: RequestContext, resp: FetchResponse) -> FetchResponse:
    """KIP-951 (v16+): the endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER answers (a cluster's)."""
    state = ctx.broker
    state.placement.add_node_endpoints(ctx.listener, resp, FetchResponse.NodeEndpoint)
    return resp


async def _fetch(ctx: RequestContext, req: FetchRequest) -> tuple[FetchResponse, int]:
    state = ctx.broker
    version = ctx.version
    deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
    min_bytes = max(req.min_bytes, 0)
    if state.logs.pending_loads:   # some logs not loaded since a clean start
        await state.ensure_loaded(_keys(state, req, version))
    many = len(req.topics) >= SLICE_AFTER or sum(len(t.partitions) for t in req.topics) >= SLICE_AFTER
    denied = () if state.authorizer is None else authz.fetch_denied(ctx, req, [n for n, _p in _keys(state, req, version)])
    while True:
        if many:
            resp, total, errored = await _collect_sliced(state, req, version, denied)
        else:
            resp, total, errored = _collect(state, req, version, denied)
        if total >= min_bytes or (total > 0 and min_bytes <= 1) or errored or state.purgatory.draining:
            return resp, total
        if trio.current_time() >= deadline:
            return resp, total
        keys = _keys(state, req, version)
        if not keys:
            return resp, total
        ev = state.purgatory.append_waiter(keys)
        try:
            with trio.move_on_at(deadline):
                await ev.wait()
        finally:
            state.purgatory.drop_waiter(keys, ev)
