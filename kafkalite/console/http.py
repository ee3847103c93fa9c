"""The console's HTTP/1.1 server on the broker's trio loop.

One request per connection (``Connection: close``). The head is read up to ``MAX_HEAD`` bytes and a body
up to ``MAX_BODY`` bytes (only POST has one), all within ``READ_TIMEOUT_S``; at most ``MAX_CLIENTS`` are
served at once (more wait in the listen backlog), so a stray client holds neither memory nor a task for long.

Browser-facing protections:

- ``Host`` must name the console (a loopback name or the bound address) when it is bound to loopback: a
  page on another site that rebinds its DNS name to 127.0.0.1 gets 421, never the API.
- Mutations are POST with a JSON body, the per-process token in ``X-Kafkalite-Token`` (a custom header: a
  cross-site form cannot send it, and no CORS preflight is ever granted) and, when the browser sends an
  ``Origin``, the console's own.
- Every response carries ``Content-Security-Policy: default-src 'self'`` (no inline script, no foreign
  frames), ``X-Content-Type-Options: nosniff`` and ``X-Frame-Options: DENY``.
"""
from __future__ import annotations

import errno
import hmac
import json
import logging
import socket as _stdsocket
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import trio

from kafkalite.startup_errors import StartupError

log = logging.getLogger(__name__)

MAX_HEAD = 8192
MAX_BODY = 64 * 1024
READ_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 16
STATIC = {"/static/app.js": "application/javascript; charset=utf-8",
          "/static/style.css": "text/css; charset=utf-8",
          "/": "text/html; charset=utf-8"}
