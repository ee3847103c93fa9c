"""One task per client connection.

Requests on a connection are read, handled and answered strictly one at a time, in order (Kafka mutes a
channel while a request is in flight, and clients rely on responses arriving in request order). Rules:

- acks=0 Produce: the handler returns ``None`` and nothing is sent.
- An oversize frame (> ``socket.request.max.bytes``, checked by the frame buffer before the body is buffered),
  a ``DecodeError``, an unknown API key or an unsupported version of an API other than ApiVersions close *this*
  connection, with one log line. An ApiVersions request at a version we do not serve gets a v0 body with
  UNSUPPORTED_VERSION and the full api_keys list (KIP-511), so the client can retry.
- Request bytes buffered across connections are bounded by ``queued.max.request.bytes`` (RequestMemoryPool).
- A connection idle for ``connections.max.idle.ms`` (between requests) is closed, as Kafka does. The
  connection only stamps when it starts waiting; one reaper task per server (:func:`reap_idle`) closes the
  ones idle too long, so the request loop pays no timeout bookkeeping (a cancel scope per ``recv`` cost
  ~10 µs of a ~100 µs round trip).
- An exception in a handler is logged with its traceback and closes this connection; the server goes on.

The socket is a plain non-blocking stdlib socket: ``recv``/``sendmsg`` are tried at once and the task parks
on trio's ``wait_readable``/``wait_writable`` only when they would block. trio's socket wrapper adds a
scheduler round trip to every call that succeeds (its checkpoint), three per request on a tailing consumer's
path; here a request costs one (the wait for the next request), and a connection that has answered
``_YIELD_EVERY`` pipelined requests without waiting yields explicitly so it cannot starve the others.

Responses are sent zero-copy where it matters: in-memory chunks go out with ``sendmsg`` (scatter/gather, no
joining), file-region chunks ``(fd, offset, length)`` with ``os.sendfile`` from the segment file, so record
bytes of large fetches never pass through Python. The sendfile path corks the socket (TCP_CORK) so the
response header and the regions leave in full segments, and always uncorks, even on error. A region's
source is a descriptor or a storage file handle (descriptors on demand, storage.handles): the handle is
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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import wait_readable, wait_writable

from kafkalite.handlers import registry
from wire import api

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

RECV_SIZE = 256 * 1024
_IOV_MAX = 1024
_API_VERSIONS_KEY = 18
_CORK = getattr(_stdsocket, "TCP_CORK", None)
# requests answered back to back without waiting on the socket before the connection yields to other tasks
_YIELD_EVERY = 8
# file regions up to this many bytes in total are pread and sent in one sendmsg with the other chunks
SMALL_REGION_BYTES = 64 * 1024


class ConnectionClosed(Exception):
    """The connection must be closed (protocol violation); carries the reason for the log."""


class RequestMemoryPool:
    """Bounds the request bytes buffered across all connections (``queued.max.request.bytes``).

    A connection reserves a large frame's announced size before buffering its body and gives it back once the
    request is answered; while the pool is used up, connections that need more wait (they stop reading, so
    TCP pushes back on their clients) instead of the broker's memory growing with every client that sends a
    big request at once. Like Kafka's memory pool it is not strict: a frame larger than what is free is
    admitted when nothing else is reserved, so a single request up to ``socket.request.max.bytes`` always
    goes through. Frames up to ``RECV_SIZE`` are not accounted: a connection holds at most one of those plus
    one read's worth beyond it. ``capacity <= 0`` means no bound (Kafka's -1)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._lot = trio.lowlevel.ParkingLot()

    async def acquire(self, size: int) -> None:
        while self.capacity > 0 and self.used > 0 and self.used + size > self.capacity:
            await self._lot.park()
        self.used += size

    def release(self, size: int) -> None:
        self.used -= size
        if self._lot:
            self._lot.unpark_all()


