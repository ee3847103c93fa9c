"""Heartbeat (key 12): v0–v4.

- v3 adds GroupInstanceId (FENCED_INSTANCE_ID when another member owns the instance id).
- PreparingRebalance answers REBALANCE_IN_PROGRESS (the member must rejoin); CompletingRebalance
  and Stable answer NONE; while the coordinator loads it answers NONE blindly, as Kafka does.
- Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import HeartbeatRequest, HeartbeatResponse


@handler(HeartbeatRequest, min_version=0, max_version=4)
async def heartbeat(ctx: RequestContext, req: HeartbeatRequest) -> HeartbeatResponse:
    state = ctx.broker
    svc = state.groups
    err = ErrorCode.COORDINATOR_NOT_AVAILABLE if svc is None else authz.group_error(ctx, authz.Op.READ, req.group_id)
    if err or svc is None:
        return HeartbeatResponse(error_code=err)
    err = svc.heartbeat(req.group_id, req.member_id, req.group_instance_id if ctx.version >= 3 else None,
                        req.generation_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=err)
