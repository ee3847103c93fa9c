"""SaslAuthenticate (key 36): v0–v2. One SASL token each way, after SaslHandshake v1.

Success: the mechanism's reply token (empty for PLAIN, the server-first / server-final messages for SCRAM)
and, from v1, ``session_lifetime_ms`` (KIP-368: ``connections.max.reauth.ms``, or less when the credential
expires first; 0 = no limit) once the exchange is complete. Failure: SASL_AUTHENTICATION_FAILED with Kafka's
message (PLAIN: "Authentication failed: Invalid username or password"; SCRAM: "Authentication failed during
authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256") and the connection is closed
after this response. Outside an exchange (a PLAINTEXT listener, or already authenticated) Kafka's request
handler answers ILLEGAL_SASL_STATE.
"""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.errors import SaslFailure
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import SaslAuthenticateRequest, SaslAuthenticateResponse


@handler(SaslAuthenticateRequest, min_version=0, max_version=2)
async def sasl_authenticate(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    sasl = ctx.sasl
    if sasl is None or sasl.state != "authenticate":
        return SaslAuthenticateResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                                        error_message="SaslAuthenticate request received after successful "
                                                      "authentication", auth_bytes=b"")
    try:
        reply, lifetime = sasl.authenticate(bytes(req.auth_bytes or b""), ctx.version)
    except SaslFailure as exc:
        return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                        error_message=exc.client_message, auth_bytes=b"")
    return SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message=None, auth_bytes=reply,
                                    session_lifetime_ms=lifetime)
