"""The TLS settings of SSL and SASL_SSL listeners (Kafka's ``ssl.*`` names) -> an ``ssl.SSLContext``.

Key store (``ssl.keystore.type=PEM``, kafkalite's default and the only type it reads; Kafka's default is JKS):
``ssl.keystore.location`` is a PEM file holding the private key and the certificate chain, or
``ssl.keystore.key`` + ``ssl.keystore.certificate.chain`` hold them inline; ``ssl.key.password`` decrypts an
encrypted key. As in Kafka's DefaultSslEngineFactory, a PEM key store takes no ``ssl.keystore.password``.
Trust store (for client certificates): ``ssl.truststore.location`` (PEM file of CA certificates) or
``ssl.truststore.certificates`` (inline PEM). ``ssl.client.auth``: ``none`` (no certificate asked),
``requested`` (asked, verified if sent), ``required`` (mTLS: no valid certificate, no connection).
``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3), ``ssl.cipher.suites`` (IANA names as Java writes them, or
OpenSSL names; they restrict TLS 1.2 suites: Python cannot restrict TLS 1.3's, which are all AEAD).
Every setting may be per listener (``listener.name.<l>.ssl.*``).


The transport itself is :mod:`kafkalite.server.tls`.
"""
from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
from typing import TYPE_CHECKING, Any

from kafkalite.config.listeners import check_tls, listener_value, split_list
from kafkalite.errors import ConfigError

if TYPE_CHECKING:
    from kafkalite.config.broker import BrokerConfig

log = logging.getLogger(__name__)

PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}

# IANA (Java) names of common TLS 1.2 suites -> OpenSSL names
_IANA_TO_OPENSSL = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
}
TLS13_SUITES = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")


class BulkSSLSocket(ssl.SSLSocket):
    """An SSLSocket whose ``recv_into`` returns as much decrypted data as is at hand, not one TLS record
    (<= 16 KiB) per call: the request loop then reads a large Produce in a few iterations, as it does on a
    plain socket. Raises SSLWantRead only when nothing at all could be read."""

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        view = memoryview(buffer)
        if nbytes:
            view = view[:nbytes]
        total = super().recv_into(view, len(view), flags)
        while total and total < len(view):
            try:
                n = super().recv_into(view[total:], len(view) - total, flags)
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            if not n:
                break
            total += n
        return total


def server_context(config: BrokerConfig, listener: str) -> tuple[ssl.SSLContext, str]:
    """The SSLContext of a TLS listener and its ``ssl.client.auth``; ConfigError (one line) if the key store,
    trust store or cipher list cannot be used."""
    problems = check_tls(config, listener)
    if problems:
        raise ConfigError(problems[0])
    v = lambda key: listener_value(config, listener, key).strip()  # noqa: E731
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.sslsocket_class = BulkSSLSocket
    ctx.options |= ssl.OP_NO_RENEGOTIATION | ssl.OP_NO_COMPRESSION
    versions = sorted(PROTOCOLS[p] for p in split_list(v("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3"))
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    password = v("ssl.key.password") or None
    try:
        if v("ssl.keystore.location"):
            ctx.load_cert_chain(v("ssl.keystore.location"), password=password)
        else:
            _load_inline_chain(ctx, v("ssl.keystore.certificate.chain"), v("ssl.keystore.key"), password)
    except FileNotFoundError:
        raise ConfigError(f"ssl.keystore.location: {v('ssl.keystore.location')}: no such file") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the PEM key store (key and certificate chain; "
                          f"is ssl.key.password right?): {getattr(exc, 'reason', None) or exc}") from None
    auth = (v("ssl.client.auth") or "none").lower()
    try:
        if v("ssl.truststore.location"):
            ctx.load_verify_locations(cafile=v("ssl.truststore.location"))
        elif v("ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=v("ssl.truststore.certificates"))
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the PEM trust store: "
                          f"{getattr(exc, 'reason', None) or exc}") from None
    ctx.verify_mode = CLIENT_AUTH[auth]
    suites = split_list(v("ssl.cipher.suites"))
    tls12 = [_IANA_TO_OPENSSL.get(s, s) for s in suites if s not in TLS13_SUITES]
    if tls12:
        try:
            ctx.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise ConfigError(f"ssl.cipher.suites: none of {', '.join(suites)} is available") from None
    elif suites and ssl.TLSVersion.TLSv1_2 in versions:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3     # only TLS 1.3 suites were listed
    return ctx, auth


def _load_inline_chain(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """``load_cert_chain`` reads files only: the inline PEM goes through a private temporary file, removed
    at once."""
    fd, path = tempfile.mkstemp(prefix="kafkalite-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


