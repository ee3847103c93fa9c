"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side, as Kafka's ScramSaslServer.

A credential is what Kafka stores, never the password: ``salt``, ``stored_key = H(HMAC(salted, "Client Key"))``,
``server_key = HMAC(salted, "Server Key")`` and ``iterations``, where ``salted = Hi(password, salt, i)``
(PBKDF2-HMAC). AlterUserScramCredentials carries ``salt`` and ``salted_password`` (the client ran Hi), so the
broker never sees a password either. Iterations must be within 4096..16384 (Kafka's ScramMechanism limits).

Exchange (Kafka's ScramMessages grammar): client-first ``n,[a=authzid],n=<saslname>,r=<cnonce>[,ext=..]``;
server-first ``r=<cnonce+snonce>,s=<b64 salt>,i=<iterations>``; client-final ``c=<b64 gs2 header>,r=<nonce>,
p=<b64 proof>``; server-final ``v=<b64 server signature>``. Kafka answers every failure here (unknown user,
bad proof, malformed message) with one message that does not tell which: "Authentication failed during
authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256" (the detail goes to its log).
Delegation-token authentication (the ``tokenauth=true`` extension, Kafka's ScramExtensions): the user name is a
token id and the password the base64 of the token's HMAC; ``token_lookup(token_id, mechanism)`` gives the token's
credential, owner and expiry; the authorization id becomes the owner, ``token_id`` is set, and the session lasts at
most until the token's expiry (``lifetime_ms``, KIP-368). An unknown or expired token fails as invalid credentials.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from kafkalite.security.errors import SaslFailure, invalid_credentials

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
# mechanism name -> (hash name, the ScramMechanism type byte of the admin APIs)
MECHANISMS: dict[str, tuple[str, int]] = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
BY_TYPE: dict[int, str] = {t: name for name, (_h, t) in MECHANISMS.items()}

_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_B64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXT = r"(?:,[A-Za-z]+=[\x01-\x2b\x2d-\x7f]+)*"
_CLIENT_FIRST = re.compile(rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?P<bare>(?:m=[\x01-\x2b\x2d-\x7f]+,)?"
                           rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXT}))")
_CLIENT_FINAL = re.compile(rf"(?P<without>c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXT}),p=(?P<proof>{_B64})")


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations})"   # keys stay out of logs


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def credential_from_salted(mechanism: str, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    """The stored form of a salted password (what AlterUserScramCredentials sends)."""
    h = MECHANISMS[mechanism][0]
    client_key = _hmac(h, salted_password, b"Client Key")
    return ScramCredential(bytes(salt), hashlib.new(h, client_key).digest(),
                           _hmac(h, salted_password, b"Server Key"), iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2 with the mechanism's HMAC (what clients compute)."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], password.encode(), salt, iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = os.urandom(32) if salt is None else salt
    return credential_from_salted(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                                  iterations)


def username_of(saslname: str) -> str:
    """RFC 5802 saslname -> user name (``=2C`` is ',', ``=3D`` is '='); Kafka's ScramFormatter.username."""
    name = saslname.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise ValueError("invalid saslname")
    return name.replace("=3D", "=")


class ScramServer:
    """One SCRAM exchange. ``lookup(user, mechanism)`` returns the stored credential or None."""

    def __init__(self, mechanism: str, lookup: Callable[[str, str], ScramCredential | None],
                 server_nonce: str | None = None, strict_nonce: bool = False,
                 token_lookup: Callable[[str, str], tuple[ScramCredential, str, int] | None] | None = None) -> None:
        self.mechanism = mechanism
        self.strict_nonce = strict_nonce     # Kafka 4.x: the final nonce must be the server-first one exactly
        self.hash = MECHANISMS[mechanism][0]
        self.lookup = lookup
        self.token_lookup = token_lookup    # token id, mechanism -> (credential, owner name, expiry ms) or None
        self.token_id: str | None = None
        self.complete = False
        self.authorization_id: str | None = None
        self.lifetime_ms: int | None = None
        self.reauth = False
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._gs2 = self._client_first_bare = self._server_first = self._nonce = ""
        self._server_nonce = server_nonce    # tests pin it to check RFC 7677's example exchange

    def _fail(self, detail: str) -> SaslFailure:
        self._state = "failed"
        self._credential = None
        return invalid_credentials(self.mechanism, detail, self.reauth)

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("ascii")
        except UnicodeDecodeError:
            raise self._fail("SCRAM message is not ASCII") from None
        if self._state == "first":
            return self._first(text)
        if self._state == "final":
            return self._final(text)
        raise self._fail(f"Unexpected challenge in Sasl server state {self._state}")

    def _first(self, text: str) -> bytes:
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise self._fail("Invalid SCRAM client first message format")
        try:
            user = username_of(m["saslname"])
        except ValueError:
            raise self._fail("Invalid username") from None
        exts = dict(e.split("=", 1) for e in (m["ext"] or "").split(",") if e)
        token_auth = exts.get("tokenauth", "").lower() == "true"
        owner = user
        cred: ScramCredential | None
        if token_auth:
            found = self.token_lookup(user, self.mechanism) if self.token_lookup is not None else None
            if found is None:
                raise self._fail(f"Token Authentication failed: Invalid tokenId : {user}")
            cred, owner, self.lifetime_ms = found
        else:
            cred = self.lookup(user, self.mechanism)
        if cred is None:
            raise self._fail("Authentication failed: Invalid user credentials")
        authzid = m["authzid"]
        if authzid and username_of(authzid) != user:
            self._state = "failed"
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        if cred.iterations < MIN_ITERATIONS:
            raise self._fail(f"Iterations {cred.iterations} is less than the minimum {MIN_ITERATIONS}")
        self._credential = cred
        self.authorization_id = owner
        self.token_id = user if token_auth else None
        self._gs2 = m["gs2"]
        self._client_first_bare = m["bare"]
        # Kafka: new BigInteger(130, random).toString(36); any printable non-comma string will do
        self._nonce = m["nonce"] + (self._server_nonce or secrets.token_urlsafe(24))
        self._server_first = f"r={self._nonce},s={base64.b64encode(cred.salt).decode()},i={cred.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _final(self, text: str) -> bytes:
        m = _CLIENT_FINAL.fullmatch(text)
        cred = self._credential
        if m is None or cred is None:
            raise self._fail("Invalid SCRAM client final message format")
        # Kafka 3.8.1-3.9 check only that the nonce ends with the server-first one: librdkafka before 2.6.1
        # (Debian's kcat) sends client nonce + the whole server nonce (which already starts with the client's).
        # Kafka 4.x compares it whole (RFC 5802; ScramSaslServer, checked against Kafka 4.4), so those clients
        # cannot log in with SCRAM there: strict_nonce under the 4.x profiles.
        ok = m["nonce"] == self._nonce if self.strict_nonce else m["nonce"].endswith(self._nonce)
        if not ok:
            raise self._fail("Invalid client nonce in the final client message.")
        if base64.b64decode(m["channel"]) != self._gs2.encode():
            raise self._fail("channel binding data does not match the client first message")
        auth_message = f"{self._client_first_bare},{self._server_first},{m['without']}".encode()
        client_signature = _hmac(self.hash, cred.stored_key, auth_message)
        proof = base64.b64decode(m["proof"])
        if len(proof) != len(client_signature):
            raise self._fail("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), cred.stored_key):
            raise self._fail("Invalid client credentials")
        server_signature = _hmac(self.hash, cred.server_key, auth_message)
        self._credential = None
        self._state = "complete"
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)
