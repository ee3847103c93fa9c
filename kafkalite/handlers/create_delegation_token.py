"""CreateDelegationToken (key 38): v1-v3. Issue a delegation token (kafkalite.security.tokens).

As Kafka 4.4 (KafkaApis.handleCreateTokenRequest, then DelegationTokenControlManager): on PLAINTEXT, 1-way SSL
or a token-authenticated session DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; v3's owner (KIP-373), when named and not
the requester, needs CREATE_TOKENS on ``User`` resource ``<type>:<name>`` (DELEGATION_TOKEN_AUTHORIZATION_FAILED);
these two answer with -1 timestamps. Without ``delegation.token.secret.key`` DELEGATION_TOKEN_AUTH_DISABLED; a
renewer that is not a ``User`` INVALID_PRINCIPAL_TYPE (0 timestamps, the controller's answer). v3 also answers the
requester. A failed write of the token file is UNKNOWN_SERVER_ERROR and issues nothing.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.principal import KafkaPrincipal
from kafkalite.security.tokens.manager import TokenError, requests_allowed
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import CreateDelegationTokenRequest, CreateDelegationTokenResponse


def _answer(code: int, owner: KafkaPrincipal, requester: KafkaPrincipal, ts: int = -1) -> CreateDelegationTokenResponse:
    return CreateDelegationTokenResponse(
        error_code=code, principal_type=owner.principal_type, principal_name=owner.name,
        token_requester_principal_type=requester.principal_type, token_requester_principal_name=requester.name,
        issue_timestamp_ms=ts, expiry_timestamp_ms=ts, max_timestamp_ms=ts, token_id="", hmac=b"",
        throttle_time_ms=0)


@handler(CreateDelegationTokenRequest, min_version=1, max_version=3)
async def create_delegation_token(ctx: RequestContext, req: CreateDelegationTokenRequest,
                                  ) -> CreateDelegationTokenResponse:
    requester = ctx.principal
    requester = KafkaPrincipal(requester.principal_type, requester.name)   # the token id is no part of it
    name = getattr(req, "owner_principal_name", None)
    owner = KafkaPrincipal(req.owner_principal_type or "", name) if name else requester
    if not requests_allowed(ctx.security_protocol, ctx.principal):
        return _answer(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, owner, requester)
    if owner != requester and not authz.allowed(ctx, authz.Op.CREATE_TOKENS, authz.USER, str(owner)):
        return _answer(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, owner, requester)
    tokens = ctx.broker.tokens
    if tokens is None or not tokens.enabled:
        return _answer(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, owner, requester, 0)
    renewers = [KafkaPrincipal(r.principal_type, r.principal_name) for r in req.renewers or []]
    try:
        info, hmac = await tokens.create(owner, requester, renewers, req.max_lifetime_ms, ctx.now_ms())
    except TokenError as exc:
        return _answer(exc.code, owner, requester, 0)
    except OSError:
        return _answer(ErrorCode.UNKNOWN_SERVER_ERROR, owner, requester, 0)
    resp = _answer(ErrorCode.NONE, owner, requester)
    resp.issue_timestamp_ms, resp.expiry_timestamp_ms, resp.max_timestamp_ms = info.issue_ms, info.expiry_ms, info.max_ms
    resp.token_id, resp.hmac = info.token_id, hmac
    return resp
