"""The broker's small HTTP/1.1 servers (metrics, console) share this: binding, the bounded accept loop,
reading one request, writing one response, and where to tell the user to point a browser.

One request per connection (``Connection: close``): a scraper, a health probe or the console's page opens,
asks and closes. The head is read up to ``max_head`` bytes and a body up to ``max_body`` bytes, all within
``read_timeout``; at most ``max_clients`` connections are served at once (more wait in the listen backlog),
so a stray client holds neither memory nor a task for long. A handler may instead answer with a
:class:`Streaming` body (the console's Server-Sent Events): the connection then leaves the per-request
budget and takes one of ``max_streams`` stream slots (503 when all are taken), and its writer runs until it
returns, the client goes away (its EOF is watched for: the slot is freed at once) or the server stops.
"""
from __future__ import annotations

import errno
import ipaddress
import json
import logging
import socket as _stdsocket
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import trio

from kafkalite.errors import StartupError

log = logging.getLogger(__name__)

REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           409: "Conflict", 413: "Payload Too Large", 415: "Unsupported Media Type",
           421: "Misdirected Request", 422: "Unprocessable Entity", 500: "Internal Server Error", 503: "Service Unavailable"}
_WILDCARD = {"0.0.0.0", "::", ""}


class HttpError(Exception):
    """An answer other than 200: ``status`` (e.g. 400) and a message for the user."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _host_of(addr: Any) -> str:
    return str(addr[0]) if isinstance(addr, tuple) and addr else ""


class Request:
    __slots__ = ("body", "headers", "method", "parts", "path", "peer", "query")

    def __init__(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes):
        self.method = method
        self.path = path     # as sent (still percent-encoded)
        # its segments, each decoded on its own: a group id may hold a '/'
        self.parts = [unquote(s) for s in path.split("/") if s]
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = ""       # the client's address (set by the server once read)

    def json(self) -> dict[str, Any]:
        """The body as a JSON object (415 without the JSON content type, 400 for anything but an object)."""
        if not self.headers.get("content-type", "").startswith("application/json"):
            raise HttpError(415, "POST a JSON body (Content-Type: application/json)")
        try:
            data = json.loads(self.body or b"{}")
        except ValueError as exc:
            raise HttpError(400, f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise HttpError(400, "the body must be a JSON object")
        return data


class Response:
    __slots__ = ("body", "content_type", "headers", "status")

    def __init__(self, status: int, content_type: str, body: bytes, headers: str = "") -> None:
        self.status = status
        self.content_type = content_type
        self.body = body
        self.headers = headers   # extra header lines, each ending in CRLF


class Streaming:
    """A response whose body ``write(send)`` produces over time (``send(bytes)`` raises
    trio.BrokenResourceError once the client is gone). Sent with no Content-Length; the connection closes
    when ``write`` returns."""

    __slots__ = ("content_type", "headers", "write")

    def __init__(self, content_type: str, write: Callable[[Callable[[bytes], Awaitable[None]]], Awaitable[None]],
                 headers: str = "") -> None:
        self.content_type = content_type
        self.write = write
        self.headers = headers


Handler = Callable[[Request], Awaitable["Response | Streaming"]]


def public_url(bound: tuple[str, int], path: str = "/") -> str:
    """The URL to print for an address the server is bound to: a wildcard bind (a container's 0.0.0.0) is
    shown as localhost, which is what a user on the host (with the port published) or inside types."""
    host, port = bound
    if host in _WILDCARD:
        host = "localhost"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


async def bind(host: str, port: int, what: str = "HTTP") -> tuple[trio.socket.SocketType, tuple[str, int]]:
    """A listening socket on (host, port); a failure is a StartupError naming ``what`` (e.g. "metrics")."""
    where = f"{host}:{port}"
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=_stdsocket.SOCK_STREAM, flags=_stdsocket.AI_PASSIVE)
    except OSError as exc:
        raise StartupError(f"cannot listen for {what} on {where}: {exc.strerror or exc}") from None
    family, type_, proto, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, type_, proto)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(sockaddr)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        hint = " (another process is listening there; choose another port)" if exc.errno == errno.EADDRINUSE else ""
        raise StartupError(f"cannot listen for {what} on {where}: {exc.strerror or exc}{hint}") from None
    name = sock.getsockname()
    return sock, (str(name[0]), int(name[1]))


async def read_request(stream: trio.abc.ReceiveStream, max_head: int, max_body: int) -> Request | HttpError | None:
    """One request from ``stream``: a Request, an HttpError to answer with, or None (closed before a whole
    request arrived). A bare LF line end is accepted (some probes send one)."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf and b"\n\n" not in buf:
        if len(buf) > max_head:
            return HttpError(413, "request head too large")
        chunk = await stream.receive_some(max_head)
        if not chunk:
            return None
        buf += chunk
    sep = b"\r\n\r\n" if b"\r\n\r\n" in buf else b"\n\n"
    head, _, rest = bytes(buf).partition(sep)
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return HttpError(400, "bad request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            return HttpError(400, "bad header line")
        headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        return HttpError(400, "bad Content-Length")
    if length < 0 or length > max_body:
        return HttpError(413, f"a body is at most {max_body} bytes")
    if "transfer-encoding" in headers:
        return HttpError(400, "send the body with a Content-Length")
    body = bytearray(rest)
    while len(body) < length:
        chunk = await stream.receive_some(max_body)
        if not chunk:
            return None
        body += chunk
    url = urlsplit(parts[1])
    try:
        query = dict(parse_qsl(url.query, keep_blank_values=True, max_num_fields=32))
    except ValueError:
        return HttpError(400, "too many query parameters")
    return Request(parts[0].upper(), url.path, query, headers, bytes(body[:length]))


def _head(status: int, content_type: str, length: int | None, headers: str) -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else ""
    return (f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: {content_type}\r\n{size}"
            f"{headers}Connection: close\r\n\r\n").encode("ascii")


class HttpServer:
    """Serves ``handler`` on a bound socket; ``on_error(exc)`` turns an HttpError (a bad request, a full
    stream budget) into the Response this server's clients expect (JSON for the console, text for metrics)."""

    def __init__(self, name: str, handler: Handler, on_error: Callable[[HttpError], Response], *,
                 max_clients: int = 16, max_streams: int = 0, max_head: int = 8192, max_body: int = 0,
                 read_timeout: float = 5.0, send_timeout: float = 30.0, headers: str = "") -> None:
        self.name = name
        self.handler = handler
        self.on_error = on_error
        self.max_clients = max_clients
        self.max_head = max_head
        self.max_body = max_body
        self.read_timeout = read_timeout
        self.send_timeout = send_timeout
        self.headers = headers   # sent with every response (security headers)
        self.streams = trio.CapacityLimiter(max(1, max_streams))
        self.allow_streams = max_streams > 0

    @property
    def open_streams(self) -> int:
        return int(self.streams.borrowed_tokens)

    async def serve(self, sock: trio.socket.SocketType) -> None:
        """Accept and answer until cancelled (the caller owns ``sock``)."""
        limiter = trio.Semaphore(self.max_clients)   # released by the client task
        async with trio.open_nursery() as nursery:
            while True:
                await limiter.acquire()
                try:
                    client, addr = await sock.accept()
                except OSError as exc:
                    limiter.release()
                    log.info("%s: accept failed: %s", self.name, exc)
                    await trio.sleep(0.1)
                    continue
                nursery.start_soon(self._client, client, limiter, _host_of(addr))

    async def _client(self, client: trio.socket.SocketType, limiter: trio.Semaphore, peer: str = "") -> None:
        stream = trio.SocketStream(client)
        released = False
        try:
            req: Request | HttpError | None = None
            with trio.move_on_after(self.read_timeout):
                req = await read_request(stream, self.max_head, self.max_body)
            if req is None:
                return   # too slow, or closed before a whole request: nothing to answer
            if isinstance(req, HttpError):
                answer: Response | Streaming = self.on_error(req)
            else:
                req.peer = peer
                try:
                    answer = await self.handler(req)
                except HttpError as exc:
                    answer = self.on_error(exc)
            if isinstance(answer, Streaming):
                limiter.release()   # a long-lived stream leaves the per-request budget...
                released = True
                await self._stream(stream, answer)
                return
            head_only = isinstance(req, Request) and req.method == "HEAD"
            data = _head(answer.status, answer.content_type, len(answer.body), self.headers + answer.headers)
            with trio.move_on_after(self.send_timeout):
                await stream.send_all(data + (b"" if head_only else answer.body))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception:
            log.exception("%s: request failed", self.name)
        finally:
            if not released:
                limiter.release()
            await trio.aclose_forcefully(stream)

    async def _stream(self, stream: trio.SocketStream, answer: Streaming) -> None:
        """...and takes one of the stream slots instead, or is refused with 503 when they are all taken."""
        if not self.allow_streams:
            raise RuntimeError(f"{self.name}: a streaming answer but no stream budget")
        try:
            self.streams.acquire_nowait()
        except trio.WouldBlock:
            busy = self.on_error(HttpError(503, "too many live streams; try again later"))
            with trio.move_on_after(self.send_timeout):
                await stream.send_all(_head(busy.status, busy.content_type, len(busy.body),
                                            self.headers + busy.headers) + busy.body)
            return
        try:
            async def send(data: bytes) -> None:
                # a client that stops reading is dropped after send_timeout, never waited on forever
                with trio.fail_after(self.send_timeout):
                    await stream.send_all(data)

            async with trio.open_nursery() as nursery:
                async def until_closed() -> None:
                    """The client sends nothing more: EOF (or an error) means it left; stop writing now,
                    which frees its slot at once rather than at the next failed write."""
                    try:
                        while await stream.receive_some(1024):
                            pass
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        pass
                    nursery.cancel_scope.cancel()

                nursery.start_soon(until_closed)
                try:
                    await send(_head(200, answer.content_type, None, self.headers + answer.headers))
                    await answer.write(send)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass   # the client went away mid-write
                except trio.TooSlowError:
                    log.info("%s: a stream client stopped reading; closed", self.name)
                nursery.cancel_scope.cancel()
        finally:
            self.streams.release()


def is_loopback(host: str) -> bool:
    """The one loopback rule of the HTTP sidecars: ``localhost`` or a loopback IP address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
