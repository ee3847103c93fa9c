"""One task per client connection.

Requests on a connection are read, handled and answered strictly one at a time, in order (Kafka mutes a
channel while a request is in flight, and clients rely on responses arriving in request order). Rules:

- acks=0 Produce: the handler returns ``None`` and nothing is sent.
- An oversize frame (> ``socket.request.max.bytes``, checked by the frame buffer before the body is buffered),
  a ``DecodeError``, an unknown API key or an unsupported version of an API other than ApiVersions close *this*
  connection, with one log line. An ApiVersions request at a version we do not serve gets a v0 body with
  UNSUPPORTED_VERSION and the full api_keys list (KIP-511), so the client can retry.
- Every byte read and not yet answered counts against ``queued.max.request.bytes`` (the rules are in
  :mod:`kafkalite.server.request_memory`): each read is admitted before it happens and settled to what arrived (an
  announced frame size reserves nothing), and reads stop at the frame's end. Reads go into one scratch
  buffer per thread (``recv_into``) and only the bytes received are copied out, so no read allocates
  ``RECV_SIZE`` bytes (such short-lived large blocks fragmented the heap; see the CLI's malloc settings).
- A connection idle for ``connections.max.idle.ms`` (between requests) is closed, as Kafka does. A request
  whose body has not arrived ``kafkalite.request.body.timeout.ms`` after the connection first waited for the
  rest of it is closed too, giving its reservation back: a client trickling a byte at a time cannot pin the
  budget, and bytes of an unfinished request do not count as activity for the idle clock. The connection
  only stamps when it starts waiting; one reaper task per server (:func:`reap_idle`) closes the ones past
  either limit, so the request loop pays no timeout bookkeeping (a cancel scope per ``recv`` cost ~10 µs of
  a ~100 µs round trip).
- An exception in a handler is answered as Kafka answers it: the API's response with UNKNOWN_SERVER_ERROR on
  every entry the request named (:mod:`kafkalite.handlers.error_response`), the traceback logged once per kind of
  failure, the connection kept open (an acks=0 Produce, which has no response, closes it). A response that
  cannot be encoded (a value its field cannot hold) is replaced by that same error response. Anything else that
  fails in request handling is logged with its traceback and closes this connection; the server goes on.
- A request frame over ``OFFLOAD_BYTES`` is decoded, and its response encoded, in a worker thread: a 4 MB
  request of a million partition entries took seconds to parse and encode on the event loop. While such a
  request is in flight, full garbage collections are paused (``kafkalite.runtime.gcpolicy``): they walked its millions of
  objects holding the GIL, stalling the loop for up to a second; its request and response objects are then
  freed in small steps in a worker thread (``bulk.dismantle``) rather than in one go on the loop.

The socket is a plain non-blocking stdlib socket: ``recv``/``sendmsg`` are tried at once and the task parks
on trio's ``wait_readable``/``wait_writable`` only when they would block. trio's socket wrapper adds a
scheduler round trip to every call that succeeds (its checkpoint), three per request on a tailing consumer's
path; here a request costs one (the wait for the next request), and a connection that has answered
``_YIELD_EVERY`` pipelined requests, or read ``_YIELD_BYTES`` of a large frame, without waiting yields
explicitly so it cannot starve the others.

Responses are sent zero-copy where it matters: in-memory chunks go out with ``sendmsg`` (scatter/gather, no
joining), file-region chunks ``(fd, offset, length)`` with ``os.sendfile`` from the segment file, so record
bytes of large fetches never pass through Python. The sendfile path corks the socket (TCP_CORK) so the
response header and the regions leave in full segments, and always uncorks, even on error. A region's
source is a descriptor or a storage file handle (descriptors on demand, kafkalite_storage.handles): the handle is
pinned while its region is sent, so its descriptor cannot be closed (and its number reused) mid-send. Responses whose
regions total at most ``SMALL_REGION_BYTES`` (a consumer at the log end fetching a batch or two) are
instead read with ``pread`` and sent with the rest in one ``sendmsg``: one syscall instead of four
(cork, sendmsg, sendfile, uncork), which is what a tailing consumer's latency and the broker's CPU per
request hinge on.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import socket as _stdsocket
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import wait_readable, wait_writable

from kafkalite.errors import ConnectionClosed
from kafkalite.handlers import registry
from kafkalite.loggers import TRACE, request_log
from kafkalite.runtime import close_hooks
from kafkalite.runtime import gcpolicy as bulk
from kafkalite.security.principal import ANONYMOUS, KafkaPrincipal
from kafkalite.server.request_memory import RECV_SIZE, RequestMemoryPool
from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError

if TYPE_CHECKING:
    from kafkalite.handlers.registry import HandlerSpec, RequestContext
    from kafkalite.quotas import QuotaManager
    from kafkalite.security.authenticator import SaslAuthenticator
    from kafkalite.security.listeners import ListenerSecurity
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

__all__ = ["RECV_SIZE", "Connection", "ConnectionClosed", "RequestMemoryPool", "reap_idle"]

_IOV_MAX = 1024
_API_VERSIONS_KEY = 18
_CORK: int | None = getattr(_stdsocket, "TCP_CORK", None)
# requests answered back to back without waiting on the socket before the connection yields to other tasks
_YIELD_EVERY = 8
# a connection whose client keeps the socket full (a 50 MB Produce frame arriving over loopback) yields after
# reading this much without waiting: ~2-4 ms of the loop's CPU (recv and buffering)
_YIELD_BYTES = 4 * 1024 * 1024
# requests larger than this are decoded, and their responses encoded, in a worker thread (wire is pure), so a
# request of a million small entries does not hold the event loop while it is parsed; Produce frames are mostly
# record bytes (sliced, not parsed), so theirs is higher, unless they name many partitions (bulk.produce_entries)
OFFLOAD_BYTES = 64 * 1024
OFFLOAD_PRODUCE_BYTES = 8 * 1024 * 1024
# file regions up to this many bytes in total are pread and sent in one sendmsg with the other chunks
SMALL_REGION_BYTES = 64 * 1024
DEFAULT_BODY_TIMEOUT_MS = 10_000

_local = threading.local()


class _NoFaults:
    """The fault plan of a state without one (kafkalite.faults.FaultPlan is inactive too while no fault is set)."""

    active = False

    async def intercept(self, conn: Connection, spec: HandlerSpec, ctx: RequestContext, body: Any) -> Any:
        raise AssertionError("an inactive fault plan intercepts nothing")   # (called only while ``active``)


_NO_FAULTS = _NoFaults()


def _scratch() -> memoryview:
    """This thread's read buffer, shared by its connections: a read is copied out before the task yields."""
    buf = getattr(_local, "scratch", None)
    if buf is None:
        buf = _local.scratch = memoryview(bytearray(RECV_SIZE))
    return buf


