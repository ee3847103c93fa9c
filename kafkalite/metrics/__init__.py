"""Prometheus metrics and a health check, on an opt-in HTTP port (``kafkalite.metrics.listen``,
``kafkalite serve --metrics 127.0.0.1:9404``; off unless set).

    GET /metrics   the exposition (kafkalite.metrics.exposition: Kafka's metric names)
    GET /health    200 "ok" while the broker serves, 503 "draining" once shutdown has begun (for containers)

Pieces:

- :mod:`kafkalite.metrics.requests`: counters the connection feeds after each request. The connection holds
  ``state.metrics`` (None when metrics are off, so the request path then pays one attribute test) and calls
  ``state.metrics.handle(fn, ctx, body)`` instead of ``fn(ctx, body)``.
- :mod:`kafkalite.metrics.exposition`: the text built at scrape time from the counters and the broker's state.
- :mod:`kafkalite.metrics.http`: a minimal HTTP/1.1 server on the broker's trio loop (one request per
  connection, bounded head and time), started by :func:`start` under the broker's supervisor.

The broker needs no Prometheus library; tests parse the exposition with ``prometheus_client``'s parser.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkalite.config.addresses import parse_address
from kafkalite.config.sidecars import METRICS_LISTEN
from kafkalite.httpd.server import public_url
from kafkalite.metrics.requests import RequestMetrics

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

LISTEN_KEY = METRICS_LISTEN
DEFAULT_ADDRESS = "127.0.0.1:9404"
# log dir -> the bound (host, port) of its broker's metrics endpoint (kafkalite.Broker.metrics_address)
_BOUND: dict[str, tuple[str, int]] = {}

__all__ = ["DEFAULT_ADDRESS", "LISTEN_KEY", "RequestMetrics", "bound_address", "start"]


def _key(log_dir: str | Path) -> str:
    return os.path.abspath(str(log_dir))   # string work only (no file system access)


def bound_address(log_dir: str | Path) -> tuple[str, int] | None:
    """Where the metrics of the broker using ``log_dir`` are served (None: metrics off or not started)."""
    return _BOUND.get(_key(log_dir))


async def start(state: BrokerState, nursery: trio.Nursery) -> None:
    """If ``kafkalite.metrics.listen`` is set: bind it (a failure is a StartupError, like a listener's),
    set ``state.metrics`` and serve HTTP in ``nursery`` under the supervisor."""
    # the endpoint itself: start() only, bound_address() stays light
    from kafkalite.metrics.http import bind, serve_http

    value = state.config.get_str(LISTEN_KEY) if hasattr(state.config, "get_str") else None
    if not value:
        state.metrics = None
        return
    host, port = parse_address(value)
    sock, bound = await bind(host, port)
    state.metrics = RequestMetrics(state)
    key = _key(state.config.log_dir)
    _BOUND[key] = bound
    log.info("metrics at %s (health: /health)", public_url(bound, "/metrics"))

    async def run() -> None:
        try:   # a failure is logged and the server restarted by the supervisor: never the broker's end
            await state.supervisor.run("metrics.http", serve_http, state, sock)
        finally:
            sock.close()
            _BOUND.pop(key, None)

    nursery.start_soon(run)
