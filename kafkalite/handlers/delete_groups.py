"""DeleteGroups (key 42): v0–v3 (v3 adds a per-group ErrorMessage).

Only Empty groups can be deleted (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for unknown ones).
Deleting writes tombstones for the group's offsets and metadata to ``__consumer_offsets``; a share group's
delivery state is tombstoned in ``__share_group_state``. v2 is flexible.
- Authorization: DELETE on each group, else GROUP_AUTHORIZATION_FAILED for it.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DeleteGroupsRequest, DeleteGroupsResponse


@handler(DeleteGroupsRequest, min_version=0, max_version=3)
async def delete_groups(ctx: RequestContext, req: DeleteGroupsRequest) -> DeleteGroupsResponse:
    state = ctx.broker
    svc = state.groups
    names = list(req.groups_names)
    if svc is None:
        errors = dict.fromkeys(names, int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    else:
        denied = authz.denied(ctx, authz.Op.DELETE, authz.GROUP, names)
        allowed = [g for g in names if g not in denied]
        shares = state.shares
        share_ids = [g for g in allowed if shares is not None and shares.is_share_group(g)]
        errors = svc.delete_groups([g for g in allowed if g not in share_ids])
        if shares is not None:
            errors.update({g: shares.delete_group(g) for g in share_ids})
        errors.update(dict.fromkeys(denied, int(ErrorCode.GROUP_AUTHORIZATION_FAILED)))
    return DeleteGroupsResponse(throttle_time_ms=0, results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=errors[g]) for g in dict.fromkeys(names)])
