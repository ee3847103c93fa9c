"""TxnOffsetCommit (key 28): v0–v6.

- v2 adds CommittedLeaderEpoch; v3 adds GenerationId, MemberId, GroupInstanceId (KIP-447); v3 is flexible.
  The group coordinator checks them per group type as Kafka 4.x's validateTransactionalOffsetCommit
  (``coordinator/classic/offsets.py``): a classic group's member, static instance and generation; a KIP-848
  consumer group's member and member epoch (a refused epoch is ILLEGAL_GENERATION on this API); none given
  (member "", generation -1, no instance; always so before v3) is accepted; a share group's id is
  GROUP_ID_NOT_FOUND; an unknown group with a generation >= 0 is ILLEGAL_GENERATION.
- The producer must be in an Ongoing transaction that added the group (AddOffsetsToTxn), else
  TRANSACTION_ABORTABLE (v4+; INVALID_TXN_STATE before); unknown producer id -> INVALID_PRODUCER_ID_MAPPING;
  other epoch -> INVALID_PRODUCER_EPOCH; a transaction completing -> CONCURRENT_TRANSACTIONS (Kafka's
  partition verification with the transaction coordinator, at every version).
- v5 (KIP-890 part 2, transaction.version 2): the request also does what AddOffsetsToTxn did: the group's
  ``__consumer_offsets`` partition is added to the transaction first (Kafka's verification with
  AddPartitionsToTxn v5), so an Empty or completed transaction becomes Ongoing; a fenced epoch is
  INVALID_PRODUCER_EPOCH. v6 names topics by id (KIP-1319): an id no topic has is UNKNOWN_TOPIC_ID, before any
  other error (Kafka resolves the ids first; when none is known the coordinators are not asked).
- Unknown topics and partitions get UNKNOWN_TOPIC_OR_PARTITION. The offsets stay pending in the group
  coordinator and become visible (OffsetFetch) only when the transaction commits; an abort drops them.
- The partition list is walked in slices (``kafkalite.runtime.slices``): a request may name a million partitions. Only
  partitions that exist are kept (by (topic, partition)); the others' errors are derived per topic as the answer
  is built, so nothing per entry is left to free when the handler returns.
- Authorization: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
  (GROUP_AUTHORIZATION_FAILED), both on every partition; READ on each topic (TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.classic.group import OffsetAndMetadata
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse

Resp = TxnOffsetCommitResponse


@handler(TxnOffsetCommitRequest, min_version=0, max_version=6)
async def txn_offset_commit(ctx: RequestContext, req: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    v = ctx.version
    state = ctx.broker
    unknown_ids: set[int] = set()   # v6: positions of topics whose id no topic has
    if v >= 6:
        by_id = state.topics_by_id
        for i, t in enumerate(req.topics):
            info_by_id = by_id.get(t.topic_id)
            if info_by_id is None:
                unknown_ids.add(i)
            else:
                t.name = info_by_id.name
    groups = state.groups
    txns = state.placement.txn_service(req.transactional_id)   # in a cluster its coordinator may be another broker
    now = ctx.now_ms()
    errors: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    common = 0
    denied = authz.denied(ctx, authz.Op.READ, authz.TOPIC, (t.name for t in req.topics))
    if common := (authz.txn_error(ctx, authz.Op.WRITE, req.transactional_id)
                  or authz.group_error(ctx, authz.Op.READ, req.group_id)):
        pass
    elif txns is None:
        common = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif groups is None:
        common = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    elif group_id_error(req.group_id) is not None:   # empty, or too long to store
        common = int(ErrorCode.INVALID_GROUP_ID)
    elif req.topics and len(unknown_ids) == len(req.topics):
        pass   # v6, no topic id known: nothing reaches the coordinators (each partition: UNKNOWN_TOPIC_ID)
    else:
        common = txns.check_txn_offset_commit(req.transactional_id, req.producer_id, req.producer_epoch,
                                              req.group_id, implicit_add=v >= 5)
        if common == ErrorCode.TRANSACTION_ABORTABLE and v < 4:   # AddPartitionsToTxnManager's DEFAULT_ERROR
            common = int(ErrorCode.INVALID_TXN_STATE)
    work = Slices()
    if not common and groups is not None:   # (groups is None: common is set)
        for i, t in enumerate(req.topics):
            info = state.topics.get(t.name) if i not in unknown_ids else None
            for p in t.partitions:
                if work.due():
                    await work.pause()
                if t.name not in denied and info is not None and 0 <= p.partition_index < info.partitions:
                    offsets[(t.name, p.partition_index)] = OffsetAndMetadata(
                        offset=p.committed_offset, leader_epoch=p.committed_leader_epoch if v >= 2 else -1,
                        metadata=p.committed_metadata or "", commit_timestamp=now, expire_timestamp=None)
        if offsets:
            errors.update(groups.txn_commit_offsets(
                req.group_id, req.producer_id, req.member_id if v >= 3 else "",
                req.group_instance_id if v >= 3 else None, req.generation_id_or_member_epoch if v >= 3 else -1, offsets,
                producer_epoch=req.producer_epoch))
    topics = []
    for i, t in enumerate(req.topics):
        parts = []
        info = state.topics.get(t.name) if i not in unknown_ids else None
        count = info.partitions if info is not None else 0
        topic_code = (int(ErrorCode.UNKNOWN_TOPIC_ID) if i in unknown_ids
                      else int(ErrorCode.TOPIC_AUTHORIZATION_FAILED) if t.name in denied else None)
        for p in t.partitions:
            if work.due():
                await work.pause()
            code = common
            if i in unknown_ids:   # Kafka resolves topic ids before anything else
                code = int(ErrorCode.UNKNOWN_TOPIC_ID)
            elif not common:
                code = (topic_code if topic_code is not None
                        else errors.get((t.name, p.partition_index), 0) if 0 <= p.partition_index < count
                        else int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            parts.append(Resp.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code))
        topics.append(Resp.TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=parts))
    return Resp(throttle_time_ms=0, topics=topics)
