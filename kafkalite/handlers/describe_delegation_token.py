"""DescribeDelegationToken (key 41): v1-v3. List delegation tokens (kafkalite.security.tokens).

As Kafka 4.4 (KafkaApis.handleDescribeTokensRequest, DelegationTokenManager.filterToken): PLAINTEXT, 1-way SSL or
a token-authenticated session DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; without ``delegation.token.secret.key``
DELEGATION_TOKEN_AUTH_DISABLED; an empty owner list answers no tokens, a null one every token the caller may see.
A token is listed when (owners given) one owner is its owner, requester or a renewer, and the caller is its
owner, requester or a renewer, or may DESCRIBE the token (``DelegationToken`` resource, its id) or
DESCRIBE_TOKENS its owner (``User`` resource, KIP-373). v3 adds each token's requester.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.principal import KafkaPrincipal
from kafkalite.security.tokens.manager import TokenInfo, requests_allowed
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeDelegationTokenRequest, DescribeDelegationTokenResponse

Token = DescribeDelegationTokenResponse.DescribedDelegationToken
Renewer = DescribeDelegationTokenResponse.DescribedDelegationTokenRenewer


@handler(DescribeDelegationTokenRequest, min_version=1, max_version=3)
async def describe_delegation_token(ctx: RequestContext, req: DescribeDelegationTokenRequest,
                                    ) -> DescribeDelegationTokenResponse:
    if not requests_allowed(ctx.security_protocol, ctx.principal):
        return DescribeDelegationTokenResponse(error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                               tokens=[], throttle_time_ms=0)
    tokens = ctx.broker.tokens
    if tokens is None or not tokens.enabled:
        return DescribeDelegationTokenResponse(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, tokens=[],
                                               throttle_time_ms=0)
    owners = None if req.owners is None else [KafkaPrincipal(o.principal_type, o.principal_name)
                                              for o in req.owners]
    me = ctx.principal

    def eligible(t: TokenInfo) -> bool:
        if owners is not None and not any(t.owner_or_renewer(o) for o in owners):
            return False
        return (t.owner_or_renewer(me) or authz.allowed(ctx, authz.Op.DESCRIBE, authz.DELEGATION_TOKEN, t.token_id)
                or authz.allowed(ctx, authz.Op.DESCRIBE_TOKENS, authz.USER, str(t.owner)))

    listed = [] if owners == [] else [t for t in tokens.tokens.values() if eligible(t)]
    return DescribeDelegationTokenResponse(error_code=ErrorCode.NONE, throttle_time_ms=0, tokens=[
        Token(principal_type=t.owner.principal_type, principal_name=t.owner.name,
              token_requester_principal_type=t.requester.principal_type,
              token_requester_principal_name=t.requester.name, issue_timestamp=t.issue_ms,
              expiry_timestamp=t.expiry_ms, max_timestamp=t.max_ms, token_id=t.token_id, hmac=tokens.hmac(t.token_id),
              renewers=[Renewer(principal_type=r.principal_type, principal_name=r.name)
                        for r in t.renewers]) for t in listed])
