"""DeleteAcls (key 31): v0–v3. The ACL logic is in :mod:`kafkalite.authz.apis` (see its docstring)."""
from __future__ import annotations

from kafkalite.authz import apis
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.messages import DeleteAclsRequest, DeleteAclsResponse


@handler(DeleteAclsRequest, min_version=0, max_version=3)
async def delete_acls(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    return apis.delete_acls(ctx, req)
