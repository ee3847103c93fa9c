"""AlterClientQuotas (key 49): v0–v1. The logic is in :mod:`kafkalite.quotas.apis` (see its docstring)."""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.quotas import apis
from kafkalite_wire.messages import AlterClientQuotasRequest, AlterClientQuotasResponse


@handler(AlterClientQuotasRequest, min_version=0, max_version=1)
async def alter_client_quotas(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    return apis.alter(ctx, req)
