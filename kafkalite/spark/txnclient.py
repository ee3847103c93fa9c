"""The two transaction-coordinator requests librdkafka does not expose: DescribeTransactions and EndTxn.

The exactly-once sink splits a Kafka transaction between two processes: an executor task writes rows inside
it and the driver commits it later (two-phase commit, as Flink's Kafka sink does through reflection on the
Java producer). librdkafka can neither tell which producer id and epoch ``init_transactions`` obtained nor
commit a transaction it did not open, so this module speaks those two requests itself, with the ``wire`` codec:

- ``FindCoordinator`` (key type 1 = transaction) finds the coordinator of a transactional id;
- ``DescribeTransactions`` (KIP-664) returns its producer id, epoch and state: the executor asks right after
  ``init_transactions``, so the epoch it reports is the one its transaction is fenced by;
- ``EndTxn`` (committed=true) with that producer id and epoch completes it. The coordinator answers a retry of a
  completed commit with success, a commit of a transaction fenced by a newer epoch (a re-run task, a timeout)
  with PRODUCER_FENCED / INVALID_PRODUCER_EPOCH, which the driver must treat as "this batch is not committed".

Security: ``security.protocol`` PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, with SASL PLAIN or SCRAM-SHA-256/512
(RFC 5802 without channel binding, as Kafka does: SaslHandshake v1, then SaslAuthenticate rounds carrying the
mechanism's bytes), from the same ``kafka.*`` options the sink gives librdkafka (:class:`Security`).
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
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite_wire import api
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import (
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

# Kafka error codes that mean "ask again" for these requests.
RETRIABLE = {7, 14, 15, 16, 51}  # REQUEST_TIMED_OUT, COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS
FENCED = {47, 49, 90}  # INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED


class TxnCommitError(RuntimeError):
    """A transaction could not be committed (fenced, or the coordinator refused); ``code`` is Kafka's."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


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


def _exchange(sock: socket.socket, body: Any, version: int) -> Any:
    hdr = RequestHeader(body.API_KEY, version, 1, "kafkalite-spark-eos")
    sock.sendall(api.encode_request(hdr, body))
    buf = bytearray()
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
        data = sock.recv(1 << 16)
        if not data:
            raise ConnectionError("the broker closed the connection")
        buf += data
    _, resp = api.parse_response(body.API_KEY, version, bytes(buf[4:]))
    return resp


