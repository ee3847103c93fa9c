"""InitProducerId (key 22): v0–v5.

- Without a transactional id (idempotent producers): a fresh producer id with epoch 0, every time — also when
  a v3+ request names its current id/epoch (KIP-360 bump), as Kafka does for non-transactional producers.
  Ids come from BrokerState.allocate_producer_id, which persists reserved blocks so ids are never reused
  across restarts (kafkalite.metadata.producer_ids: ids seen in batches never move allocation). A full disk
  answers COORDINATOR_LOAD_IN_PROGRESS (retriable); ids past 2^63-1 UNKNOWN_SERVER_ERROR, as Kafka's controller.
- With a transactional id: delegated to the transaction coordinator (``state.txns.init_producer_id(ctx,
  req)``) when there is one; otherwise TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which every client reports as
  a clear, fatal error instead of retrying forever.
- An empty transactional id is INVALID_REQUEST (as in Kafka).
- v0/v1 bodies carry only TransactionalId and TransactionTimeoutMs (aiokafka speaks only v0).
- Authorization: WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one,
  IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka 3.x, KIP-679; else
  CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

import logging

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata.producer_ids import ProducerIdsExhausted
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import InitProducerIdRequest, InitProducerIdResponse

log = logging.getLogger(__name__)


@handler(InitProducerIdRequest, min_version=0, max_version=5)
async def init_producer_id(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    state = ctx.broker
    if req.transactional_id == "":
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                      producer_id=-1, producer_epoch=-1)
    if err := (authz.txn_error(ctx, authz.Op.WRITE, req.transactional_id) if req.transactional_id is not None
                else 0 if authz.idempotent_write_allowed(ctx) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED):
        return InitProducerIdResponse(throttle_time_ms=0, error_code=err, producer_id=-1, producer_epoch=-1)
    if req.transactional_id is not None:
        txns = state.txns
        delegate = getattr(txns, "init_producer_id", None)
        if delegate is not None:
            return await delegate(ctx, req)
        return InitProducerIdResponse(throttle_time_ms=0,
                                      error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      producer_id=-1, producer_epoch=-1)
    try:
        pid = state.allocate_producer_id()
    except OSError as exc:   # the next id block could not be persisted (a full disk): retriable, as Kafka
        log.error("cannot allocate a producer id: %s", exc)   # answers when no id block is available
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                      producer_id=-1, producer_epoch=-1)
    except ProducerIdsExhausted as exc:   # Kafka's controller throws UnknownServerException for this
        log.error("cannot allocate a producer id: %s", exc)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, producer_id=pid,
                                  producer_epoch=0)
