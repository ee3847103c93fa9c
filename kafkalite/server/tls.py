"""The TLS transport of SSL and SASL_SSL listeners, on the standard library's ``ssl``.

Settings -> SSLContext: :mod:`kafkalite.security.tls_config`.

The connection's transport (:class:`TlsConnection`) is a non-blocking ``ssl.SSLSocket`` over the accepted
socket: OpenSSL reads and writes the descriptor itself (no memory-BIO copies), and the request loop of
``kafkalite.server.connection`` treats SSLWantRead/WantWrite as "would block". Responses cannot use sendfile:
file regions are read with ``pread`` in slices and encrypted, and small chunks are coalesced so a response
goes out in few TLS records. The handshake is bounded by ``kafkalite.ssl.handshake.timeout.ms`` and holds a
fixed reservation in the request memory pool while it runs (OpenSSL buffers at most one record plus the
peer's certificate chain, capped by OpenSSL's max_cert_list).
"""
from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Sequence
from typing import Any

import trio
from trio.lowlevel import wait_readable, wait_writable

from kafkalite.errors import ConnectionClosed
from kafkalite.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from kafkalite.security.ssl_principal import NoMatchingRule, subject_rfc2253
from kafkalite.server.connection import Connection

log = logging.getLogger(__name__)

HANDSHAKE_RESERVE = 128 * 1024      # request-pool bytes held while a handshake runs
SEND_SLICE = 256 * 1024             # plaintext handed to OpenSSL per write / file bytes pread per slice


class TlsConnection(Connection):
    """A connection on an SSL / SASL_SSL listener: the handshake first, then the request loop over the
    SSLSocket; responses are encrypted from memory (no sendfile)."""

    WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
    WANT_WRITE = ssl.SSLWantWriteError

    async def run(self) -> None:
        sock: ssl.SSLSocket = self.sock  # type: ignore[assignment]
        timeout = self.state.config.get_int("kafkalite.ssl.handshake.timeout.ms") / 1000
        pool = self.pool
        ok = False
        admitted = False
        try:
            try:   # the wait for the pool counts against the handshake's time too
                with trio.move_on_after(timeout) as scope, self.cancel_scope:
                    if pool is not None:
                        await pool.admit(HANDSHAKE_RESERVE)
                        admitted = True
                    await self._handshake(sock)
                    ok = True
                if scope.cancelled_caught:
                    log.warning("%r: closing: TLS handshake not finished within %.1f s "
                                "(kafkalite.ssl.handshake.timeout.ms)", self, timeout)
            finally:
                if admitted:
                    pool.settle(HANDSHAKE_RESERVE, 0)  # type: ignore[union-attr]
        except (ssl.SSLError, OSError) as exc:
            log.info("%r: TLS handshake failed: %s", self, getattr(exc, "reason", None) or exc)
        except BaseException:      # cancelled from outside (server shutdown): the socket goes too
            trio.lowlevel.notify_closing(sock)
            sock.close()
            raise
        if not ok:
            trio.lowlevel.notify_closing(sock)
            sock.close()
            return
        self.cancel_scope = trio.CancelScope()     # the one above has been exited
        if self.sasl is None:
            try:
                self.principal = self._certificate_principal(sock)
            except (ConnectionClosed, ValueError, IndexError) as exc:
                log.warning("%r: closing: no principal for the client certificate: %s", self, exc)
                trio.lowlevel.notify_closing(sock)
                sock.close()
                return
        await super().run()

    @staticmethod
    async def _handshake(sock: ssl.SSLSocket) -> None:
        while True:
            try:
                sock.do_handshake()
                return
            except ssl.SSLWantReadError:
                await wait_readable(sock)
            except ssl.SSLWantWriteError:
                await wait_writable(sock)

    def _certificate_principal(self, sock: ssl.SSLSocket) -> KafkaPrincipal:
        """Kafka's DefaultKafkaPrincipalBuilder on SSL: no client certificate -> ANONYMOUS; else the subject
        as an RFC 2253 string mapped through ``ssl.principal.mapping.rules``."""
        der = sock.getpeercert(binary_form=True)
        security = getattr(self, "security", None)
        if not der or security is None or security.principal_mapper is None:
            return ANONYMOUS
        dn = subject_rfc2253(der)
        try:
            name = security.principal_mapper.name_of(dn)
        except NoMatchingRule as exc:
            raise ConnectionClosed(str(exc)) from None
        log.debug("%r: TLS client certificate %s -> User:%s", self, dn, name)
        return KafkaPrincipal(USER_TYPE, name)

    async def send_chunks(self, chunks: Sequence[Any]) -> None:
        """Small chunks (headers, in-memory fields) are coalesced so they leave in few TLS records; file regions
        are read in ``SEND_SLICE`` pieces and each piece is encrypted straight from the bytes ``pread`` gave."""
        out = bytearray()
        for c in chunks:
            if type(c) is tuple:
                src, offset, length = c
                while length > 0:
                    n = min(length, SEND_SLICE)
                    data = os.pread(src, n, offset) if type(src) is int else src.pread(n, offset)
                    if len(data) != n:
                        raise ConnectionClosed(f"segment file region ended early ({src} offset {offset})")
                    offset += n
                    length -= n
                    if len(out) + n <= SEND_SLICE:
                        out += data
                        continue
                    if out:
                        await self._send_tls(out)
                        out = bytearray()
                    await self._send_tls(data)
            else:
                out += c
                if len(out) >= SEND_SLICE:
                    await self._send_tls(out)
                    out = bytearray()
        if out:
            await self._send_tls(out)

    async def _send_buffers(self, bufs: list[Any]) -> None:
        await self.send_chunks(bufs)

    async def _send_tls(self, data: bytes | bytearray) -> None:
        sock: ssl.SSLSocket = self.sock  # type: ignore[assignment]
        view = memoryview(data)
        while view:
            try:
                n = sock.send(view)
            except ssl.SSLWantWriteError:
                await wait_writable(sock)
                continue
            except ssl.SSLWantReadError:
                await wait_readable(sock)
                continue
            view = view[n:]
