"""JoinGroup (key 11): v0–v9.

- v0 has no RebalanceTimeoutMs (the session timeout is used), v5 adds GroupInstanceId (static
  membership), v7 ProtocolType in the response (ProtocolName nullable from v7), v8 Reason, v9
  SkipAssignment (a static leader rejoining a Stable group learns it leads but must not reassign).
- From v4 an empty member id is answered with MEMBER_ID_REQUIRED and a fresh id to rejoin with
  (KIP-394); below v4 the member is added straight away.
- The response is a long poll: it is sent when the rebalance completes (or fails), never by sleeping.
- ClientHost is written as Kafka writes it, ``/<ip>``.
- Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import JoinGroupRequest, JoinGroupResponse


@handler(JoinGroupRequest, min_version=0, max_version=9)
async def join_group(ctx: RequestContext, req: JoinGroupRequest) -> JoinGroupResponse:
    state = ctx.broker
    v = ctx.version
    svc = state.groups
    err = ErrorCode.COORDINATOR_NOT_AVAILABLE if svc is None else authz.group_error(ctx, authz.Op.READ, req.group_id)
    if err or svc is None:
        return JoinGroupResponse(error_code=err, generation_id=-1,
                                 protocol_name=None if v >= 7 else "", leader="", member_id=req.member_id)
    r = await svc.join_group(
        req.group_id, req.member_id, req.group_instance_id if v >= 5 else None, ctx.client_id or "",
        f"/{ctx.client_host}", req.rebalance_timeout_ms if v >= 1 else req.session_timeout_ms,
        req.session_timeout_ms, req.protocol_type, [(p.name, bytes(p.metadata)) for p in req.protocols],
        require_known_member_id=v >= 4, support_skip_assignment=v >= 9,
        reason=req.reason if v >= 8 else None)
    return JoinGroupResponse(
        throttle_time_ms=0, error_code=r.error, generation_id=r.generation_id,
        protocol_type=r.protocol_type if v >= 7 else None,
        protocol_name=r.protocol_name if v >= 7 else (r.protocol_name or ""),
        leader=r.leader_id, skip_assignment=r.skip_assignment if v >= 9 else False, member_id=r.member_id,
        members=[JoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=inst, metadata=meta)
                 for mid, inst, meta in r.members])
