"""EndTxn (key 26): v0–v4.

Committed=true commits, false aborts: the coordinator persists PrepareCommit/PrepareAbort, writes a
COMMIT/ABORT marker to every partition of the transaction (and the groups' ``__consumer_offsets``
partitions, completing their TxnOffsetCommit offsets), persists CompleteCommit/CompleteAbort and only then
answers. A retry of a completed EndTxn with the same result succeeds; the other result, or EndTxn with no
transaction, is INVALID_TXN_STATE. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).
- Authorization: WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.txn.service import fenced_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import EndTxnRequest, EndTxnResponse


@handler(EndTxnRequest, min_version=0, max_version=4)
async def end_txn(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    state = ctx.broker
    txns = state.txns
    if err := authz.txn_error(ctx, authz.Op.WRITE, req.transactional_id):
        pass
    elif txns is None:
        err = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        err = fenced_error(txns.end_txn(req.transactional_id, req.producer_id, req.producer_epoch,
                                        bool(req.committed)), ctx.version, 2)
    return EndTxnResponse(throttle_time_ms=0, error_code=err)
