"""DescribeTransactions (key 65): v0 (KIP-664; the Java Admin's describeTransactions).

Per transactional id: its state (Kafka's names: Empty, Ongoing, PrepareCommit, ...), timeout, start time
(-1 when no transaction is open), producer id/epoch and the partitions of the open transaction. Unknown
ids get TRANSACTIONAL_ID_NOT_FOUND; while ``__transaction_state`` loads, COORDINATOR_LOAD_IN_PROGRESS.
- Authorization: DESCRIBE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the topics of
  the transaction it may not DESCRIBE are left out.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeTransactionsRequest, DescribeTransactionsResponse

Resp = DescribeTransactionsResponse


@handler(DescribeTransactionsRequest, min_version=0, max_version=0)
async def describe_transactions(ctx: RequestContext,
                                req: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    state = ctx.broker
    txns = state.txns
    out = []
    for tid in req.transactional_ids:
        if txns is None or authz.txn_error(ctx, authz.Op.DESCRIBE, tid):
            out.append(Resp.TransactionState(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                             transactional_id=tid, producer_id=0, producer_epoch=0))
            continue
        err, meta = txns.coordinator.describe(tid)
        if meta is None:
            out.append(Resp.TransactionState(error_code=err, transactional_id=tid, producer_id=0,
                                             producer_epoch=0))   # the fields' defaults, as Kafka leaves them
            continue
        by_topic: dict[str, list[int]] = {}
        hidden = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t for t, _p in meta.partitions))
        for topic, p in sorted(meta.partitions):
            if topic in hidden:
                continue
            by_topic.setdefault(topic, []).append(p)
        out.append(Resp.TransactionState(
            error_code=0, transactional_id=tid, transaction_state=meta.state.kafka_name,
            transaction_timeout_ms=meta.timeout_ms, transaction_start_time_ms=meta.start_ms,
            producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
            topics=[Resp.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return Resp(throttle_time_ms=0, transaction_states=out)
