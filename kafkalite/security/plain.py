"""SASL/PLAIN (RFC 4616) checked against PlainLoginModule's ``user_<name>`` options, as Kafka's PlainSaslServer.

The client's single message is ``authzid NUL authcid NUL password`` (UTF-8). Kafka's messages, which the
client sees in SaslAuthenticate's error_message: an empty name "Authentication failed: username not specified",
an empty password "... password not specified", a wrong pair "Authentication failed: Invalid username or
password", an authorization id other than the user "Authentication failed: Client requested an authorization
id that is different from username". Passwords are compared in constant time.
"""
from __future__ import annotations

import hmac
from collections.abc import Mapping

from kafkalite.security.errors import SaslFailure

MECHANISM = "PLAIN"


class PlainServer:
    mechanism = MECHANISM

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self.complete = False
        self.authorization_id: str | None = None
        self.lifetime_ms: int | None = None     # PLAIN credentials do not expire

    def evaluate(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        parts = text.split("\0", 3)
        if len(parts) != 3:
            raise SaslFailure(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self.users.get(username)
        ok = hmac.compare_digest(password.encode(), (expected if expected is not None else "\0" + password).encode())
        if expected is None or not ok:
            raise SaslFailure("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        self.authorization_id = username
        self.complete = True
        return b""
