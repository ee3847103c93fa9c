"""FindCoordinator (key 10): v0–v6.

- v0: ``key`` is a group id; v1+: ``key_type`` 0 = group, 1 = transactional id (answered with this same
  node: a single broker coordinates everything); other key types get INVALID_REQUEST.
- v4+ batches keys in ``coordinator_keys`` and answers one ``Coordinator`` per key; v0–v3 answer in the
  top-level fields. ``error_message`` exists from v1: v1-v3 send 'NONE' on success (Kafka sets the error's
  message, which for NONE is its name) and kafkalite's text on an error; v4+ never set one (""), as Kafka.
- As in Kafka, looking up a group coordinator creates the internal ``__consumer_offsets`` topic
  (``offsets.topic.num.partitions``, compacted) if it does not exist yet; the answer waits for the
  creation (Kafka answers COORDINATOR_NOT_AVAILABLE meanwhile and lets the client retry).
- A key no coordinator could store (over 32,767 UTF-8 bytes, ``kafkalite.coordinator.common.keys``) is answered
  INVALID_GROUP_ID (group) or INVALID_REQUEST (transactional id) with a message, before any topic is created.
- Several brokers (``kafkalite.cluster``): the coordinator is the leader of the key's partition of
  ``__consumer_offsets`` / ``__transaction_state`` (both created on the first lookup);
  COORDINATOR_NOT_AVAILABLE while that partition has no running leader.
- Authorization: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as KafkaApis.handleFindCoordinatorRequest.
"""
from __future__ import annotations

from typing import Any

from kafkalite import authz
from kafkalite.config.addresses import Listener
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.common.keys import MAX_KEY_BYTES, storable
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import FindCoordinatorRequest, FindCoordinatorResponse

GROUP, TRANSACTION = 0, 1


async def _lookup(ctx: RequestContext, key_type: int, key: str) -> tuple[int, str | None]:
    state = ctx.broker
    if key_type not in (GROUP, TRANSACTION):
        return ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"
    if key_type == GROUP and authz.group_error(ctx, authz.Op.DESCRIBE, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    if key_type == TRANSACTION and authz.txn_error(ctx, authz.Op.DESCRIBE, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None
    if not storable(key):
        what = "group id" if key_type == GROUP else "transactional id"
        return (ErrorCode.INVALID_GROUP_ID if key_type == GROUP else ErrorCode.INVALID_REQUEST,
                f"{what} longer than {MAX_KEY_BYTES} bytes")
    if key_type == GROUP:
        svc = state.groups
        if svc is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "no group coordinator"
        if not await svc.ensure_offsets_topic_async():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, f"could not create {OFFSETS_TOPIC}"
    else:
        ensure = getattr(state.txns, "ensure_state_topic", None)
        if ensure is not None:
            ensure()
        if state.placement.replicated and state.txns is not None and \
                not await state.txns.ensure_topic():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "could not create __transaction_state"
    return ErrorCode.NONE, None


def _placed(ctx: RequestContext, key_type: int, key: str, err: int, node: int, lst: Any) -> tuple[int, str, int]:
    """This broker, or with several brokers (kafkalite.cluster) the leader of the key's internal topic
    partition (-1 when it has none running)."""
    state = ctx.broker
    if err != ErrorCode.NONE:
        return node, lst.host, lst.port
    placed = state.placement.coordinator("group" if key_type == GROUP else "transaction", key, ctx.listener)
    return placed if placed is not None else (-1, "", -1)


@handler(FindCoordinatorRequest, min_version=0, max_version=6)
async def find_coordinator(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    state = ctx.broker
    lst = state.advertised_for(ctx.listener)
    node = state.node_id
    key_type = req.key_type if ctx.version >= 1 else GROUP
    if ctx.version >= 4:
        coords = []
        for key in req.coordinator_keys:
            err, msg = await _lookup(ctx, key_type, key)
            node, host, port = _placed(ctx, key_type, key, err, node, lst)
            if node < 0 and err == ErrorCode.NONE:
                err, msg = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
            ok = err == ErrorCode.NONE
            coords.append(FindCoordinatorResponse.Coordinator(   # v4+: Kafka never sets a message ("")
                key=key, node_id=node if ok else -1, host=host if ok else "", port=port if ok else -1,
                error_code=err, error_message=""))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coords)
    err, msg = await _lookup(ctx, key_type, req.key)
    node, host, port = _placed(ctx, key_type, req.key, err, node, lst)
    if node < 0 and err == ErrorCode.NONE:
        err, msg = ErrorCode.COORDINATOR_NOT_AVAILABLE, None
    lst = Listener(lst.name, host, port)
    ok = err == ErrorCode.NONE
    if ok:
        msg = "NONE"   # v1-v3: Kafka sends the error's message, which for NONE is its name
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=err, error_message=msg if ctx.version >= 1 else "",
                                   node_id=node if ok else -1, host=lst.host if ok else "",
                                   port=lst.port if ok else -1)