class Connection:
    def __init__(self, state: BrokerState, sock: _stdsocket.socket, listener: str, conn_id: int) -> None:
        self.state = state
        self.sock = sock
        self.listener = listener
        self.conn_id = conn_id
        self.idle = True
        self.closing = False
        self.cancel_scope = trio.CancelScope()
        idle_ms = state.config.get_int("connections.max.idle.ms", 600_000)
        self.idle_timeout = idle_ms / 1000 if idle_ms > 0 else float("inf")
        # trio.current_time() when the connection last started waiting for a request (None: busy)
        self.waiting_since: float | None = trio.current_time()
        self.pool: RequestMemoryPool | None = getattr(state, "request_pool", None)
        self.reserved = 0   # bytes of the pool held for the frame being received/handled
        try:
            peer = sock.getpeername()
            self.peer_host, self.peer_port = str(peer[0]), int(peer[1])
        except OSError:
            self.peer_host, self.peer_port = "", 0

    def __repr__(self) -> str:
        return f"<Connection #{self.conn_id} {self.peer_host}:{self.peer_port} via {self.listener}>"

    def idle_expired(self, now: float) -> bool:
        """Waiting for a request for longer than ``connections.max.idle.ms``."""
        since = self.waiting_since
        return since is not None and self.idle and now - since >= self.idle_timeout

    def request_close(self) -> None:
        """Graceful drain: close now if idle, else right after the response in progress is sent."""
        self.closing = True
        if self.idle:
            self.cancel_scope.cancel()

    async def run(self) -> None:
        from wire.errors import DecodeError
        from wire.framing import FrameBuffer

        frames = FrameBuffer(self.state.config.max_frame_size)
        sock = self.sock
        unyielded = 0
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
                        if self.pool is not None and not self.reserved:
                            need = frames.pending_frame_size()
                            if need is not None and need > RECV_SIZE:
                                await self.pool.acquire(need)
                                self.reserved = need
                        try:
                            data = sock.recv(RECV_SIZE)
                        except BlockingIOError:
                            self.waiting_since = trio.current_time()
                            await wait_readable(sock)
                            self.waiting_since = None
                            unyielded = 0
                            continue
                        self.idle = False
                        if not data:
                            return
                        frames.receive_data(data)
                        continue
                    await self.handle_frame(frame)
                    del frame
                    if self.reserved:
                        self._release()
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
                    self._release()
                trio.lowlevel.notify_closing(self.sock)   # trio forgets the fd before it can be reused
                self.sock.close()

    def _release(self) -> None:
        assert self.pool is not None
        self.pool.release(self.reserved)
        self.reserved = 0

    # -- requests -------------------------------------------------------------------------------------
    async def handle_frame(self, frame: memoryview) -> None:
        try:
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

        ctx = registry.RequestContext(
            header=header, broker=self.state, client_host=self.peer_host, client_port=self.peer_port,
            listener=self.listener, connection_id=self.conn_id,
        )
        response = await spec.fn(ctx, body)
        if response is None:
            return
        await self.send_chunks(api.encode_response(header, response))

    async def send_unsupported_api_versions(self, header: Any) -> None:
        """KIP-511: a v0 body with UNSUPPORTED_VERSION plus every api key we serve, under response header v0."""
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
            if corked:
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


async def reap_idle(connections: set[Connection], idle_timeout: float) -> None:
    """Close connections idle for longer than their ``connections.max.idle.ms``; runs for the server's life.

    Checks every tenth of the timeout (at most every 30 s, at least every 50 ms), so a connection is closed
    between 1 and 1.1 times the timeout after its last request, like Kafka's selector sweep."""
    if idle_timeout == float("inf"):
        return
    period = min(max(idle_timeout / 10, 0.05), 30.0)
    while True:
        await trio.sleep(period)
        now = trio.current_time()
        for conn in list(connections):
            if conn.idle_expired(now):
                log.info("%r: closing after %.0f s idle (connections.max.idle.ms)", conn, conn.idle_timeout)
                conn.cancel_scope.cancel()


def _read_region(src: Any, offset: int, length: int) -> bytes:
    """The bytes of a small file region (page cache, in practice: a tail consumer reads what was just written).
    ``src`` is a descriptor or a storage file handle (which pins itself for the read)."""
    data = os.pread(src, length, offset) if type(src) is int else src.pread(length, offset)
    if len(data) != length:
        raise ConnectionClosed(f"segment file region ended early ({src} offset {offset})")
    return data
