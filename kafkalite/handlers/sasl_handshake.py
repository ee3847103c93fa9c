"""SaslHandshake (key 17): v0–v1. The client names a SASL mechanism; the answer lists the enabled ones.

On a SASL listener the connection's authenticator (``kafkalite.security.authenticator``) decides: an enabled
mechanism starts the exchange (v1: SaslAuthenticate requests follow; v0: bare size-prefixed tokens, as
kafka-python and pre-1.0 clients send), another is answered UNSUPPORTED_SASL_MECHANISM and the connection is
closed after the answer. After authentication a SaslHandshake starts a KIP-368 re-authentication when the
session has a lifetime and the last one began at least a second ago; otherwise, as on a
PLAINTEXT or SSL listener, Kafka's request handler answers ILLEGAL_SASL_STATE, and so do we.
"""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import SaslHandshakeRequest, SaslHandshakeResponse


@handler(SaslHandshakeRequest, min_version=0, max_version=1)
async def sasl_handshake(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    sasl = ctx.sasl
    if sasl is None or sasl.state == "complete":   # no SASL listener, or a handshake that began no re-authentication
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    enabled = list(sasl.security.mechanisms)
    if not sasl.handshake(req.mechanism or "", ctx.version):
        return SaslHandshakeResponse(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=enabled)
    return SaslHandshakeResponse(error_code=ErrorCode.NONE, mechanisms=enabled)
