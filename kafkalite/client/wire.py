"""A small synchronous Kafka client on the project's own codec (``wire``): one request over one socket.

Some requests a tool or a connector needs are not exposed by confluent-kafka (librdkafka 2.x has no EndTxn with
a foreign producer id, no ShareGroupDescribe / DescribeShareGroupOffsets / AlterShareGroupOffsets): those are
spoken here directly. Every call is bounded: a socket timeout on connect and on each read, a response size cap,
and a frame that does not parse raises :class:`WireError` (never a hang or unbounded buffer).

- :func:`exchange` sends one request (request header v1/v2 as ``kafkalite_wire.api.encode_request`` picks for the
  version) and reads one size-prefixed response;
- :class:`Connection` opens a socket (TLS with :class:`Security`), runs SASL (PLAIN or SCRAM-SHA-256/512,
  RFC 5802 without channel binding as Kafka does: SaslHandshake v1, then SaslAuthenticate v2 rounds carrying
  the mechanism's bytes) and then carries any number of requests; :func:`call` is one request on a fresh one;
- :func:`bootstrap` parses ``bootstrap.servers``.

Users: ``kafkalite.spark.txnclient`` (DescribeTransactions / EndTxn for the exactly-once sink) and
``kafkalite.client.shareadmin`` (share-group admin for ``kafkalite groups``).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import socket
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError, ErrorCode
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import SaslAuthenticateRequest, SaslHandshakeRequest

MAX_RESPONSE = 64 << 20   # a response larger than this is refused (a tool's answers are far smaller)


class WireError(RuntimeError):
    """A request failed: Kafka refused it (``code`` is Kafka's error code) or the answer was unusable."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def error_name(code: int) -> str:
    """Kafka's name of an error code (``GROUP_ID_NOT_FOUND``), or the number when it is not one we know."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


_JAAS_VALUE = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_SCRAM_HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(frozen=True)
class Security:
    """How to reach the brokers, from the sink's ``kafka.*`` options in librdkafka's names or Java's:
    ``security.protocol``; ``sasl.mechanism(s)``; ``sasl.username`` / ``sasl.password`` or Java's
    ``sasl.jaas.config`` (``... username="u" password="p";``); ``ssl.ca.location`` or a PEM
    ``ssl.truststore.location``; ``ssl.certificate.location`` / ``ssl.key.location`` (/ ``ssl.key.password``)
    for a client certificate; ``ssl.endpoint.identification.algorithm`` (``none`` or empty: no host name
    check; default ``https``: checked, as librdkafka and Java do)."""

    protocol: str = "PLAINTEXT"
    mechanism: str = "PLAIN"
    username: str | None = None
    password: str | None = None
    ca_location: str | None = None
    cert_location: str | None = None
    key_location: str | None = None
    key_password: str | None = None
    check_hostname: bool = True

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Security:
        p = {str(k).lower(): str(v) for k, v in params.items()}
        user, password = p.get("sasl.username"), p.get("sasl.password")
        for key, value in _JAAS_VALUE.findall(p.get("sasl.jaas.config", "")):
            value = re.sub(r"\\(.)", r"\1", value)
            if key == "username":
                user = user or value
            else:
                password = password or value
        sec = cls(protocol=p.get("security.protocol", "PLAINTEXT").upper(),
                  mechanism=p.get("sasl.mechanism", p.get("sasl.mechanisms", "PLAIN")).upper(),
                  username=user, password=password,
                  ca_location=p.get("ssl.ca.location", p.get("ssl.truststore.location")),
                  cert_location=p.get("ssl.certificate.location"), key_location=p.get("ssl.key.location"),
                  key_password=p.get("ssl.key.password"),
                  check_hostname=p.get("ssl.endpoint.identification.algorithm", "https").lower()
                  not in ("", "none"))
        if sec.protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ValueError(f"security.protocol {sec.protocol!r} is not supported")
        if sec.sasl and (sec.mechanism not in ("PLAIN", *_SCRAM_HASH) or user is None or password is None):
            raise ValueError(f"SASL mechanism {sec.mechanism!r} needs to be PLAIN or SCRAM-SHA-256/512 with a "
                             "username and password (sasl.username/sasl.password or sasl.jaas.config)")
        return sec

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    def __repr__(self) -> str:  # never the password
        return f"Security({self.protocol}, {self.mechanism if self.sasl else '-'}, user={self.username!r})"

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_location)
        ctx.check_hostname = self.check_hostname
        if self.cert_location:
            ctx.load_cert_chain(self.cert_location, self.key_location, self.key_password)
        return ctx


def exchange(sock: socket.socket, client_id: str, body: Any, version: int) -> Any:
    """Send ``body`` at ``version`` and return the parsed response (the socket's timeout bounds each read)."""
    hdr = RequestHeader(body.API_KEY, version, 1, client_id)
    sock.sendall(api.encode_request(hdr, body))
    buf = bytearray()
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        if len(buf) >= 4 and not 0 <= struct.unpack(">i", buf[:4])[0] <= MAX_RESPONSE:
            raise WireError(f"response of {struct.unpack('>i', buf[:4])[0]} bytes refused", -1)
        data = sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the broker closed the connection")
        buf += data
    try:
        _, resp = api.parse_response(body.API_KEY, version, bytes(buf[4:]))
    except DecodeError as exc:
        raise WireError(f"{type(body).__name__} v{version}: the response does not parse ({exc})", -1) from None
    return resp


def authenticate(sock: socket.socket, sec: Security, client_id: str, error: type[WireError] = WireError) -> None:
    """SaslHandshake v1 + SaslAuthenticate v2 rounds; raises ``error`` (a :class:`WireError`) on refusal."""
    r = exchange(sock, client_id, SaslHandshakeRequest(mechanism=sec.mechanism), 1)
    if r.error_code:
        raise error(f"SASL mechanism {sec.mechanism} refused (offered: {r.mechanisms})", r.error_code)
    assert sec.username is not None and sec.password is not None

    def step(token: bytes) -> bytes:
        a = exchange(sock, client_id, SaslAuthenticateRequest(auth_bytes=token), 2)
        if a.error_code:
            raise error(f"SASL authentication failed: {a.error_message}", a.error_code)
        return bytes(a.auth_bytes)

    if sec.mechanism == "PLAIN":
        step(b"\0" + sec.username.encode() + b"\0" + sec.password.encode())
        return
    algo = _SCRAM_HASH[sec.mechanism]
    bare = f"n={sec.username.replace('=', '=3D').replace(',', '=2C')},r={secrets.token_urlsafe(18)}"
    server_first = step(("n,," + bare).encode()).decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    if not attrs["r"].startswith(bare.rsplit("r=", 1)[1]):
        raise error("SCRAM: the server's nonce does not extend ours", 58)
    salted = hashlib.pbkdf2_hmac(algo, sec.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(algo, client_key).digest(), auth_message, algo).digest()
    proof = bytes(x ^ y for x, y in zip(client_key, signature, strict=True))
    final = step(f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode()
    expected = hmac.new(hmac.new(salted, b"Server Key", algo).digest(), auth_message, algo).digest()
    if not final.startswith("v=") or not hmac.compare_digest(base64.b64decode(final[2:]), expected):
        raise error("SCRAM: the server's signature does not match", 58)


class Connection:
    """One socket to one broker (TLS and SASL done once), for several requests in turn; a context manager."""

    def __init__(self, host: str, port: int, *, timeout: float, security: Security | None = None,
                 client_id: str = "kafkalite", error: type[WireError] = WireError) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        raw = socket.create_connection((host, port), timeout=timeout)
        self.sock: socket.socket = raw
        try:
            if security is not None and security.tls:
                self.sock = security.context().wrap_socket(raw, server_hostname=host)
            if security is not None and security.sasl:
                authenticate(self.sock, security, client_id, error)
        except BaseException:
            self.close()
            raw.close()
            raise

    def request(self, body: Any, version: int) -> Any:
        return exchange(self.sock, self.client_id, body, version)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def call(host: str, port: int, body: Any, version: int, timeout: float, sec: Security | None = None, *,
         client_id: str = "kafkalite", error: type[WireError] = WireError) -> Any:
    """One request on a fresh connection."""
    with Connection(host, port, timeout=timeout, security=sec, client_id=client_id, error=error) as c:
        return c.request(body, version)


def bootstrap(servers: str) -> list[tuple[str, int]]:
    """``host:port[,host:port]`` (optionally ``PROTO://`` prefixed, IPv6 in brackets) as (host, port) pairs."""
    out = []
    for item in servers.split(","):
        item = item.strip().split("://")[-1]
        host, _, port = item.rpartition(":")
        try:
            out.append((host.strip("[]"), int(port)))
        except ValueError:
            raise ValueError(f"bootstrap server {item!r}: expected HOST:PORT") from None
    return out
