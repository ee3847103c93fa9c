"""AddOffsetsToTxn (key 25): v0–v4.

Adds the group's ``__consumer_offsets`` partition to the producer's transaction, so that its EndTxn also
writes a marker there and completes the TxnOffsetCommit offsets. Errors as AddPartitionsToTxn
(PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2); an empty group id is INVALID_GROUP_ID.
- Authorization: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
  (else GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.txn.service import fenced_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse


@handler(AddOffsetsToTxnRequest, min_version=0, max_version=4)
async def add_offsets_to_txn(ctx: RequestContext, req: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    state = ctx.broker
    txns, groups = state.txns, state.groups
    if err := (authz.txn_error(ctx, authz.Op.WRITE, req.transactional_id)
               or authz.group_error(ctx, authz.Op.READ, req.group_id)):
        pass
    elif txns is None:
        err = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif groups is None or not await groups.ensure_offsets_topic_async():
        err = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    else:
        err = fenced_error(txns.add_offsets(req.transactional_id, req.producer_id, req.producer_epoch,
                                            req.group_id), ctx.version, 2)
    return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=err)
