"""EndTxn (key 26): v0–v5.

Committed=true commits, false aborts: the coordinator persists PrepareCommit/PrepareAbort, writes a
COMMIT/ABORT marker to every partition of the transaction (and the groups' ``__consumer_offsets``
partitions, completing their TxnOffsetCommit offsets), persists CompleteCommit/CompleteAbort and only then
answers. A retry of a completed EndTxn with the same result succeeds; the other result, or EndTxn with no
transaction, is INVALID_TXN_STATE. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).
- v4 adds TRANSACTION_ABORTABLE (KIP-890) to what a client may be answered.
- v5 (KIP-890 part 2, transaction.version 2): every EndTxn bumps the producer epoch; the markers carry the
  bumped epoch and the response the producer id and epoch the client goes on with (a new producer id at epoch
  0 once the epochs are used up). A retry is told apart by its epoch being one below the stored one; an abort
  with no transaction open is allowed (``kafkalite.coordinator.txn.coordinator``). Errors answer -1, -1.
- Authorization: WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.txn.service import fenced_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import EndTxnRequest, EndTxnResponse


@handler(EndTxnRequest, min_version=0, max_version=5)
async def end_txn(ctx: RequestContext, req: EndTxnRequest) -> EndTxnResponse:
    state = ctx.broker
    txns = state.txns
    pid, epoch = -1, -1
    if err := authz.txn_error(ctx, authz.Op.WRITE, req.transactional_id):
        pass
    elif txns is None:
        err = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        code, pid, epoch = txns.end_txn(req.transactional_id, req.producer_id, req.producer_epoch,
                                        bool(req.committed), client_tv=2 if ctx.version >= 5 else 0)
        err = fenced_error(code, ctx.version, 2)
    return EndTxnResponse(throttle_time_ms=0, error_code=err, producer_id=pid, producer_epoch=epoch)
