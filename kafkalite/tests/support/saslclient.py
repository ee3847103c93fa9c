"""Client halves of SASL PLAIN / SCRAM / OAUTHBEARER over a RawClient, for the broker's SASL tests."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import struct
import time
from typing import Any

from kafkalite.security.scram import MECHANISMS
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest


class ScramClient:
    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None,
                 extensions: str = "") -> None:
        self.extensions = extensions    # e.g. "tokenauth=true" (a delegation token: user = id, password = HMAC)
        self.hash = MECHANISMS[mechanism][0]
        self.user, self.password = user, password
        self.nonce = nonce or secrets.token_urlsafe(18)
        self.server_signature = b""

    def first(self) -> bytes:
        self.bare = f"n={self.user.replace('=', '=3D').replace(',', '=2C')},r={self.nonce}"
        if self.extensions:
            self.bare += "," + self.extensions
        return ("n,," + self.bare).encode()

    def final(self, server_first: bytes) -> bytes:
        sf = server_first.decode()
        attrs = dict(a.split("=", 1) for a in sf.split(","))
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), base64.b64decode(attrs["s"]),
                                     int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        stored = hashlib.new(self.hash, client_key).digest()
        without = f"c=biws,r={attrs['r']}"
        auth = f"{self.bare},{sf},{without}".encode()
        sig = hmac.new(stored, auth, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig, strict=True))
        server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        self.server_signature = hmac.new(server_key, auth, self.hash).digest()
        return f"{without},p={base64.b64encode(proof).decode()}".encode()


def unsecured_jwt(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()  # noqa: E731
    return f"{enc(header or {'alg': 'none'})}.{enc(claims)}."


def oauth_token(sub: str = "alice", lifetime_s: float = 3600, **extra: Any) -> bytes:
    jwt = unsecured_jwt({"sub": sub, "iat": int(time.time()), "exp": time.time() + lifetime_s, **extra})
    return f"n,,\x01auth=Bearer {jwt}\x01\x01".encode()


def handshake(c: RawClient, mechanism: str, version: int = 1) -> Any:
    return c.request(SaslHandshakeRequest(mechanism=mechanism), version)


def authenticate(c: RawClient, token: bytes, version: int = 2) -> Any:
    return c.request(SaslAuthenticateRequest(auth_bytes=token), version)


def api_versions(c: RawClient) -> Any:
    return c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)


def raw_token(c: RawClient, token: bytes) -> bytes | None:
    """SaslHandshake v0 style: a bare size-prefixed token each way."""
    c.send_raw(struct.pack(">i", len(token)) + token)
    return c.recv_frame()


def login_plain(c: RawClient, user: str, password: str) -> Any:
    handshake(c, "PLAIN")
    return authenticate(c, f"\0{user}\0{password}".encode())


def login_scram(c: RawClient, mechanism: str, user: str, password: str, version: int = 2,
                extensions: str = "") -> Any:
    handshake(c, mechanism)
    sc = ScramClient(mechanism, user, password, extensions=extensions)
    r1 = authenticate(c, sc.first(), version)
    if r1.error_code:
        return r1
    r2 = authenticate(c, sc.final(bytes(r1.auth_bytes)), version)
    if not r2.error_code:
        assert bytes(r2.auth_bytes) == b"v=" + base64.b64encode(sc.server_signature)
    return r2
