"""``/metrics`` and ``/health`` over HTTP on the broker's trio loop (the server itself is
:mod:`kafkalite.httpd.server`, shared with the console).

One request per connection (``Connection: close``): a scraper or a container health probe opens, asks, and
closes. The request head is read up to ``MAX_HEAD`` bytes within ``HEAD_TIMEOUT_S``; anything else gets
400/404/405 or the connection is dropped, so a stray client can hold neither memory nor a task for long.
At most ``MAX_CLIENTS`` are served at once (more wait in the listen backlog).

``bind`` and ``serve_http`` stay importable from here (other rooms serve HTTP through them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from kafkalite.httpd import server as httpserve
from kafkalite.httpd.server import HttpError, HttpServer, Request, Response
from kafkalite.metrics.exposition import CONTENT_TYPE, render

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

MAX_HEAD = 8192
HEAD_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 16
_TEXT = "text/plain; charset=utf-8"

__all__ = ["HEAD_TIMEOUT_S", "MAX_CLIENTS", "MAX_HEAD", "SEND_TIMEOUT_S", "bind", "serve_http"]


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    return await httpserve.bind(host, port, "metrics")


def _text_error(exc: HttpError) -> Response:
    return Response(exc.status, _TEXT, f"{exc.message}\n".encode())


async def serve_http(state: BrokerState, sock: trio.socket.SocketType) -> None:
    """Accept and answer until cancelled (the caller owns ``sock``)."""

    async def handle(req: Request) -> Response:
        return await _answer(state, req)

    server = HttpServer("metrics", handle, _text_error, max_clients=MAX_CLIENTS, max_head=MAX_HEAD,
                        read_timeout=HEAD_TIMEOUT_S, send_timeout=SEND_TIMEOUT_S)
    await server.serve(sock)


async def _answer(state: BrokerState, req: Request) -> Response:
    if req.method not in ("GET", "HEAD"):
        return Response(405, _TEXT, b"only GET and HEAD\n")
    if req.path == "/health":
        if state.purgatory.draining:
            return Response(503, _TEXT, b"draining\n")
        return Response(200, _TEXT, b"ok\n")
    if req.path == "/metrics" and state.metrics is not None:   # set before this server starts
        return Response(200, CONTENT_TYPE, (await render(state, state.metrics)).encode("utf-8"))
    return Response(404, _TEXT, b"try /metrics or /health\n")
