"""ShareAcknowledge (key 79): v0–v2 (v0 is Kafka 4.0's early access, the Java client 3.9.1's; v2 adds RENEW,
KIP-1222).

Acknowledgements outside a fetch, in the member's share session: ShareSessionEpoch 0 is
INVALID_SHARE_SESSION_EPOCH, an unknown session SHARE_SESSION_NOT_FOUND, a wrong epoch
INVALID_SHARE_SESSION_EPOCH (top-level); -1 applies them and then closes the session, releasing the
member's remaining acquired records. Types: ACCEPT 1, RELEASE 2, REJECT 3, GAP 0, and (v2) RENEW 4. Each
partition's acknowledgements are all applied and persisted, or none (INVALID_RECORD_STATE when a record is
not acquired by this member, INVALID_REQUEST for malformed batches, UNKNOWN_TOPIC_ID for an unknown topic).
Authorization (``KafkaApis.handleShareAcknowledgeRequest``): READ on the group first (else a top-level
GROUP_AUTHORIZATION_FAILED), READ on each topic (else TOPIC_AUTHORIZATION_FAILED for its partitions, nothing
applied).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.share_fetch import ack_batches
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse

_Resp = ShareAcknowledgeResponse


@handler(ShareAcknowledgeRequest, min_version=0, max_version=2)
async def share_acknowledge(ctx: RequestContext, req: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    state = ctx.broker
    svc = state.shares
    if svc is None:
        return _Resp(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, responses=[])
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return _Resp(error_code=err, responses=[])
    if not req.group_id or not req.member_id or group_id_error(req.group_id) is not None:
        return _Resp(error_code=ErrorCode.INVALID_REQUEST, error_message="Invalid group or member id.", responses=[])
    await svc.loaded.wait()
    session = svc.open_ack(req.group_id, req.member_id, req.share_session_epoch)
    if session.error:
        return _Resp(error_code=session.error, responses=[])
    acks = {(t.topic_id, p.partition_index): ack_batches(p) for t in req.topics for p in t.partitions}
    refused = authz.denied_ids(ctx, authz.Op.READ, [t for t, _ in acks], svc.topic_name)
    codes = svc.acknowledge(req.group_id, req.member_id, {tp: b for tp, b in acks.items() if tp[0] not in refused},
                            allow_renew=ctx.version >= 2)
    codes.update({tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in acks if tp[0] in refused})
    if session.final:
        svc.close_session(session)
    node = state.node_id
    by_topic: dict = {}
    for (tid, p), code in codes.items():
        name = svc.topic_name(tid)
        epoch = state.leader_epoch_of(name, p) if name is not None and code not in (ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) else -1
        by_topic.setdefault(tid, []).append(_Resp.PartitionData(
            partition_index=p, error_code=code,
            current_leader=_Resp.LeaderIdAndEpoch(leader_id=node, leader_epoch=epoch)))
    return _Resp(throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=svc.states.settings(req.group_id).lock_ms,
                 responses=[_Resp.ShareAcknowledgeTopicResponse(topic_id=tid, partitions=parts)
                            for tid, parts in by_topic.items()])
