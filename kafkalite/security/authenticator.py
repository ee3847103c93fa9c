"""The SASL state of one connection on a SASL_PLAINTEXT / SASL_SSL listener (Kafka's SaslServerAuthenticator).

States and what each admits (anything else closes the connection, as Kafka does):

- ``handshake_or_versions`` (new connection): ApiVersions (once answered, -> ``handshake``) or SaslHandshake.
- ``handshake``: SaslHandshake only. An enabled mechanism -> ``authenticate``; another is answered
  UNSUPPORTED_SASL_MECHANISM with the enabled list, and the connection is closed after that response.
- ``authenticate``: after SaslHandshake v1, SaslAuthenticate requests carry the tokens. After SaslHandshake v0
  the client sends bare size-prefixed tokens instead of requests (``raw_tokens``; kafka-python's and old
  clients' way) and gets bare size-prefixed tokens back. A failure is answered (SASL_AUTHENTICATION_FAILED with
  the mechanism's message) and the connection closed after the response; a bare-token failure just closes.
  Another request here closes the connection (Kafka answers it ILLEGAL_SASL_STATE first).
- ``complete``: the principal is ``User:<authorization id>``; every API goes to its handler. KIP-368: with
  ``connections.max.reauth.ms`` > 0 (or a credential that expires, OAUTHBEARER) the session has a lifetime,
  given to the client in SaslAuthenticate v1+ ``session_lifetime_ms``; a SaslHandshake starts an in-band
  re-authentication (same mechanism, same principal: else the connection closes) and any other request
  after the expiry closes the connection without an answer. As in Kafka, a SaslHandshake on a session without
  a lifetime, or less than a second after the previous re-authentication began, is no re-authentication: it
  is answered ILLEGAL_SASL_STATE and the session goes on.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from kafkalite.security.errors import SaslFailure
from kafkalite.security.principal import USER_TYPE, KafkaPrincipal
from kafkalite_wire.messages import REGISTRY

if TYPE_CHECKING:
    from kafkalite.security.listeners import ListenerSecurity

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
MIN_REAUTH_INTERVAL_S = 1.0   # Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


def _api_name(api_key: int) -> str:
    """Kafka's ApiKeys enum name (``PRODUCE``, ``SASL_HANDSHAKE``) of a key, for the log."""
    info = REGISTRY.get(api_key)
    if info is None:
        return f"api key {api_key}"
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(info.name)).upper()


class Closing(Exception):
    """The connection must close now (no response); the message is for the log."""


