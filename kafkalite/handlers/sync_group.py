"""SyncGroup (key 14): v0–v5.

- v3 adds GroupInstanceId; v5 adds ProtocolType/ProtocolName to request (checked against the group:
  INCONSISTENT_GROUP_PROTOCOL) and response.
- Followers' requests are parked until the leader's assignment has been stored; the leader's request
  completes them all. Members missing from the leader's assignment get an empty one.
- Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import SyncGroupRequest, SyncGroupResponse


@handler(SyncGroupRequest, min_version=0, max_version=5)
async def sync_group(ctx: RequestContext, req: SyncGroupRequest) -> SyncGroupResponse:
    state = ctx.broker
    v = ctx.version
    svc = state.groups
    err = ErrorCode.COORDINATOR_NOT_AVAILABLE if svc is None else authz.group_error(ctx, authz.Op.READ, req.group_id)
    if err or svc is None:
        return SyncGroupResponse(error_code=err)
    r = await svc.sync_group(
        req.group_id, req.generation_id, req.member_id, req.group_instance_id if v >= 3 else None,
        req.protocol_type if v >= 5 else None, req.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment) for a in req.assignments})
    return SyncGroupResponse(throttle_time_ms=0, error_code=r.error,
                             protocol_type=r.protocol_type if v >= 5 else None,
                             protocol_name=r.protocol_name if v >= 5 else None, assignment=r.assignment)
