"""LeaveGroup (key 13): v0–v5.

- v0–v2: one ``member_id``; the response's top-level error is that member's error.
- v3+: a batch of ``members`` (member id and/or group instance id; an empty member id with an
  instance id removes that static member administratively), answered per member (KIP-345).
- v5 adds a per-member Reason (logged only).
- Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import LeaveGroupRequest, LeaveGroupResponse


@handler(LeaveGroupRequest, min_version=0, max_version=5)
async def leave_group(ctx: RequestContext, req: LeaveGroupRequest) -> LeaveGroupResponse:
    state = ctx.broker
    svc = state.groups
    err = ErrorCode.COORDINATOR_NOT_AVAILABLE if svc is None else authz.group_error(ctx, authz.Op.READ, req.group_id)
    if err or svc is None:
        return LeaveGroupResponse(error_code=err)
    if ctx.version < 3:
        err, per = svc.leave_group(req.group_id, [(req.member_id, None)])
        if err == ErrorCode.NONE and per:
            err = per[0]
        return LeaveGroupResponse(throttle_time_ms=0, error_code=err)
    members = [(m.member_id, m.group_instance_id) for m in req.members]
    err, per = svc.leave_group(req.group_id, members)
    return LeaveGroupResponse(throttle_time_ms=0, error_code=err, members=[
        LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=inst, error_code=e)
        for (mid, inst), e in zip(members, per, strict=False)])
