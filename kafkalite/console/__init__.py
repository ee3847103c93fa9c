"""The web console: a small JSON API over the broker's own state and a few static files, on an opt-in HTTP
port (``kafkalite.console.listen``, ``kafkalite serve --console 127.0.0.1:8080``; off unless set).

Pages (hash routes of one static page, ``static/``): brokers and configs; topics with partitions, sizes,
offsets, segment files and configs; a message browser per partition with a bounded search; consumer groups
with members, assignment and lag; create/delete topic and reset offsets, each behind a confirmation step.

Pieces:

- :mod:`kafkalite.console.http`: a minimal HTTP/1.1 server on the broker's trio loop (one request per
  connection, bounded head, body and time; Host checked against loopback names and the bound address, so a
  DNS-rebinding page cannot read the API).
- :mod:`kafkalite.console.api`: the read endpoints, in-process (topic catalog, partition logs, the classic
  group coordinator); no Kafka client round trip. Every endpoint bounds its work (records, bytes, search
  window, sliced walks); record bytes are read and decoded in a worker thread.
- :mod:`kafkalite.console.actions`: the mutating endpoints (create/delete topic, reset offsets), POST only,
  each requiring the per-process token (``X-Kafkalite-Token``; the page reads it from its own HTML, which
  another origin cannot) and a same-origin ``Origin`` when the browser sends one: no CSRF from another page.
- :mod:`kafkalite.console.render`: keys, values and headers as text, pretty JSON or hex. The page builds
  every element with ``textContent`` and a strict Content-Security-Policy forbids inline script: names,
  keys and values (attacker-controlled) are never markup.
"""
from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkalite.config.addresses import parse_address
from kafkalite.config.sidecars import CONSOLE_LISTEN
from kafkalite.httpd.server import public_url

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

LISTEN_KEY = CONSOLE_LISTEN
DEFAULT_ADDRESS = "127.0.0.1:8080"
# log dir -> the bound (host, port) of its broker's console (kafkalite.Broker.console_address)
_BOUND: dict[str, tuple[str, int]] = {}

__all__ = ["DEFAULT_ADDRESS", "LISTEN_KEY", "bound_address", "parse_address", "start"]


def _key(log_dir: str | Path) -> str:
    return os.path.abspath(str(log_dir))


def bound_address(log_dir: str | Path) -> tuple[str, int] | None:
    """Where the console of the broker using ``log_dir`` is served (None: off or not started)."""
    return _BOUND.get(_key(log_dir))


async def start(state: BrokerState, nursery: trio.Nursery) -> None:
    """If ``kafkalite.console.listen`` is set: bind it (a failure is a StartupError, like a listener's) and
    serve the console in ``nursery`` under the supervisor."""
    # the console itself: start() only, bound_address() stays light
    from kafkalite.console.http import Console, bind

    value = state.config.get_str(LISTEN_KEY) if hasattr(state.config, "get_str") else None
    if not value:
        return
    host, port = parse_address(value)
    sock, bound = await bind(host, port)
    console = Console(state, bound, secrets.token_hex(16))
    await console.load_static()
    key = _key(state.config.log_dir)
    _BOUND[key] = bound
    log.info("console at %s", public_url(bound, "/"))

    async def run() -> None:
        try:   # a failure is logged and the server restarted by the supervisor: never the broker's end
            await state.supervisor.run("console.http", console.serve, sock)
        finally:
            sock.close()
            _BOUND.pop(key, None)

    nursery.start_soon(run)
