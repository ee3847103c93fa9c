"""AddPartitionsToTxn (key 24): v0–v5.

v0–v3 are the client versions: one transaction per request. v4+ batch several transactions, each with
VerifyOnly; in Kafka they are what a broker sends the transaction coordinator (ReplicaManager's
AddPartitionsToTxnManager) and need CLUSTER_ACTION on the cluster (else the top-level error
CLUSTER_AUTHORIZATION_FAILED and no results). VerifyOnly asks whether the partitions are in the transaction
(NONE, or TRANSACTION_ABORTABLE per partition; PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING or
CONCURRENT_TRANSACTIONS for all); otherwise the partitions are added. v5 (KIP-890 part 2) adds them as a
transaction.version 2 client's transaction (what Produce v12 does inside kafkalite).

- Partitions of unknown topics (or out-of-range partition indexes) get UNKNOWN_TOPIC_OR_PARTITION and the
  others OPERATION_NOT_ATTEMPTED; nothing is added (as Kafka's KafkaApis does).
- Otherwise the coordinator's one error applies to every partition: INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2, KIP-588), CONCURRENT_TRANSACTIONS while the previous
  transaction completes, COORDINATOR_LOAD_IN_PROGRESS while ``__transaction_state`` loads.
- Adding partitions moves Empty/CompleteCommit/CompleteAbort to Ongoing and starts the transaction timer.
- The request's list is walked in slices (``kafkalite.runtime.slices``; a 4 MB request can name a million partitions)
  and handed to the coordinator without repeats, so what the coordinator does is bounded by the partitions
  that exist.
- Authorization: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition),
  WRITE on each topic (else TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED).
"""
from __future__ import annotations

from collections.abc import Sequence

from kafkalite import authz
from kafkalite.coordinator.txn.service import fenced_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

Req = AddPartitionsToTxnRequest
Resp = AddPartitionsToTxnResponse


@handler(AddPartitionsToTxnRequest, min_version=0, max_version=5)
async def add_partitions_to_txn(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    work = Slices()
    if ctx.version < 4:
        return Resp(throttle_time_ms=0, results_by_topic_v3_and_below=await _one(
            ctx, work, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
            req.v3_and_below_producer_epoch, req.v3_and_below_topics, verify_only=False))
    if err := authz.cluster_error(ctx, authz.Op.CLUSTER_ACTION):
        return Resp(throttle_time_ms=0, error_code=err)
    return Resp(throttle_time_ms=0, results_by_transaction=[
        Resp.AddPartitionsToTxnResult(transactional_id=t.transactional_id, topic_results=await _one(
            ctx, work, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, verify_only=t.verify_only))
        for t in req.transactions])


async def _one(ctx: RequestContext, work: Slices, txn_id: str, producer_id: int, producer_epoch: int,
               topics: Sequence[Req.AddPartitionsToTxnTopic], verify_only: bool,
               ) -> list[Resp.AddPartitionsToTxnTopicResult]:
    state = ctx.broker
    txns = state.txns
    # partitions by topic, in request order without repeats; plain ints (the request's own), no (topic, p)
    # tuples: a million of those, freed in one go as the handler returned, held the loop ~0.1-0.2 s
    wanted: dict[str, dict[int, None]] = {}
    invalid = False                             # some partition does not exist, or its topic is denied
    txn_denied = authz.txn_error(ctx, authz.Op.WRITE, txn_id)
    denied = authz.denied(ctx, authz.Op.WRITE, authz.TOPIC, (t.name for t in topics))
    for t in topics:
        info = state.topics.get(t.name)
        seen = wanted.setdefault(t.name, {})
        count = info.partitions if info is not None and t.name not in denied else 0
        for p in t.partitions:
            if work.due():
                await work.pause()
            seen[p] = None
            if not 0 <= p < count:
                invalid = True
    per_partition = False
    verified: dict[tuple[str, int], int] = {}
    if txn_denied:
        common = txn_denied
    elif txns is None:
        common = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif invalid:
        common, per_partition = int(ErrorCode.OPERATION_NOT_ATTEMPTED), True
    else:   # every partition exists: as many as the topics have, at most
        tps = [(topic, p) for topic, parts in wanted.items() for p in parts]
        if verify_only:
            common, verified = txns.verify_partitions(txn_id, producer_id, producer_epoch, tps)
        else:
            common = fenced_error(txns.add_partitions(txn_id, producer_id, producer_epoch, tps,
                                                      client_tv=2 if ctx.version >= 5 else 0), ctx.version, 2)
    missing = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    by_topic: dict[str, list[Resp.AddPartitionsToTxnPartitionResult]] = {}
    for topic, parts in wanted.items():
        info = state.topics.get(topic)
        count = info.partitions if info is not None else 0
        topic_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED) if topic in denied else None
        results = by_topic[topic] = []
        for p in parts:
            if work.due():
                await work.pause()
            code = verified.get((topic, p), common)
            if per_partition:
                code = topic_code if topic_code is not None else common if 0 <= p < count else missing
            results.append(Resp.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code))
    return [Resp.AddPartitionsToTxnTopicResult(name=name, results_by_partition=parts)
            for name, parts in by_topic.items()]
