"""The console's HTTP/1.1 service on the broker's trio loop (the server itself is :mod:`kafkalite.httpd.server`,
shared with the metrics endpoint; ``ApiError``, ``Request`` and ``bind`` stay importable from here).

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

import hmac
import json
import logging
from importlib import resources
from typing import TYPE_CHECKING

import trio

from kafkalite.console import actions, api, events
from kafkalite.httpd import server as httpserve
from kafkalite.httpd.server import (
    HttpError,
    HttpServer,
    Request,
    Response,
    Streaming,
    is_loopback,
    read_request,
)

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

MAX_HEAD = 8192
MAX_BODY = 64 * 1024
READ_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 16
MAX_STREAMS = 8          # live-update event streams at once (kafkalite.console.events)
STATIC = {"/static/app.js": "application/javascript; charset=utf-8",
          "/static/style.css": "text/css; charset=utf-8",
          "/": "text/html; charset=utf-8"}
_FILES = {"/static/app.js": "app.js", "/static/style.css": "style.css", "/": "index.html"}
_SECURITY_HEADERS = ("Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\n"
                     "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n"
                     "Referrer-Policy: no-referrer\r\nCache-Control: no-store\r\n")

ApiError = HttpError          # the console's name for it (actions and api import it as such from kafkalite.httpd)
_REASONS = httpserve.REASONS

__all__ = ["MAX_BODY", "MAX_CLIENTS", "MAX_HEAD", "ApiError", "Console", "Request", "bind"]


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    return await httpserve.bind(host, port, "the console")


async def _read_request(stream: trio.abc.ReceiveStream) -> Request | ApiError | None:
    return await read_request(stream, MAX_HEAD, MAX_BODY)


class Console:
    def __init__(self, state: BrokerState, bound: tuple[str, int], token: str) -> None:
        self.state = state
        self.bound = bound
        self.token = token
        self.files: dict[str, bytes] = {}
        host, port = bound
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/"
        self.loopback = is_loopback(host)
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", shown)}
        self.origins = {f"http://{h}" for h in self.hosts}
        self.server = HttpServer("console", self._answer, _error, max_clients=MAX_CLIENTS, max_head=MAX_HEAD,
                                 max_body=MAX_BODY, read_timeout=READ_TIMEOUT_S, send_timeout=SEND_TIMEOUT_S,
                                 headers=_SECURITY_HEADERS, max_streams=MAX_STREAMS)

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
        await self.server.serve(sock)

    async def _answer(self, req: Request) -> Response | Streaming:
        try:
            if self.loopback and req.headers.get("host", "").lower() not in self.hosts:
                raise ApiError(421, "this console answers only to its own address (Host header)")
            if req.path in self.files:
                if req.method not in ("GET", "HEAD"):
                    raise ApiError(405, "only GET here")
                return Response(200, STATIC[req.path], self.files[req.path])
            if not req.path.startswith("/api/"):
                raise ApiError(404, f"no such page: {req.path}")
            if req.path == "/api/events" and req.method == "GET":
                return events.stream(self.state, req)   # live updates (Server-Sent Events)
            if req.method == "POST":
                self._check_csrf(req)
                result = await actions.dispatch(self.state, req)
            elif req.method in ("GET", "HEAD"):
                result = await api.dispatch(self.state, req)
            else:
                raise ApiError(405, "GET to read, POST to change")
            return Response(200, "application/json", json.dumps(result, separators=(",", ":")).encode("utf-8"))
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


def _error(exc: ApiError) -> Response:
    return Response(exc.status, "application/json", json.dumps({"error": exc.message}).encode("utf-8"))
