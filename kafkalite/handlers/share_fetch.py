"""ShareFetch (key 78): v0–v2 (v0, Kafka 4.0's early access and the Java client 3.9.1's, has no MaxRecords /
BatchSize — MaxRecords is then 500 — and no AcquisitionLockTimeoutMs; v2 adds ShareAcquireMode and RENEW, KIP-1222).

- Share sessions (``kafkalite.coordinator.share.sessions``): ShareSessionEpoch 0 opens one (no
  acknowledgements allowed: INVALID_REQUEST), n continues it (SHARE_SESSION_NOT_FOUND /
  INVALID_SHARE_SESSION_EPOCH as a top-level error), -1 closes it: its acknowledgements are applied, nothing is
  fetched, and the member's remaining acquired records are released after the response. The connection that
  opened a session ends it when it closes (the records it held are released at once, as Kafka does).
- Piggy-backed acknowledgements are applied (and persisted) before fetching; each partition's result is its
  AcknowledgeErrorCode (INVALID_RECORD_STATE for records not acquired by this member).
- The fetch acquires records from every partition of the session for this member and returns the whole log
  batches holding them (file regions, sent with sendfile) with AcquiredRecords ranges and delivery counts;
  clients deliver only offsets inside those ranges. MaxRecords bounds the records acquired (checked between
  batches, as Kafka acquires whole batches), MaxBytes the bytes read, BatchSize the size of each
  AcquiredRecords range of new records (split at log batch boundaries, as Kafka's batch-optimized mode). The
  request answers at once when at least MinBytes of records can be acquired; otherwise it waits, woken by
  appends and by records released, and acquires whatever there is when MaxWaitMs have passed (Kafka's
  DelayedShareFetch).
- v2: ShareAcquireMode 1 (record-limit, KIP-1206) makes MaxRecords exact (a log batch may be split between
  fetches); 0 (batch-optimized) checks it between batches.
- v2 with IsRenewAck: the request may carry RENEW (4) acknowledgements that extend locks; it must have
  MaxBytes, MinBytes, MaxRecords and MaxWaitMs all 0 (INVALID_REQUEST) and fetches nothing, as Kafka does.
- Only partitions with records, an error or an acknowledgement result are in the response.
- Authorization (``KafkaApis.handleShareFetchRequest``): READ on the group first (else a top-level
  GROUP_AUTHORIZATION_FAILED); READ on each topic of the session: the partitions of the others answer
  TOPIC_AUTHORIZATION_FAILED (fetched from nothing; their acknowledgements refused the same way).
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ShareFetchRequest, ShareFetchResponse

_Resp = ShareFetchResponse


def ack_batches(partitions: Any) -> list[tuple[int, int, list[int]]]:
    return [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in partitions.acknowledgement_batches]


def top_error(code: int, msg: str | None = None) -> ShareFetchResponse:
    return _Resp(throttle_time_ms=0, error_code=code, error_message=msg, responses=[])


@handler(ShareFetchRequest, min_version=0, max_version=2)
async def share_fetch(ctx: RequestContext, req: ShareFetchRequest) -> ShareFetchResponse:
    state = ctx.broker
    svc = state.shares
    if svc is None:
        return top_error(ErrorCode.UNKNOWN_SERVER_ERROR, "share groups are not available")
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return top_error(err)
    if not req.group_id or group_id_error(req.group_id) is not None:
        return top_error(ErrorCode.INVALID_REQUEST, "Invalid group id in the request.")
    if not req.member_id:
        return top_error(ErrorCode.INVALID_REQUEST, "Invalid member id in the request.")
    renew = ctx.version >= 2 and req.is_renew_ack
    if renew and (req.max_bytes or req.min_bytes or req.max_records or req.max_wait_ms):
        return top_error(ErrorCode.INVALID_REQUEST, "maxBytes, minBytes, maxRecords and maxWaitMs must be 0 "
                                                    "if isRenewAck is true.")
    await svc.loaded.wait()
    group, member = req.group_id, req.member_id
    acks = {(t.topic_id, p.partition_index): ack_batches(p) for t in req.topics for p in t.partitions
            if p.acknowledgement_batches}
    add = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
    forget = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
    session = svc.open_fetch(group, member, req.share_session_epoch, add, forget, bool(acks), ctx.connection_id)
    if session.error:
        return top_error(session.error)
    in_session = list(session.session.partitions) if session.session is not None else []
    refused = authz.denied_ids(ctx, authz.Op.READ, [t for t, _ in [*in_session, *acks]], svc.topic_name)
    refused_acks = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in acks if tp[0] in refused}
    acks = {tp: b for tp, b in acks.items() if tp not in refused_acks}
    ack_codes = svc.acknowledge(group, member, acks, allow_renew=ctx.version >= 2) if acks else {}
    ack_codes.update(refused_acks)
    fetched: dict = {}
    if not session.final and not renew and session.session is not None:
        fetched = dict.fromkeys([tp for tp in in_session if tp[0] in refused], SimpleNamespace(
            error=ErrorCode.TOPIC_AUTHORIZATION_FAILED, acquired=[], records=b"", leader_epoch=-1))
        fetched |= await svc.fetch(group, member, [tp for tp in in_session if tp[0] not in refused],
                                   max_records=req.max_records,
                                  max_bytes=req.max_bytes, max_wait_ms=req.max_wait_ms,
                                  min_bytes=req.min_bytes, batch_size=req.batch_size,
                                  record_limit=ctx.version >= 2 and req.share_acquire_mode == 1)
    node = state.node_id
    by_topic: dict = {}
    for (tid, p) in dict.fromkeys([*fetched, *ack_codes]):
        f = fetched.get((tid, p))
        if f is not None and not f.acquired and not f.error and (tid, p) not in ack_codes:
            continue
        part = _Resp.PartitionData(
            partition_index=p, error_code=f.error if f is not None else 0,
            acknowledge_error_code=ack_codes.get((tid, p), 0),
            current_leader=_Resp.LeaderIdAndEpoch(leader_id=node, leader_epoch=f.leader_epoch if f else 0),
            records=f.records if f is not None and f.records else b"",
            acquired_records=[_Resp.AcquiredRecords(first_offset=a.first, last_offset=a.last,
                                                    delivery_count=a.delivery_count)
                              for a in (f.acquired if f is not None else [])])
        by_topic.setdefault(tid, []).append(part)
    if session.final:
        svc.close_session(session)
    return _Resp(throttle_time_ms=0, error_code=0,
                 acquisition_lock_timeout_ms=svc.states.settings(group).lock_ms,
                 responses=[_Resp.ShareFetchableTopicResponse(topic_id=tid, partitions=parts)
                            for tid, parts in by_topic.items()])
