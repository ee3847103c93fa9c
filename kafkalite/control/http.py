"""The control API's HTTP/1.1 service on the broker's trio loop (the server is :mod:`kafkalite.httpd.server`,
shared with the console and the metrics endpoint: bounded head and body, one request per connection, at most
``MAX_CLIENTS`` at once, read and send timeouts).

What differs from the console: every answer is JSON; mutations are POST with ``Content-Type:
application/json`` (a page on another site cannot send that without a CORS preflight, which is never
granted), and when bound to loopback the ``Host`` header must be a loopback name or the bound address (a
DNS-rebinding page gets 421). No token: the API is for scripts and test code on the same machine.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import trio

from kafkalite.control.api import dispatch
from kafkalite.httpd import server as httpserve
from kafkalite.httpd.server import HttpError, HttpServer, Request, Response, is_loopback

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 16
MAX_HEAD = 8192
MAX_BODY = 64 * 1024

ApiError = HttpError   # the control API's name for it (api.py raises it)


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    """A listening socket for the control API; a failure is a StartupError."""
    return await httpserve.bind(host, port, "the control API")


class ControlServer:
    def __init__(self, control: Any, plans: Callable[[], dict[int, Any]], bound: tuple[str, int]) -> None:
        self.control = control
        self.plans = plans
        host, port = bound
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/"
        self.loopback = is_loopback(host)
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", shown)}
        self._http = HttpServer("control", self._answer, _error, max_clients=MAX_CLIENTS, max_head=MAX_HEAD,
                                max_body=MAX_BODY, read_timeout=READ_TIMEOUT_S, send_timeout=SEND_TIMEOUT_S,
                                headers="Cache-Control: no-store\r\n")

    async def serve(self, sock: trio.socket.SocketType) -> None:
        """Accept and answer until cancelled (the caller owns ``sock``)."""
        await self._http.serve(sock)

    async def _answer(self, req: Request) -> Response:
        if self.loopback and req.headers.get("host", "").lower() not in self.hosts:
            raise HttpError(421, "the control API answers only to its own address (Host header)")
        try:
            result = await dispatch(self, req)
        except HttpError:
            raise
        except Exception:
            log.exception("control: %s %s failed", req.method, req.path)
            raise HttpError(500, "internal error (see the broker's log)") from None
        return Response(200, "application/json", json.dumps(result, separators=(",", ":")).encode("utf-8"))


def _error(exc: HttpError) -> Response:
    return Response(exc.status, "application/json", json.dumps({"error": exc.message}).encode("utf-8"))