def _authenticate(sock: socket.socket, sec: Security) -> None:
    """SaslHandshake v1 + SaslAuthenticate v2 rounds; raises :class:`TxnCommitError` (not retried) on refusal."""
    r = _exchange(sock, SaslHandshakeRequest(mechanism=sec.mechanism), 1)
    if r.error_code:
        raise TxnCommitError(f"SASL mechanism {sec.mechanism} refused (offered: {r.mechanisms})", r.error_code)
    assert sec.username is not None and sec.password is not None

    def step(token: bytes) -> bytes:
        a = _exchange(sock, SaslAuthenticateRequest(auth_bytes=token), 2)
        if a.error_code:
            raise TxnCommitError(f"SASL authentication failed: {a.error_message}", a.error_code)
        return bytes(a.auth_bytes)

    if sec.mechanism == "PLAIN":
        step(b"\0" + sec.username.encode() + b"\0" + sec.password.encode())
        return
    algo = _SCRAM_HASH[sec.mechanism]
    bare = f"n={sec.username.replace('=', '=3D').replace(',', '=2C')},r={secrets.token_urlsafe(18)}"
    server_first = step(("n,," + bare).encode()).decode()
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    if not attrs["r"].startswith(bare.rsplit("r=", 1)[1]):
        raise TxnCommitError("SCRAM: the server's nonce does not extend ours", 58)
    salted = hashlib.pbkdf2_hmac(algo, sec.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(hashlib.new(algo, client_key).digest(), auth_message, algo).digest()
    proof = bytes(x ^ y for x, y in zip(client_key, signature, strict=True))
    final = step(f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode()
    expected = hmac.new(hmac.new(salted, b"Server Key", algo).digest(), auth_message, algo).digest()
    if not final.startswith("v=") or not hmac.compare_digest(base64.b64decode(final[2:]), expected):
        raise TxnCommitError("SCRAM: the server's signature does not match", 58)


def _call(host: str, port: int, body: Any, version: int, timeout: float, sec: Security | None = None) -> Any:
    with socket.create_connection((host, port), timeout=timeout) as raw:
        sock = raw
        if sec is not None and sec.tls:
            sock = sec.context().wrap_socket(raw, server_hostname=host)
        try:
            if sec is not None and sec.sasl:
                _authenticate(sock, sec)
            return _exchange(sock, body, version)
        finally:
            if sock is not raw:
                sock.close()


def _bootstrap(servers: str) -> list[tuple[str, int]]:
    out = []
    for item in servers.split(","):
        item = item.strip().split("://")[-1]
        host, _, port = item.rpartition(":")
        out.append((host.strip("[]"), int(port)))
    return out


class TxnClient:
    """Finds the transaction coordinator from ``bootstrap.servers`` and retries through broker restarts."""

    def __init__(self, bootstrap_servers: str, *, deadline_s: float = 180.0, timeout_s: float = 30.0,
                 security: Security | None = None) -> None:
        self.bootstrap = _bootstrap(bootstrap_servers)
        self.security = security
        self.deadline_s = deadline_s
        self.timeout_s = timeout_s

    def _coordinator(self, txn_id: str) -> tuple[str, int]:
        last: Exception | None = None
        for host, port in self.bootstrap:
            try:
                r = _call(host, port, FindCoordinatorRequest(key=txn_id, key_type=1), 1, self.timeout_s,
                          self.security)
            except OSError as exc:
                last = exc
                continue
            if r.error_code == 0:
                return r.host, r.port
            last = TxnCommitError(f"FindCoordinator for {txn_id!r}: error {r.error_code}", r.error_code)
        raise last if last is not None else ConnectionError("no bootstrap server")

    def _retrying(self, txn_id: str, attempt: Any) -> Any:
        end = time.monotonic() + self.deadline_s
        delay = 0.1
        while True:
            try:
                return attempt(*self._coordinator(txn_id))
            except ssl.SSLCertVerificationError:
                raise  # a certificate the trust store refuses will not be accepted on a retry
            except (OSError, TxnCommitError) as exc:
                code = getattr(exc, "code", None)
                if (code is not None and code not in RETRIABLE) or time.monotonic() > end:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def describe(self, txn_id: str) -> tuple[int, int, str]:
        """``(producer id, epoch, state)`` of ``txn_id`` as its coordinator has it now."""

        def attempt(host: str, port: int) -> tuple[int, int, str]:
            r = _call(host, port, DescribeTransactionsRequest(transactional_ids=[txn_id]), 0, self.timeout_s,
                      self.security)
            st = r.transaction_states[0]
            if st.error_code:
                raise TxnCommitError(f"DescribeTransactions {txn_id!r}: error {st.error_code}", st.error_code)
            return st.producer_id, st.producer_epoch, st.transaction_state

        return self._retrying(txn_id, attempt)

    def commit(self, txn_id: str, producer_id: int, epoch: int, *, committed: bool = True) -> None:
        """EndTxn for the transaction ``(producer_id, epoch)`` opened under ``txn_id``; idempotent.
        ``committed=False`` aborts it."""
        what = "commit" if committed else "abort"

        def attempt(host: str, port: int) -> None:
            req = EndTxnRequest(transactional_id=txn_id, producer_id=producer_id, producer_epoch=epoch,
                                committed=committed)
            r = _call(host, port, req, 2, self.timeout_s, self.security)
            if r.error_code:
                raise TxnCommitError(f"EndTxn({what}) {txn_id!r} producer {producer_id} epoch {epoch}: error "
                                     f"{r.error_code}", r.error_code)

        self._retrying(txn_id, attempt)
