"""ListGroups (key 16): v0–v5.

- v4 adds StatesFilter (case-insensitive state names) and GroupState in the response; v5 adds
  TypesFilter and GroupType: a types filter without "classic" lists no classic group; share groups
  (KIP-932) are listed with group type and protocol type "share". While the coordinator loads, the error
  is COORDINATOR_LOAD_IN_PROGRESS (with whatever is known).
- Authorization: DESCRIBE on the cluster lists every group; otherwise only the groups it may DESCRIBE.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ListGroupsRequest, ListGroupsResponse


@handler(ListGroupsRequest, min_version=0, max_version=5)
async def list_groups(ctx: RequestContext, req: ListGroupsRequest) -> ListGroupsResponse:
    state = ctx.broker
    svc = state.groups
    if svc is None:
        return ListGroupsResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    v = ctx.version
    err, groups = svc.list_groups(list(req.states_filter) if v >= 4 else None,
                                  list(req.types_filter) if v >= 5 else None)
    shares = state.shares
    if shares is not None:
        groups = groups + shares.list_groups(list(req.states_filter) if v >= 4 else None,
                                             list(req.types_filter) if v >= 5 else None)
    if state.authorizer is not None and not authz.cluster_allowed(ctx, authz.Op.DESCRIBE):
        hidden = authz.denied(ctx, authz.Op.DESCRIBE, authz.GROUP, (g["group_id"] for g in groups))
        groups = [g for g in groups if g["group_id"] not in hidden]
    return ListGroupsResponse(throttle_time_ms=0, error_code=err, groups=[
        ListGroupsResponse.ListedGroup(group_id=g["group_id"], protocol_type=g["protocol_type"],
                                       group_state=g["group_state"], group_type=g["group_type"])
        for g in groups])
