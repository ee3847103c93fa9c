"""ListTransactions (key 66): v0–v2 (KIP-664; v1 adds DurationFilter, KIP-994; v2 TransactionalIdPattern, KIP-1152).

Filters: states (Kafka's state names; unknown ones are echoed in UnknownStateFilters), producer ids,
(v1) a minimum running time in ms, which only Ongoing transactions can match, and (v2) a regular expression the
whole transactional id must match (RE2 syntax, as Kafka compiles it with RE2/J: ``kafkalite.coordinator.consumer.
regex``; one it cannot compile answers INVALID_REGULAR_EXPRESSION). While
``__transaction_state`` loads: COORDINATOR_LOAD_IN_PROGRESS.
- Authorization: only the transactional ids the principal may DESCRIBE are listed.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.consumer.regex import RegexError, compile_re2
from kafkalite.coordinator.txn.coordinator import STATE_BY_NAME
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ListTransactionsRequest, ListTransactionsResponse

Resp = ListTransactionsResponse


@handler(ListTransactionsRequest, min_version=0, max_version=2)
async def list_transactions(ctx: RequestContext, req: ListTransactionsRequest) -> ListTransactionsResponse:
    state = ctx.broker
    txns = state.txns
    states = list(req.state_filters or [])
    unknown = [s for s in states if s not in STATE_BY_NAME]
    if txns is None:
        return Resp(throttle_time_ms=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                    transaction_states=[])
    if txns.coordinator.loading:
        return Resp(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    unknown_state_filters=unknown, transaction_states=[])
    pattern = None
    if ctx.version >= 2 and req.transactional_id_pattern:
        try:
            pattern = compile_re2(req.transactional_id_pattern)
        except RegexError:   # the response has no message field
            return Resp(throttle_time_ms=0, error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                        unknown_state_filters=[], transaction_states=[])
    if unknown and len(unknown) == len(states):   # only unknown states asked for: nothing can match
        found = []
    else:
        found = txns.coordinator.list(txns.now_ms(), states, req.producer_id_filters or [],
                                      req.duration_filter if ctx.version >= 1 else -1)
    if pattern is not None:
        found = [m for m in found if pattern.fullmatch(m.transactional_id)]
    if state.authorizer is not None:   # only the ids it may describe
        hidden = authz.denied(ctx, authz.Op.DESCRIBE, authz.TXN, (m.transactional_id for m in found))
        found = [m for m in found if m.transactional_id not in hidden]
    return Resp(throttle_time_ms=0, error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                transaction_states=[Resp.TransactionState(transactional_id=m.transactional_id,
                                                          producer_id=m.producer_id,
                                                          transaction_state=m.state.kafka_name)
                                    for m in sorted(found, key=lambda m: m.transactional_id)])