_FILES = {"/static/app.js": "app.js", "/static/style.css": "style.css", "/": "index.html"}
_SECURITY_HEADERS = ("Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\n"
                     "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
                     "Referrer-Policy: no-referrer\r\nCache-Control: no-store\r\n")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class ApiError(Exception):
    """An answer other than 200: ``status`` (e.g. 400) and a message for the user."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


_REASONS = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            409: "Conflict", 413: "Payload Too Large", 415: "Unsupported Media Type",
            421: "Misdirected Request", 500: "Internal Server Error", 503: "Service Unavailable"}


class Request:
    __slots__ = ("body", "headers", "method", "parts", "path", "query")

    def __init__(self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes):
        self.method = method
        self.path = path     # as sent (still percent-encoded)
        # its segments, each decoded on its own: a group id may hold a '/'
        self.parts = [unquote(s) for s in path.split("/") if s]
        self.query = query
        self.headers = headers
        self.body = body

    def json(self) -> dict[str, Any]:
        if not self.headers.get("content-type", "").startswith("application/json"):
            raise ApiError(415, "POST a JSON body (Content-Type: application/json)")
        try:
            data = json.loads(self.body or b"{}")
        except ValueError as exc:
            raise ApiError(400, f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(400, "the body must be a JSON object")
        return data


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    where = f"{host}:{port}"
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=_stdsocket.SOCK_STREAM, flags=_stdsocket.AI_PASSIVE)
    except OSError as exc:
        raise StartupError(f"cannot listen for the console on {where}: {exc.strerror or exc}") from None
    family, type_, proto, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, type_, proto)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(sockaddr)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        hint = " (another process is listening there; choose another port)" if exc.errno == errno.EADDRINUSE else ""
        raise StartupError(f"cannot listen for the console on {where}: {exc.strerror or exc}{hint}") from None
    name = sock.getsockname()
    return sock, (str(name[0]), int(name[1]))


class Console:
    def __init__(self, state: Any, bound: tuple[str, int], token: str) -> None:
        self.state = state
        self.bound = bound
        self.token = token
        self.files: dict[str, bytes] = {}
        host, port = bound
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/"
        self.loopback = host in _LOOPBACK or host.startswith("127.")
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", shown)}
        self.origins = {f"http://{h}" for h in self.hosts}

    async def load_static(self) -> None:
        def read() -> dict[str, bytes]:
            base = resources.files("kafkalite.console") / "static"
            return {route: (base / name).read_bytes() for route, name in _FILES.items()}

        files = await trio.to_thread.run_sync(read)
        # the token goes into the page itself: only a same-origin reader can see it
        files["/"] = files["/"].replace(b"{{TOKEN}}", self.token.encode("ascii"))
        self.files = files

    async def serve(self, sock: trio.socket.SocketType) -> None:
        """Accept and answer until cancelled (the caller owns ``sock``)."""
        limiter = trio.Semaphore(MAX_CLIENTS)   # released by the client task
        async with trio.open_nursery() as nursery:
            while True:
                await limiter.acquire()
                try:
                    client, _ = await sock.accept()
                except OSError as exc:
                    limiter.release()
                    log.info("console: accept failed: %s", exc)
                    await trio.sleep(0.1)
                    continue
                nursery.start_soon(self._client, client, limiter)

    async def _client(self, client: trio.socket.SocketType, limiter: trio.Semaphore) -> None:
        stream = trio.SocketStream(client)
        try:
            req: Request | ApiError | None = None
            with trio.move_on_after(READ_TIMEOUT_S):
                req = await _read_request(stream)
            if req is None:
                return   # too slow, or closed before a whole request: nothing to answer
            if isinstance(req, ApiError):
                status, ctype, body = _error(req)
            else:
                status, ctype, body = await self._answer(req)
            head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: {ctype}\r\n"
                    f"Content-Length: {len(body)}\r\n{_SECURITY_HEADERS}Connection: close\r\n\r\n")
            with trio.move_on_after(SEND_TIMEOUT_S):
                send_body = not (isinstance(req, Request) and req.method == "HEAD")
                await stream.send_all(head.encode("ascii") + (body if send_body else b""))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception:
            log.exception("console: request failed")
        finally:
            limiter.release()
            await trio.aclose_forcefully(stream)

    async def _answer(self, req: Request) -> tuple[int, str, bytes]:
        from kafkalite.console import actions, api

        try:
            if self.loopback and req.headers.get("host", "").lower() not in self.hosts:
                raise ApiError(421, "this console answers only to its own address (Host header)")
            if req.path in self.files:
                if req.method not in ("GET", "HEAD"):
                    raise ApiError(405, "only GET here")
                return 200, STATIC[req.path], self.files[req.path]
            if not req.path.startswith("/api/"):
                raise ApiError(404, f"no such page: {req.path}")
            if req.method == "POST":
                self._check_csrf(req)
                result = await actions.dispatch(self.state, req)
            elif req.method in ("GET", "HEAD"):
                result = await api.dispatch(self.state, req)
            else:
                raise ApiError(405, "GET to read, POST to change")
            return 200, "application/json", json.dumps(result, separators=(",", ":")).encode("utf-8")
        except ApiError as exc:
            return _error(exc)
        except Exception:
            log.exception("console: %s %s failed", req.method, req.path)
            return _error(ApiError(500, "internal error (see the broker's log)"))

    def _check_csrf(self, req: Request) -> None:
        origin = req.headers.get("origin")
        # same origin: the page's own scheme and Host (checked above when bound to loopback; a console bound
        # to another address is reached under names it cannot know)
        if origin is not None and origin not in self.origins and origin != f"http://{req.headers.get('host', '')}":
            raise ApiError(403, "cross-origin request refused")
        given = req.headers.get("x-kafkalite-token", "")
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode("ascii")):
            raise ApiError(403, "missing or wrong X-Kafkalite-Token (reload the page)")


def _error(exc: ApiError) -> tuple[int, str, bytes]:
    return exc.status, "application/json", json.dumps({"error": exc.message}).encode("utf-8")


async def _read_request(stream: trio.SocketStream) -> Request | ApiError | None:
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD:
            return ApiError(413, "request head too large")
        chunk = await stream.receive_some(MAX_HEAD)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return ApiError(400, "bad request line")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return ApiError(400, "bad header line")
        headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        return ApiError(400, "bad Content-Length")
    if length < 0 or length > MAX_BODY:
        return ApiError(413, f"a body is at most {MAX_BODY} bytes")
    if "transfer-encoding" in headers:
        return ApiError(400, "send the body with a Content-Length")
    body = bytearray(rest)
    while len(body) < length:
        chunk = await stream.receive_some(MAX_BODY)
        if not chunk:
            return None
        body += chunk
    url = urlsplit(parts[1])
    try:
        query = dict(parse_qsl(url.query, keep_blank_values=True, max_num_fields=32))
    except ValueError:
        return ApiError(400, "too many query parameters")
    return Request(parts[0].upper(), url.path, query, headers, bytes(body[:length]))