class SaslAuthenticator:
    def __init__(self, security: ListenerSecurity, conn: Any) -> None:
        self.security = security
        self.conn = conn                    # kafkalite.server.connection.Connection: its .principal is set here
        self.state = "handshake_or_versions"
        self.raw_tokens = False             # SaslHandshake v0: bare tokens follow
        self.server: Any = None             # the mechanism's server (PlainServer, ScramServer, ...)
        self.mechanism: str | None = None
        self.close_reason: str | None = None    # set: close once the current response is sent
        self.expires_at: float | None = None    # time.monotonic() when the session ends
        self.client_reauth = False          # the client speaks SaslAuthenticate v1+ (KIP-368)
        self._previous: tuple[str, KafkaPrincipal] | None = None   # re-authenticating: mechanism, principal
        self._reauth_started: float | None = None   # time.monotonic() the last re-authentication began

    # -- the gate, called by the connection for every request ------------------------------------------
    def admit(self, api_key: int) -> None:
        """Raise Closing unless a request of ``api_key`` may be handled now."""
        state = self.state
        if state == "complete":
            now = time.monotonic()
            if api_key == SASL_HANDSHAKE and self.expires_at is not None and (
                    self._reauth_started is None or now - self._reauth_started >= MIN_REAUTH_INTERVAL_S):
                # KIP-368: in-band re-authentication (Kafka's KafkaChannel.maybeBeginServerReauthentication: only
                # when the session has a lifetime, and at most one a second; otherwise the handshake goes to the
                # request handler, which answers ILLEGAL_SASL_STATE on a live session)
                assert self.mechanism is not None
                self._reauth_started = now
                self._previous = (self.mechanism, self.conn.principal)
                self.state = "handshake"
                return
            if self.expires_at is not None and time.monotonic() >= self.expires_at:
                raise Closing("SASL session expired (connections.max.reauth.ms / credential lifetime) and the "
                              "client did not re-authenticate")
            return
        if state == "handshake_or_versions" and api_key in (API_VERSIONS, SASL_HANDSHAKE):
            return
        if state == "handshake" and api_key == SASL_HANDSHAKE:
            return
        if state == "authenticate" and api_key == SASL_AUTHENTICATE and not self.raw_tokens:
            return
        phase = "authentication" if state == "authenticate" else "handshake"
        raise Closing(f"Unexpected Kafka request of type {_api_name(api_key)} during SASL {phase}.")

    def api_versions_answered(self) -> None:
        if self.state == "handshake_or_versions":
            self.state = "handshake"

    # -- SaslHandshake -------------------------------------------------------------------------------------
    def handshake(self, mechanism: str, version: int) -> bool:
        """True if ``mechanism`` is enabled (the exchange starts); False: answer UNSUPPORTED_SASL_MECHANISM."""
        enabled = self.security.mechanisms
        if mechanism not in enabled:
            self.close_reason = f"Unsupported SASL mechanism {mechanism}"
            return False
        if self._previous is not None and self._previous[0] != mechanism:
            self.close_reason = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                 f"re-authentication of mechanism '{self._previous[0]}'")
            return True      # Kafka answers the handshake, then fails the authentication
        self.mechanism = mechanism
        self.server = self.security.new_server(mechanism)
        if self._previous is not None and hasattr(self.server, "reauth"):
            self.server.reauth = True
        self.raw_tokens = version == 0
        self.state = "authenticate"
        return True

    # -- tokens ------------------------------------------------------------------------------------------
    def authenticate(self, token: bytes, version: int) -> tuple[bytes, int]:
        """Evaluate one client token: (server token, session lifetime ms to report). Raises SaslFailure, after
        which the connection closes once the failure response is sent."""
        if self.state != "authenticate" or self.server is None:
            raise SaslFailure("SaslAuthenticate before SaslHandshake")
        if version > 0:
            self.client_reauth = True
        try:
            reply = self.server.evaluate(token)
        except SaslFailure as exc:
            self.state = "failed"
            self.close_reason = f"SASL/{self.mechanism} authentication failed: {exc}"
            raise
        lifetime = 0
        if self.server.complete:
            principal = KafkaPrincipal(USER_TYPE, self.server.authorization_id,
                                       getattr(self.server, "token_id", None))
            if self._previous is not None and self._previous[1] != principal:
                self.state = "failed"
                old = self._previous[1]
                msg = (f"Cannot change principals during re-authentication from {old.principal_type}.{old.name}: "
                       f"{principal.principal_type}.{principal.name}")
                self.close_reason = msg
                raise SaslFailure(msg)
            lifetime = self._session_lifetime_ms()
            self.conn.principal = principal
            self.state = "complete"
            self.raw_tokens = False
            if self._previous is None:
                log.debug("%r: authenticated as %s with SASL/%s", self.conn, principal, self.mechanism)
            else:   # once per connections.max.reauth.ms per connection
                log.info("%r: re-authenticated as %s with SASL/%s", self.conn, principal, self.mechanism)
            self._previous = None
            self.server = None
        return reply, lifetime

    def _session_lifetime_ms(self) -> int:
        """Kafka's calcCompletionTimesAndReturnSessionLifetimeMs: min(max reauth, credential expiry - now)."""
        max_reauth = self.security.reauth_ms
        expiry = getattr(self.server, "lifetime_ms", None)
        now_ms = int(time.time() * 1000)
        if expiry is None and max_reauth <= 0:
            self.expires_at = None
            return 0
        if expiry is None:
            lifetime = max_reauth
        elif max_reauth <= 0:
            lifetime = max(0, expiry - now_ms)
        else:
            lifetime = max(0, min(expiry - now_ms, max_reauth))
        self.expires_at = time.monotonic() + lifetime / 1000
        return lifetime
