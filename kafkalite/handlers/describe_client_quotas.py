"""DescribeClientQuotas (key 48): v0–v1. The logic is in :mod:`kafkalite.quotas.apis` (see its docstring)."""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.quotas import apis
from kafkalite_wire.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse


@handler(DescribeClientQuotasRequest, min_version=0, max_version=1)
async def describe_client_quotas(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    return apis.describe(ctx, req)
