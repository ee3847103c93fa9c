"""AddPartitionsToTxn (key 24): v0–v3 (the client versions; v4+ batch several transactions and are
broker-to-broker in Kafka 3.9, so they are not offered).

- Partitions of unknown topics (or out-of-range partition indexes) get UNKNOWN_TOPIC_OR_PARTITION and the
  others OPERATION_NOT_ATTEMPTED; nothing is added (as Kafka's KafkaApis does).
- Otherwise the coordinator's one error applies to every partition: INVALID_PRODUCER_ID_MAPPING,
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2, KIP-588), CONCURRENT_TRANSACTIONS while the previous
  transaction completes, COORDINATOR_LOAD_IN_PROGRESS while ``__transaction_state`` loads.
- Adding partitions moves Empty/CompleteCommit/CompleteAbort to Ongoing and starts the transaction timer.
- The request's list is walked in slices (``kafkalite.slices``; a 4 MB request can name a million partitions)
  and handed to the coordinator without repeats, so what the coordinator does is bounded by the partitions
  that exist.
- Authorization: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition),
  WRITE on each topic (else TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.transactions import fenced_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.slices import Slices
from wire.errors import ErrorCode
from wire.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

Resp = AddPartitionsToTxnResponse


@handler(AddPartitionsToTxnRequest, min_version=0, max_version=3)
async def add_partitions_to_txn(ctx: RequestContext, req: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    state = ctx.broker
    txns = state.txns
    work = Slices()
    wanted: dict[tuple[str, int], None] = {}   # in request order, without repeats
    errors: dict[tuple[str, int], int] = {}     # the partitions that do not exist
    missing = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    txn_denied = authz.txn_error(ctx, authz.Op.WRITE, req.v3_and_below_transactional_id)
    denied = authz.denied(ctx, authz.Op.WRITE, authz.TOPIC, (t.name for t in req.v3_and_below_topics))
    for t in req.v3_and_below_topics:
        info = state.topics.get(t.name)
        for p in t.partitions:
            if work.due():
                await work.pause()
            wanted[(t.name, p)] = None
            if t.name in denied:
                errors[(t.name, p)] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif info is None or not 0 <= p < info.partitions:
                errors[(t.name, p)] = missing
    if txn_denied:
        common, errors = txn_denied, {}
    elif txns is None:
        common = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        errors = {}
    elif errors:
        common = int(ErrorCode.OPERATION_NOT_ATTEMPTED)
    else:
        common = fenced_error(txns.add_partitions(req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                                  req.v3_and_below_producer_epoch, list(wanted)), ctx.version, 2)
    by_topic: dict[str, list[Resp.AddPartitionsToTxnPartitionResult]] = {}
    for topic, p in wanted:
        if work.due():
            await work.pause()
        by_topic.setdefault(topic, []).append(Resp.AddPartitionsToTxnPartitionResult(
            partition_index=p, partition_error_code=errors.get((topic, p), common)))
    return Resp(throttle_time_ms=0, results_by_topic_v3_and_below=[
        Resp.AddPartitionsToTxnTopicResult(name=name, results_by_partition=parts) for name, parts in by_topic.items()])