class Connection:
    # what a read of the non-blocking socket raises when it would block: wait for readability and try again.
    # TlsConnection adds ssl's two (WANT_WRITE: a TLS record must be sent first), so that a broker without TLS
    # listeners never imports ssl (OpenSSL: ~5 ms of a start)
    WOULD_BLOCK: tuple[type[Exception], ...] = (BlockingIOError,)
    WANT_WRITE: type[Exception] | None = None

    def __init__(self, state: BrokerState, sock: _stdsocket.socket, listener: str, conn_id: int,
                 security: ListenerSecurity | None = None) -> None:
        self.state = state
        self.sock = sock
        self.listener = listener
        self.conn_id = conn_id
        self.idle = True
        self.closing = False
        self.cancel_scope = trio.CancelScope()
        idle_ms = state.config.get_int("connections.max.idle.ms")
        self.idle_timeout = idle_ms / 1000 if idle_ms > 0 else float("inf")
        body_ms = state.config.get_int("kafkalite.request.body.timeout.ms")
        self.body_timeout = body_ms / 1000 if body_ms > 0 else float("inf")
        # trio.current_time() when the connection last started waiting for a request (None: busy)
        self.waiting_since: float | None = trio.current_time()
        # trio.current_time() when it first waited for the rest of a request (None: no request half-read)
        self.partial_since: float | None = None
        self.pool: RequestMemoryPool | None = state.request_pool
        self.reserved = 0       # bytes of the pool this connection holds (what it has buffered)
        self.loopwatch = state.loopwatch   # kafkalite.runtime.loopwatch: told which request runs
        self.metrics = state.metrics       # kafkalite.metrics: counts each request (or None)
        self.quotas = state.quotas         # kafkalite.quotas: throttles when .active
        self.faults = state.faults or _NO_FAULTS   # kafkalite.faults: intercepts when .active
        # set by kafkalite.security once the connection has authenticated (SASL or a client certificate)
        self.principal: KafkaPrincipal = ANONYMOUS
        self.security_protocol = "PLAINTEXT"
        # SASL listeners: the connection's authenticator gates every request (kafkalite.security.authenticator)
        self.sasl: SaslAuthenticator | None = None
        self.security = security
        if security is not None:
            self.security_protocol = security.protocol
            if security.sasl:
                # SASL listeners only: not at start
                from kafkalite.security.authenticator import SaslAuthenticator

                self.sasl = SaslAuthenticator(security, self)
        try:
            peer = sock.getpeername()
            self.peer_host, self.peer_port = str(peer[0]), int(peer[1])
        except OSError:
            self.peer_host, self.peer_port = "", 0
        self.quota_host = self.peer_host   # the address its max.connections.per.ip count is kept under

    def __repr__(self) -> str:
        return f"<Connection #{self.conn_id} {self.peer_host}:{self.peer_port} via {self.listener}>"

    def idle_expired(self, now: float) -> bool:
        """Waiting for a request for longer than ``connections.max.idle.ms``."""
        since = self.waiting_since
        return since is not None and self.idle and now - since >= self.idle_timeout

    def body_expired(self, now: float) -> bool:
        """Waiting for the rest of a request for longer than ``kafkalite.request.body.timeout.ms``."""
        since = self.partial_since
        return since is not None and now - since >= self.body_timeout

    def request_close(self) -> None:
        """Graceful drain: close now if idle, else right after the response in progress is sent."""
        self.closing = True
        if self.idle:
            self.cancel_scope.cancel()

    async def run(self) -> None:  # noqa: C901 (the request loop: framing, memory, auth, dispatch, in one place)
        from kafkalite_wire.framing import FrameBuffer  # on the first connection: not at start

        frames = FrameBuffer(self.state.config.max_frame_size)
        sock = self.sock
        pool = self.pool
        would_block_errors, want_write = self.WOULD_BLOCK, self.WANT_WRITE
        scratch = _scratch()
        unyielded = 0
        unyielded_bytes = 0   # read since the task last waited or yielded
        with self.cancel_scope:
            try:
                while not self.closing:
                    try:
                        frame = frames.next_frame()
                    except DecodeError as exc:  # FrameTooLarge is a DecodeError
                        log.warning("%r: closing: %s", self, exc)
                        return
                    if frame is None:
                        self.idle = True
                        if self.closing:
                            return
                        limit = RECV_SIZE
                        admitted = False
                        if pool is not None:    # a grant for this one read (kafkalite.server.request_memory)
                            limit = pool.read_size
                            holder = None
                            if (need := frames.pending_frame_size()) is not None:
                                limit = min(limit, need + 4 - frames.buffered)   # not past the frame's end
                                holder = self                                   # mid-frame: may finish
                            if not pool.try_admit(limit, holder):
                                self.partial_since = None   # waiting for the budget is not the client's delay
                                await pool.admit(limit, holder)
                            self.reserved += limit
                            admitted = True
                        try:
                            n = sock.recv_into(scratch, limit)
                        except would_block_errors as would_block:
                            if admitted:
                                self.reserved -= limit
                                pool.settle(limit, 0)  # type: ignore[union-attr]
                            if frames.buffered:     # the rest of a request: the body deadline runs
                                if self.partial_since is None:
                                    self.partial_since = trio.current_time()
                            else:
                                self.waiting_since = trio.current_time()
                            if type(would_block) is want_write:   # TLS: a record to send first
                                await wait_writable(sock)
                            else:
                                await wait_readable(sock)
                            self.waiting_since = None
                            unyielded = unyielded_bytes = 0
                            continue
                        self.idle = False
                        if not n:
                            return
                        frames.receive_data(scratch[:n])
                        if admitted:            # keep exactly what is now buffered
                            held = frames.buffered
                            pool.settle(self.reserved, held)  # type: ignore[union-attr]
                            self.reserved = held
                        unyielded_bytes += n
                        if unyielded_bytes >= _YIELD_BYTES:   # a 50 MB frame read without a pause: ~35 ms
                            unyielded_bytes = 0
                            await trio.lowlevel.checkpoint()
                        continue
                    self.partial_since = None
                    if pool is not None:
                        pool.frame_done(self)
                    await self.handle_frame(frame)
                    del frame
                    if self.reserved:
                        self._release(frames.buffered)
                    unyielded += 1
                    if unyielded >= _YIELD_EVERY:   # a client pipelining requests must not starve the others
                        unyielded = 0
                        await trio.lowlevel.checkpoint()
            except ConnectionClosed as exc:
                log.warning("%r: closing: %s", self, exc)
            except DecodeError as exc:
                log.warning("%r: closing: undecodable request: %s", self, exc)
            except (ConnectionError, trio.BrokenResourceError, trio.ClosedResourceError):
                log.debug("%r: peer went away", self)
            except OSError as exc:
                log.info("%r: socket error: %s", self, exc)
            except Exception:
                log.exception("%r: closing after an error in request handling", self)
            finally:
                if self.reserved:
                    self._release(0)
                if self.pool is not None:
                    self.pool.frame_done(self)
                if close_hooks.pending():
                    close_hooks.run(self.conn_id, self)
                trio.lowlevel.notify_closing(self.sock)   # trio forgets the fd before it can be reused
                self.sock.close()

    def _release(self, keep: int) -> None:
        """Give back all but ``keep`` bytes (what is still buffered: the start of a pipelined request)."""
        assert self.pool is not None
        self.pool.settle(self.reserved, keep)
        self.reserved = keep

    # -- requests -------------------------------------------------------------------------------------
    async def handle_frame(self, frame: memoryview) -> None:
        sasl = self.sasl
        if sasl is not None:
            if sasl.raw_tokens:     # after SaslHandshake v0: a bare SASL token
                await self._raw_sasl_token(frame)
                return
            self._sasl_gate(sasl, frame)
        size = len(frame)
        if frame[:2] != b"\0\0":   # type: ignore[comparison-overlap]  # a memoryview equals the bytes it holds
            offload = size > OFFLOAD_BYTES
        else:   # a Produce frame is mostly record bytes: decoded here unless huge or naming many partitions
            offload = size > OFFLOAD_PRODUCE_BYTES or (
                size > OFFLOAD_BYTES and bulk.produce_entries(frame) >= bulk.PRODUCE_ENTRIES)
        if not offload:
            await self._handle_frame(frame, False)
            return
        with bulk.paused():   # its objects are freed before gc resumes
            keep: list[Any] = []
            await self._handle_frame(frame, True, keep)
            await trio.to_thread.run_sync(bulk.dismantle, keep)   # freed in small steps, off the loop

    async def _handle_frame(self, frame: memoryview, offload: bool, keep: list[Any] | None = None) -> None:
        try:
            if offload:   # a big request (maybe a million entries) is decoded off the event loop
                header, body = await trio.to_thread.run_sync(api.parse_request, frame)
                if keep is not None:
                    keep.append(body)
            else:
                header, body = api.parse_request(frame)
        except api.UnknownApiKey as exc:
            raise ConnectionClosed(f"unknown api key {getattr(exc.header, 'api_key', '?')}") from None
        except api.UnsupportedVersion as exc:
            hdr = exc.header
            if hdr.api_key == _API_VERSIONS_KEY:
                await self.send_unsupported_api_versions(hdr)
                return
            raise ConnectionClosed(f"api key {hdr.api_key} version {hdr.api_version} not supported") from None

        spec = registry.lookup(header.api_key)
        if spec is None:
            if header.api_key == _API_VERSIONS_KEY:
                raise ConnectionClosed("no ApiVersions handler registered")
            raise ConnectionClosed(f"api key {header.api_key} is not implemented")
        if not spec.min_version <= header.api_version <= spec.max_version:
            if header.api_key == _API_VERSIONS_KEY:
                await self.send_unsupported_api_versions(header)
                return
            raise ConnectionClosed(f"{spec.name} v{header.api_version} not supported "
                                   f"(we serve v{spec.min_version}-v{spec.max_version})")

        if self.loopwatch is not None:
            self.loopwatch.note_request(header.api_key, header.api_version, self.conn_id)
        sasl = self.sasl
        ctx = registry.RequestContext(
            header=header, broker=self.state, client_host=self.peer_host, client_port=self.peer_port,
            listener=self.listener, connection_id=self.conn_id,
            principal=self.principal, security_protocol=self.security_protocol, sasl=sasl,
        )
        quotas = self.quotas
        cpu0 = time.thread_time_ns() if quotas is not None and quotas.active else -1
        t0 = time.perf_counter() if request_log.isEnabledFor(logging.DEBUG) else 0.0   # kafka.request.logger
        try:
            if self.faults.active:   # an injected error, latency, drop or pause (kafkalite.faults)
                response = await self.faults.intercept(self, spec, ctx, body)
            else:
                response = await (spec.fn(ctx, body) if self.metrics is None
                                  else self.metrics.handle(spec.fn, ctx, body))
        except (ConnectionClosed, DecodeError):
            raise
        except Exception as exc:   # answered with the API's error response, as Kafka does (one traceback)
            from kafkalite.handlers import error_response  # imported when first needed: not at start

            response = await error_response.answer_failure(self, header, body, exc, offload)
        throttle = 0 if cpu0 < 0 else _throttle(quotas, ctx, len(frame), time.thread_time_ns() - cpu0, response)
        if t0:
            self._log_request(spec, ctx, body, len(frame), t0, throttle, response is None)
        if response is None:
            if throttle:
                await trio.sleep(throttle / 1000)   # muted (KIP-219): the next request is not read meanwhile
            return
        try:
            if offload:   # its response is likely as big: encoded off the event loop too
                if keep is not None:
                    keep.append(response)
                chunks = await trio.to_thread.run_sync(api.encode_response, header, response)
            else:
                chunks = api.encode_response(header, response)
        except Exception as exc:   # a value its field cannot hold: answered as a failed request, kept open
            from kafkalite.handlers import error_response  # imported when first needed: not at start

            chunks = await error_response.encode_failure(self, header, body, exc, offload)
        if sasl is not None and sasl.close_reason is not None:
            # a failed handshake/authentication: answered ``connection.failed.authentication.delay.ms`` later and
            # closed right after the answer, as Kafka does (KIP-306: Selector delays the close, and
            # KafkaChannel.completeCloseOnAuthenticationFailure sends the failure response only then); no tight
            # reconnect loops, and no answer before the delay for a password guesser
            await trio.sleep(sasl.security.failure_delay_ms / 1000)
            await self.send_chunks(chunks)
            raise ConnectionClosed(sasl.close_reason)
        await self.send_chunks(chunks)
        if sasl is not None and header.api_key == _API_VERSIONS_KEY:
            sasl.api_versions_answered()
        if throttle:
            await trio.sleep(throttle / 1000)   # muted (KIP-219): the next request is not read meanwhile

    def _log_request(self, spec: Any, ctx: Any, body: Any, size: int, t0: float, throttle: int,
                     no_response: bool) -> None:
        """One line per completed request on ``kafka.request.logger`` at DEBUG (the request itself at TRACE),
        as Kafka's RequestChannel logs it: the time is to the response, before it is sent."""
        h = ctx.header
        line = (f"Completed request: {spec.name} v{h.api_version} correlation id {h.correlation_id} client id "
                f"{h.client_id!r} from connection {self.conn_id} ({self.peer_host}:{self.peer_port}); total "
                f"{(time.perf_counter() - t0) * 1000:.3f} ms, {size} B, throttle {throttle} ms"
                f"{', no response (acks=0)' if no_response else ''}; security protocol {self.security_protocol}, "
                f"principal {self.principal}, listener {self.listener}")
        if request_log.isEnabledFor(TRACE):
            text = repr(body)
            line += f"; request: {text[:4000]}{' ...' if len(text) > 4000 else ''}"
        request_log.debug(line)

    def call_handler(self, spec: Any, ctx: Any, body: Any) -> Any:
        """The handler's coroutine for ``body`` (through the metrics when on): what kafkalite.faults runs
        for a request it lets through."""
        return spec.fn(ctx, body) if self.metrics is None else self.metrics.handle(spec.fn, ctx, body)

    def _sasl_gate(self, sasl: SaslAuthenticator, frame: memoryview) -> None:
        """Before a request is even decoded: is its API allowed in the connection's SASL state? Until the
        client has authenticated, frames are limited to ``sasl.server.max.receive.size`` (Kafka: 512 KiB)."""
        from kafkalite.security.authenticator import Closing  # SASL listeners only: not at start

        if sasl.state != "complete" and len(frame) > sasl.security.max_receive:
            raise ConnectionClosed(f"a {len(frame)}-byte request before SASL authentication completed "
                                   f"(sasl.server.max.receive.size {sasl.security.max_receive})")
        try:
            sasl.admit(int.from_bytes(frame[:2], "big"))
        except Closing as exc:
            raise ConnectionClosed(str(exc)) from None

    async def _raw_sasl_token(self, frame: memoryview) -> None:
        """A SASL token without a Kafka request header (after SaslHandshake v0); the answer is the bare
        server token, size-prefixed. A failure closes the connection without an answer, as Kafka does."""
        from kafkalite.security.errors import SaslFailure  # SASL listeners only: not at start

        assert self.sasl is not None
        try:
            reply, _lifetime = self.sasl.authenticate(bytes(frame), 0)
        except SaslFailure as exc:
            raise ConnectionClosed(f"SASL authentication failed: {exc}") from None
        await self.send_chunks([len(reply).to_bytes(4, "big") + reply])

    async def send_unsupported_api_versions(self, header: Any) -> None:
        """KIP-511: a v0 body with UNSUPPORTED_VERSION plus every api key we serve, under response header v0."""
        # a handler module, imported on the first too-new ApiVersions: not at start
        from kafkalite.handlers.api_versions import unsupported_version_response

        body = unsupported_version_response(self.state)
        await self.send_chunks(api.encode_response(header, body, version=0))

    # -- sending --------------------------------------------------------------------------------------
    async def send_chunks(self, chunks: Sequence[Any]) -> None:
        region_bytes = 0
        has_region = False
        for c in chunks:
            if type(c) is tuple:
                has_region = True
                region_bytes += c[2]
        if region_bytes <= SMALL_REGION_BYTES:
            if has_region:
                chunks = [_read_region(*c) if type(c) is tuple else c for c in chunks]
            await self._send_buffers([c for c in chunks if len(c)])
            return
        corked = False
        if has_region and _CORK is not None:
            try:
                self.sock.setsockopt(_stdsocket.IPPROTO_TCP, _CORK, 1)
                corked = True
            except OSError:
                pass
        try:
            pending: list[Any] = []
            for chunk in chunks:
                if isinstance(chunk, tuple):
                    if pending:
                        await self._send_buffers(pending)
                        pending = []
                    src, offset, length = chunk
                    if isinstance(src, int):
                        await self._sendfile(src, offset, length)
                    else:
                        fd = src.acquire()   # pinned: the descriptor stays open while the region is sent
                        try:
                            await self._sendfile(fd, offset, length)
                        finally:
                            src.release()
                elif len(chunk):
                    pending.append(chunk)
            if pending:
                await self._send_buffers(pending)
        finally:
            if corked and _CORK is not None:
                with contextlib.suppress(OSError):
                    self.sock.setsockopt(_stdsocket.IPPROTO_TCP, _CORK, 0)

    async def _send_buffers(self, bufs: list[Any]) -> None:
        views = [memoryview(b).cast("B") for b in bufs]
        sock = self.sock
        while views:
            try:
                sent = sock.sendmsg(views[:_IOV_MAX])
            except BlockingIOError:
                await wait_writable(sock)
                continue
            while sent:
                head = views[0]
                if sent >= len(head):
                    sent -= len(head)
                    views.pop(0)
                else:
                    views[0] = head[sent:]
                    sent = 0
            while views and not len(views[0]):
                views.pop(0)

    async def _sendfile(self, fd: int, offset: int, length: int) -> None:
        out = self.sock.fileno()
        await trio.lowlevel.checkpoint_if_cancelled()
        while length > 0:
            try:
                n = os.sendfile(out, fd, offset, length)
            except BlockingIOError:
                await wait_writable(self.sock)
                continue
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    await wait_writable(self.sock)
                    continue
                raise
            if n == 0:
                raise ConnectionClosed(f"segment file region ended early (fd {fd} offset {offset})")
            offset += n
            length -= n


