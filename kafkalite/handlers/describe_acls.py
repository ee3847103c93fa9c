"""DescribeAcls (key 29): v0–v3. The ACL logic is in :mod:`kafkalite.authz.apis` (see its docstring)."""
from __future__ import annotations

from kafkalite.authz import apis
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.messages import DescribeAclsRequest, DescribeAclsResponse


@handler(DescribeAclsRequest, min_version=0, max_version=3)
async def describe_acls(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    return apis.describe_acls(ctx, req)
