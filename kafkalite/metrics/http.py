"""A minimal HTTP/1.1 server for ``/metrics`` and ``/health`` on the broker's trio loop.

One request per connection (``Connection: close``): a scraper or a container health probe opens, asks, and
closes. The request head is read up to ``MAX_HEAD`` bytes within ``HEAD_TIMEOUT_S``; anything else gets
400/404/405 or the connection is dropped, so a stray client can hold neither memory nor a task for long.
At most ``MAX_CLIENTS`` are served at once (more wait in the listen backlog).
"""
from __future__ import annotations

import errno
import logging
import socket as _stdsocket
from typing import Any

import trio

from kafkalite.startup_errors import StartupError

log = logging.getLogger(__name__)

MAX_HEAD = 8192
HEAD_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 16


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    where = f"{host}:{port}"
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=_stdsocket.SOCK_STREAM, flags=_stdsocket.AI_PASSIVE)
    except OSError as exc:
        raise StartupError(f"cannot listen for metrics on {where}: {exc.strerror or exc}") from None
    family, type_, proto, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, type_, proto)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(sockaddr)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        hint = " (another process is listening there; choose another port)" if exc.errno == errno.EADDRINUSE else ""
        raise StartupError(f"cannot listen for metrics on {where}: {exc.strerror or exc}{hint}") from None
    name = sock.getsockname()
    return sock, (str(name[0]), int(name[1]))


async def serve_http(state: Any, sock: trio.socket.SocketType) -> None:
    """Accept and answer until cancelled (the caller owns ``sock``)."""
    limiter = trio.Semaphore(MAX_CLIENTS)   # released by the client task
    async with trio.open_nursery() as nursery:
        while True:
            await limiter.acquire()
            try:
                client, _ = await sock.accept()
            except OSError as exc:
                limiter.release()
                log.info("metrics: accept failed: %s", exc)
                await trio.sleep(0.1)
                continue
            nursery.start_soon(_client, state, client, limiter)


async def _client(state: Any, client: trio.socket.SocketType, limiter: trio.Semaphore) -> None:
    stream = trio.SocketStream(client)
    try:
        head = b""
        with trio.move_on_after(HEAD_TIMEOUT_S):
            while b"\r\n\r\n" not in head and b"\n\n" not in head and len(head) < MAX_HEAD:
                chunk = await stream.receive_some(MAX_HEAD)
                if not chunk:
                    break
                head += chunk
        status, ctype, body, method = await _answer(state, head)
        data = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n").encode("ascii") + (body if method != "HEAD" else b"")
        with trio.move_on_after(SEND_TIMEOUT_S):
            await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    except Exception:
        log.exception("metrics: request failed")
    finally:
        limiter.release()
        await trio.aclose_forcefully(stream)


async def _answer(state: Any, head: bytes) -> tuple[str, str, bytes, str]:
    text = "text/plain; charset=utf-8"
    line = head.split(b"\n", 1)[0].decode("latin-1").strip()
    parts = line.split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return "400 Bad Request", text, b"bad request\n", "GET"
    method, target = parts[0], parts[1].split("?", 1)[0]
    if method not in ("GET", "HEAD"):
        return "405 Method Not Allowed", text, b"only GET and HEAD\n", method
    if target == "/health":
        if getattr(state, "draining", False):
            return "503 Service Unavailable", text, b"draining\n", method
        return "200 OK", text, b"ok\n", method
    if target == "/metrics":
        from kafkalite.metrics.exposition import CONTENT_TYPE, render

        return "200 OK", CONTENT_TYPE, (await render(state, state.metrics)).encode("utf-8"), method
    return "404 Not Found", text, b"try /metrics or /health\n", method
