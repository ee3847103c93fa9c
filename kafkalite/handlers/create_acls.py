"""CreateAcls (key 30): v0–v3. The ACL logic is in :mod:`kafkalite.authz.apis` (see its docstring)."""
from __future__ import annotations

from kafkalite.authz import apis
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.messages import CreateAclsRequest, CreateAclsResponse


@handler(CreateAclsRequest, min_version=0, max_version=3)
async def create_acls(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    return apis.create_acls(ctx, req)
