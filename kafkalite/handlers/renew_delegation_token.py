"""RenewDelegationToken (key 39): v1-v2. Push a token's expiry out (kafkalite.security.tokens).

As Kafka 4.4: PLAINTEXT, 1-way SSL or a token-authenticated session DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry
-1); then, by HMAC, DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_EXPIRED, DELEGATION_TOKEN_OWNER_MISMATCH (only the
owner and the renewers may renew); the new expiry is ``min(max, now + min(expiry.time.ms, period if > 0))``.
"""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.tokens.manager import TokenError, requests_allowed
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import RenewDelegationTokenRequest, RenewDelegationTokenResponse


@handler(RenewDelegationTokenRequest, min_version=1, max_version=2)
async def renew_delegation_token(ctx: RequestContext, req: RenewDelegationTokenRequest,
                                 ) -> RenewDelegationTokenResponse:
    if not requests_allowed(ctx.security_protocol, ctx.principal):
        return RenewDelegationTokenResponse(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                            expiry_timestamp_ms=-1, throttle_time_ms=0)
    tokens = ctx.broker.tokens
    code: int = ErrorCode.NONE
    expiry = 0
    if tokens is None:
        code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    else:
        try:
            expiry = await tokens.renew(bytes(req.hmac), ctx.principal, req.renew_period_ms, ctx.now_ms())
        except TokenError as exc:
            code = exc.code
        except OSError:
            code = ErrorCode.UNKNOWN_SERVER_ERROR
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)
