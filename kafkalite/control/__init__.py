"""The HTTP control API (issue #17): faults on command and cluster operations over JSON, opt-in and loopback.

``kafkalite serve --control 127.0.0.1:PORT`` (``kafkalite.control.listen``; off unless set). It binds loopback
only unless ``kafkalite.control.allow.remote=true`` (``--control-allow-remote``): whoever reaches it can stop
brokers and fail requests. The endpoints (:mod:`kafkalite.control.api`) drive each broker's
:class:`~kafkalite.faults.FaultPlan` and a :class:`~kafkalite.faults.control.ClusterControl` (one broker:
``SingleBrokerControl``, whose cluster operations answer 409; several: ``kafkalite.cluster.Cluster``).
The ``kafkalite fault`` command is a client of this API.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.config.addresses import parse_address
from kafkalite.config.sidecars import CONTROL_LISTEN
from kafkalite.errors import StartupError
from kafkalite.faults.control import SingleBrokerControl
from kafkalite.httpd.server import is_loopback

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

LISTEN_KEY = CONTROL_LISTEN
REMOTE_KEY = "kafkalite.control.allow.remote"
DEFAULT_ADDRESS = "127.0.0.1:9405"
_BOUND: dict[str, tuple[str, int]] = {}

__all__ = ["DEFAULT_ADDRESS", "LISTEN_KEY", "bound_address", "is_loopback", "serve_control", "start"]


def _key(log_dir: str | Path) -> str:
    return os.path.abspath(str(log_dir))


def bound_address(log_dir: str | Path) -> tuple[str, int] | None:
    """Where the control API of the broker using ``log_dir`` is served (None: off or not started)."""
    return _BOUND.get(_key(log_dir))


async def serve_control(control: Any, plans: Callable[[], dict[int, Any]], host: str, port: int,
                        nursery: trio.Nursery, *, allow_remote: bool = False, supervisor: Any = None,
                        key: str | None = None) -> tuple[str, int]:
    """Bind ``host:port`` and serve the control API in ``nursery`` for ``control`` (a ClusterControl) and
    ``plans()`` (node id -> FaultPlan). Returns the bound address. A non-loopback host is refused unless
    ``allow_remote``; a bind failure is a StartupError (like a listener's)."""
    # the server itself: when serving only, bound_address() stays light
    from kafkalite.control.http import ControlServer, bind

    if not allow_remote and not is_loopback(host):
        raise StartupError(f"the control API may bind only a loopback address, not {host!r} (anyone who "
                           f"reaches it can fail requests and stop brokers); set {REMOTE_KEY}=true "
                           "(--control-allow-remote) to allow it")
    sock, bound = await bind(host, port)
    server = ControlServer(control, plans, bound)
    if key is not None:
        _BOUND[key] = bound
    log.info("control API on %s", server.url)

    async def run() -> None:
        try:
            if supervisor is not None:   # a failure is logged and the server restarted: never the broker's end
                await supervisor.run("control.http", server.serve, sock)
            else:
                await server.serve(sock)
        finally:
            sock.close()
            if key is not None:
                _BOUND.pop(key, None)

    nursery.start_soon(run)
    return bound


async def start(state: BrokerState, nursery: trio.Nursery) -> None:
    """One broker: if ``kafkalite.control.listen`` is set, serve the control API for it."""
    value = state.config.get_str(LISTEN_KEY) if hasattr(state.config, "get_str") else None
    if not value:
        return
    host, port = parse_address(value)
    await serve_control(SingleBrokerControl(state), lambda: {int(state.node_id): state.faults}, host, port,
                        nursery, allow_remote=state.config.get_bool(REMOTE_KEY), supervisor=state.supervisor,
                        key=_key(state.config.log_dir))
