"""The schema registry's HTTP service on the broker's trio loop (the server is :mod:`kafkalite.httpd.server`,
shared with the console, metrics and control API: bounded head and body, one request per connection, at most
``MAX_CLIENTS`` at once, read and send timeouts).

As Confluent's: answers are ``application/vnd.schemaregistry.v1+json``; errors are ``{"error_code": N,
"message": "..."}`` with the matching HTTP status; request bodies are JSON sent as
``application/vnd.schemaregistry.v1+json``, ``application/vnd.schemaregistry+json``, ``application/json`` or
``application/octet-stream`` (or with no content type); the form and text types a web page may send without a
CORS preflight get 415, so a page on another site cannot register or delete. Bound to loopback, the ``Host``
header must name the bound address (a DNS-rebinding page gets 421).
"""
from __future__ import annotations

import json
import logging
from typing import Any

import trio

from kafkalite.config.sidecars import SCHEMA_REGISTRY_AUTH
from kafkalite.httpd import server as httpserve
from kafkalite.httpd.server import HttpError, HttpServer, Request, Response, is_loopback
from kafkalite.registry.api import CONTENT_TYPE, dispatch
from kafkalite.registry.auth import ANONYMOUS, Access, Users, basic_credentials, unauthorized
from kafkalite.registry.core import RegistryError

log = logging.getLogger("kafkalite.registry")

READ_TIMEOUT_S = 10.0
SEND_TIMEOUT_S = 30.0
MAX_CLIENTS = 64
MAX_HEAD = 16 * 1024
MAX_BODY = 2 * 1024 * 1024
LOAD_WAIT_S = 30.0   # a request during start-up waits this long for _schemas to be read back


async def bind(host: str, port: int) -> tuple[trio.socket.SocketType, tuple[str, int]]:
    """A listening socket for the schema registry; a failure is a StartupError."""
    return await httpserve.bind(host, port, "the schema registry")


class RegistryServer:
    def __init__(self, service: Any, bound: tuple[str, int]) -> None:
        self.service = service
        state = service.state
        self.basic = (state.config.get_str(SCHEMA_REGISTRY_AUTH) or "NONE").upper() == "BASIC"
        self.users = Users(lambda: [sec.plain_users for sec in state.listener_security.values() if sec.plain_users],
                           state.scram.get if state.scram is not None else (lambda user, mech: None))
        host, port = bound
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}"
        self.loopback = is_loopback(host)
        self.hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", shown)}
        self._http = HttpServer("schema-registry", self._answer, _error, max_clients=MAX_CLIENTS,
                                max_head=MAX_HEAD, max_body=MAX_BODY, read_timeout=READ_TIMEOUT_S,
                                send_timeout=SEND_TIMEOUT_S)

    async def serve(self, sock: trio.socket.SocketType) -> None:
        await self._http.serve(sock)

    async def _answer(self, req: Request) -> Response:
        try:
            if self.loopback and req.headers.get("host", "").lower() not in self.hosts:
                raise RegistryError(421, 421, "the schema registry answers only to its own address (Host header)")
            if not self.service.loaded.is_set():
                with trio.move_on_after(LOAD_WAIT_S):
                    await self.service.loaded.wait()
            if self.service.error is not None:
                raise RegistryError(500, 50001, f"Error in the backend data store: {self.service.error}")
            if not self.service.loaded.is_set():
                raise RegistryError(500, 50002, f"{self.service.topic} is still being read back")
            access = await self._access(req)
            if _mutates(req):
                writer = self.service.writer()   # the broker leading _schemas-0 makes every change
                result = dispatch(writer.registry, req, access)
                end = writer.end_offset()
                await writer.wait_committed(end)
                await self.service.wait_applied(end)
            else:
                self.service.catch_up()
                result = dispatch(self.service.registry, req, access)
        except RegistryError as exc:
            return _registry_error(exc)
        except HttpError:
            raise
        except Exception:
            log.exception("schema registry: %s %s failed", req.method, req.path)
            return _registry_error(RegistryError(500, 50001, "Internal error (see the broker's log)"))
        if isinstance(result, Response):
            return result
        return Response(200, CONTENT_TYPE, json.dumps(result, separators=(",", ":"),
                                                      ensure_ascii=False).encode("utf-8"))


    async def _access(self, req: Request) -> Access:
        """The caller's principal (HTTP Basic against the broker's SASL users when BASIC is on) and the broker's
        authorizer; 401 for missing or wrong credentials."""
        principal = ANONYMOUS
        if self.basic:
            header = req.headers.get("authorization")
            if not header:
                raise unauthorized()
            user, password = basic_credentials(header)
            if not self.users.cached(user, password):
                ok = await trio.to_thread.run_sync(self.users.verify, user, password)   # PBKDF2 for SCRAM
                if not ok:
                    raise unauthorized()
            principal = f"User:{user}"
        return Access(self.service.state.authorizer, principal, req.peer)


def _mutates(req: Request) -> bool:
    """A change (made by the writer): PUT and DELETE, and POST but for a lookup and a compatibility check."""
    if req.method in ("PUT", "DELETE"):
        return True
    return req.method == "POST" and len(req.parts) == 3 and req.parts[0] == "subjects"


def _registry_error(exc: RegistryError) -> Response:
    body = json.dumps({"error_code": exc.code, "message": exc.message}, ensure_ascii=False).encode("utf-8")
    extra = 'WWW-Authenticate: Basic realm="kafkalite schema registry"\r\n' if exc.status == 401 else ""
    return Response(exc.status, CONTENT_TYPE, body, extra)


def _error(exc: HttpError) -> Response:
    return _registry_error(RegistryError(exc.status, exc.status, exc.message))
