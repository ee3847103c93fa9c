"""ExpireDelegationToken (key 40): v1-v2. Bring a token's expiry forward, or remove it (kafkalite.security.tokens).

As Kafka 4.4: PLAINTEXT, 1-way SSL or a token-authenticated session DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry
-1); without ``delegation.token.secret.key`` DELEGATION_TOKEN_AUTH_DISABLED; then, by HMAC, NOT_FOUND, EXPIRED,
OWNER_MISMATCH as renew. A negative period removes the token at once and answers now as the expiry (Kafka 4.4's answer);
otherwise the expiry becomes ``min(max, now + period)``.
"""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.tokens.manager import TokenError, requests_allowed
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ExpireDelegationTokenRequest, ExpireDelegationTokenResponse


@handler(ExpireDelegationTokenRequest, min_version=1, max_version=2)
async def expire_delegation_token(ctx: RequestContext, req: ExpireDelegationTokenRequest,
                                  ) -> ExpireDelegationTokenResponse:
    if not requests_allowed(ctx.security_protocol, ctx.principal):
        return ExpireDelegationTokenResponse(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                             expiry_timestamp_ms=-1, throttle_time_ms=0)
    tokens = ctx.broker.tokens
    code: int = ErrorCode.NONE
    expiry = 0
    if tokens is None or not tokens.enabled:
        code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    else:
        try:
            expiry = await tokens.expire(bytes(req.hmac), ctx.principal, req.expiry_time_period_ms, ctx.now_ms())
        except TokenError as exc:
            code = exc.code
        except OSError:
            code = ErrorCode.UNKNOWN_SERVER_ERROR
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)
