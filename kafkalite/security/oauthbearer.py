"""SASL/OAUTHBEARER (RFC 7628) with Kafka's *unsecured* JWS validator, for development only.

Kafka's OAUTHBEARER without a configured validator (``sasl.server.callback.handler.class`` unset) uses
OAuthBearerUnsecuredValidatorCallbackHandler: the token is an unsigned JWT, ``header.claims.`` in base64url,
with header ``alg`` exactly ``none`` and an empty signature part. Its claims must hold the principal claim
(``sub``, or the JAAS option ``unsecuredValidatorPrincipalClaimName``) as a non-blank string and a numeric
``exp`` (seconds) not yet passed; an ``iat`` (optional) must not be in the future; ``exp`` must be after
``iat``; the scope claim (``scope``, a string or a list of strings) must contain every scope in
``unsecuredValidatorRequiredScope``; ``unsecuredValidatorAllowableClockSkewMs`` loosens the time checks.
Clients mint such tokens with e.g. confluent-kafka's ``sasl.oauthbearer.config=principal=alice`` or Java's
``unsecuredLoginStringClaim_sub="alice"``.

The client's message is ``n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01]*\\x01``. A token that
fails validation is answered, as RFC 7628 says, with a JSON error challenge ``{"status":"invalid_token"}``
(``insufficient_scope`` for a missing scope); the client then sends ``\\x01`` and the exchange fails with that
JSON as the message. The session may last no longer than the token (KIP-368: ``exp`` bounds the session
lifetime the broker gives in SaslAuthenticate). The token itself is never logged.
"""
from __future__ import annotations

import base64
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from kafkalite.security.errors import SaslFailure

log = logging.getLogger(__name__)

MECHANISM = "OAUTHBEARER"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_KV = r"(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*"
_INITIAL = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,\x01(?P<kvpairs>{_KV})\x01", re.S)
_AUTH = re.compile(r"(?P<scheme>\w+)[ ]+(?P<token>[-_~+/.a-zA-Z0-9]+=*)")


class InvalidToken(Exception):
    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


def _b64url_json(part: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except ValueError:
        raise InvalidToken("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(raw)
    except ValueError:
        raise InvalidToken("malformed JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken("malformed JSON")
    return value


def validate_unsecured_jws(token: str, options: Mapping[str, str], now_ms: int) -> tuple[str, int]:
    """Kafka's OAuthBearerUnsecuredJws + validator checks; returns (principal, expiry in ms)."""
    principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
    scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
    required = (options.get("unsecuredValidatorRequiredScope") or "").split()
    try:
        skew = int((options.get("unsecuredValidatorAllowableClockSkewMs") or "0").strip() or 0)
    except ValueError:
        skew = 0
    if ".." in token:
        raise InvalidToken("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise InvalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
    header, claims = _b64url_json(parts[0]), _b64url_json(parts[1])
    if header.get("alg") != "none":
        raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise InvalidToken("Unsecured JWS must not contain a digital signature")
    exp = claims.get("exp")
    if exp is None:
        raise InvalidToken("No expiration time in JWT")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise InvalidToken(f"The 'exp' claim was not of type Number: {type(exp).__name__}")
    principal = claims.get(principal_claim)
    if principal is None:
        raise InvalidToken(f"No principal name in JWT claim: {principal_claim}")
    if not isinstance(principal, str):
        raise InvalidToken(f"The '{principal_claim}' claim was not of type String")
    if not principal.strip():
        raise InvalidToken(f"No principal name in JWT claim: {principal_claim}")
    iat = claims.get("iat")
    if iat is not None:
        if isinstance(iat, bool) or not isinstance(iat, int | float):
            raise InvalidToken("The iat claim had the incorrect type")
        if iat * 1000 > now_ms + skew:
            raise InvalidToken(f"The Issued At value ({iat} seconds) was after the indicated time ({now_ms} ms) "
                               f"plus allowable clock skew ({skew} ms)")
    if now_ms - skew >= exp * 1000:
        raise InvalidToken(f"The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or "
                           f"after the Expiration Time value ({exp} seconds)")
    if iat is not None and exp <= iat:
        raise InvalidToken(f"The Expiration Time time ({exp} seconds) was not after the Issued At time "
                           f"({iat} seconds)")
    if required:
        scope = claims.get(scope_claim)
        have = set(scope.split()) if isinstance(scope, str) else set(scope) if isinstance(scope, list) else set()
        missing = [s for s in required if s not in have]
        if missing:
            raise InvalidToken(f"The provided scope ({sorted(have)}) was missing a required scope ({missing})",
                               scope=" ".join(required))
    return principal, int(exp * 1000)


class OAuthBearerServer:
    mechanism = MECHANISM

    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = options
        self.complete = False
        self.authorization_id: str | None = None
        self.lifetime_ms: int | None = None    # the token's expiry (epoch ms): bounds the session
        self._error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self._error is not None:
            raise SaslFailure(self._error)
        self._error = None
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("Invalid OAUTHBEARER client first message") from None
        m = _INITIAL.fullmatch(text)
        if m is None:
            raise SaslFailure("Invalid OAUTHBEARER client first message")
        pairs = dict(kv.split("=", 1) for kv in m["kvpairs"].split("\x01") if kv)
        auth = _AUTH.fullmatch(pairs.get("auth", ""))
        if auth is None or auth["scheme"].lower() != "bearer":
            raise SaslFailure("Invalid OAUTHBEARER client first message: no Bearer token")
        try:
            principal, expiry = validate_unsecured_jws(auth["token"], self.options, int(time.time() * 1000))
        except InvalidToken as exc:
            log.info("OAUTHBEARER token rejected: %s", exc)
            status = "insufficient_scope" if exc.scope is not None else "invalid_token"
            self._error = json.dumps({"status": status, **({"scope": exc.scope} if exc.scope else {})},
                                     separators=(", ", ":"))
            return self._error.encode()
        authzid = m["authzid"]
        if authzid and authzid != principal:
            raise SaslFailure(f"Authentication failed: Client requested an authorization id ({authzid}) that is "
                              f"different from the token's principal name ({principal})")
        self.authorization_id = principal
        self.lifetime_ms = expiry
        self.complete = True
        return b""