async def reap_idle(connections: set[Connection], idle_timeout: float,
                    body_timeout: float = DEFAULT_BODY_TIMEOUT_MS / 1000) -> None:
    """Close connections idle for longer than ``connections.max.idle.ms``, and those that have not sent the
    rest of a request within ``kafkalite.request.body.timeout.ms``; runs for the server's life.

    Checks every tenth of the shorter limit (at most every 30 s, at least every 50 ms), so a connection is
    closed between 1 and 1.1 times the limit, like Kafka's selector sweep."""
    shortest = min(idle_timeout, body_timeout)
    if shortest == float("inf"):
        return
    period = min(max(shortest / 10, 0.05), 30.0)
    while True:
        await trio.sleep(period)
        now = trio.current_time()
        for conn in list(connections):
            if conn.body_expired(now):
                log.warning("%r: closing: the rest of a request did not arrive within %.1f s "
                            "(kafkalite.request.body.timeout.ms)", conn, conn.body_timeout)
                conn.cancel_scope.cancel()
            elif conn.idle_expired(now):
                log.info("%r: closing after %.0f s idle (connections.max.idle.ms)", conn, conn.idle_timeout)
                conn.cancel_scope.cancel()


def _throttle(quotas: QuotaManager, ctx: RequestContext, size: int, cpu_ns: int, response: Any) -> int:
    """Client quotas (kafkalite.quotas): record the request, put the throttle time in the response (the
    larger of the quotas' and what the handler set, e.g. Fetch's), and return how long to mute the channel."""
    throttle: int = max(quotas.after_request(ctx, size, cpu_ns), getattr(response, "throttle_time_ms", 0) or 0)
    if throttle and response is not None and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = throttle
    return throttle


def _read_region(src: Any, offset: int, length: int) -> bytes:
    """The bytes of a small file region (page cache, in practice: a tail consumer reads what was just written).
    ``src`` is a descriptor or a storage file handle (which pins itself for the read)."""
    data = os.pread(src, length, offset) if type(src) is int else src.pread(length, offset)
    if len(data) != length:
        raise ConnectionClosed(f"segment file region ended early ({src} offset {offset})")
    return data
