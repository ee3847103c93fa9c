"""The control API's HTTP/1.1 server on the broker's trio loop.

The request reading (bounded head and body, one request per connection) is the console's
(:mod:`kafkalite.console.http`), imported, not copied. What differs: every answer is JSON; mutations are POST
with ``Content-Type: application/json`` (a page on another site cannot send that without a CORS preflight,
which is never granted), and when bound to loopback the ``Host`` header must be a loopback name or the bound
address (a DNS-rebinding page gets 421). No token: the API is for scripts and test code on the same machine.
"""
from __future__ import annotations

import errno
import json
import logging
import socket as _stdsocket
from collections.abc import Callable
from typing import Any

import trio

from kafkalite.console.http import _REASONS, ApiError, Request, _read_request
from kafkalite.startup_errors import StartupError

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 16


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    where = f"{host}:{port}"
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=_stdsocket.SOCK_STREAM, flags=_stdsocket.AI_PASSIVE)
    except OSError as exc:
        raise StartupError(f"cannot listen for the control API on {where}: {exc.strerror or exc}") from None
    family, type_, proto, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, type_, proto)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(sockaddr)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        hint = " (another process is listening there; choose another port)" if exc.errno == errno.EADDRINUSE else ""
        raise StartupError(f"cannot listen for the control API on {where}: {exc.strerror or exc}{hint}") from None
    name = sock.getsockname()
    return sock, (str(name[0]), int(name[1]))


class ControlServer:
    def __init__(self, control: Any, plans: Callable[[], dict[int, Any]], bound: tuple[str, int]) -> None:
        from kafkalite.control import is_loopback

        self.control = control
        self.plans = plans
        host, port = bound
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}/"
        self.loopback = is_loopback(host)
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", shown)}

    async def serve(self, sock: trio.socket.SocketType) -> None:
        """Accept and answer until cancelled (the caller owns ``sock``)."""
        limiter = trio.Semaphore(MAX_CLIENTS)
        async with trio.open_nursery() as nursery:
            while True:
                await limiter.acquire()
                try:
                    client, _ = await sock.accept()
                except OSError as exc:
                    limiter.release()
                    log.info("control: accept failed: %s", exc)
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
                return
            status, body = _error(req) if isinstance(req, ApiError) else await self._answer(req)
            head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n")
            with trio.move_on_after(SEND_TIMEOUT_S):
                await stream.send_all(head.encode("ascii") + body)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        except Exception:
            log.exception("control: request failed")
        finally:
            limiter.release()
            await trio.aclose_forcefully(stream)

    async def _answer(self, req: Request) -> tuple[int, bytes]:
        from kafkalite.control.api import dispatch

        try:
            if self.loopback and req.headers.get("host", "").lower() not in self.hosts:
                raise ApiError(421, "the control API answers only to its own address (Host header)")
            result = await dispatch(self, req)
            return 200, json.dumps(result, separators=(",", ":")).encode("utf-8")
        except ApiError as exc:
            return _error(exc)
        except Exception:
            log.exception("control: %s %s failed", req.method, req.path)
            return _error(ApiError(500, "internal error (see the broker's log)"))


def _error(exc: ApiError) -> tuple[int, bytes]:
    return exc.status, json.dumps({"error": exc.message}).encode("utf-8")
