"""Who keeps the schemas? A Confluent-compatible Schema Registry built into the broker (issue #27).

``kafkalite serve --schema-registry [HOST:PORT]`` (``kafkalite.schema.registry.listen``; off unless set;
``127.0.0.1:8081`` when given without an address) serves Confluent Schema Registry's REST API and keeps its state
in the ``_schemas`` topic, in Confluent's own record format, so an application (and its serializers) pointed at
kafkalite works unchanged, and a Confluent registry or Karapace started later on the same topic reads what was
written here. The pieces:

- :mod:`kafkalite.registry.records`: the ``_schemas`` keys and values (JSON as Confluent writes them);
- :mod:`kafkalite.registry.core`: subjects, versions, ids, configs and modes; replays and writes records (pure);
- :mod:`kafkalite.registry.compat`: parsing and compatibility rules per schema type (Avro, JSON Schema, Protobuf);
- :mod:`kafkalite.registry.service`: the trio glue that loads and appends ``_schemas``;
- :mod:`kafkalite.registry.api` and :mod:`kafkalite.registry.http`: the REST routes on :mod:`kafkalite.httpd`.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkalite.config.addresses import parse_address
from kafkalite.config.sidecars import SCHEMA_REGISTRY_LISTEN
from kafkalite.httpd.server import public_url

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.registry")

LISTEN_KEY = SCHEMA_REGISTRY_LISTEN
DEFAULT_ADDRESS = "127.0.0.1:8081"
_BOUND: dict[str, tuple[str, int]] = {}

__all__ = ["DEFAULT_ADDRESS", "LISTEN_KEY", "bound_address", "start"]


def _key(log_dir: str | Path) -> str:
    return os.path.abspath(str(log_dir))


def bound_address(log_dir: str | Path) -> tuple[str, int] | None:
    """Where the schema registry of the broker using ``log_dir`` is served (None: off or not started)."""
    return _BOUND.get(_key(log_dir))


async def start(state: BrokerState, nursery: trio.Nursery) -> None:
    """If ``kafkalite.schema.registry.listen`` is set: bind it (a failure is a StartupError, like a listener's),
    load ``_schemas`` in the background and serve the REST API in ``nursery`` under the supervisor."""
    from kafkalite.registry.http import (  # the HTTP side: imported once the registry is on
        RegistryServer,
        bind,
    )
    from kafkalite.registry.service import RegistryService  # storage glue: likewise

    value = state.config.get_str(LISTEN_KEY)
    if not value:
        return
    host, port = parse_address(value)
    sock, bound = await bind(host, port)
    service = RegistryService(state)
    state.schema_registry = service
    server = RegistryServer(service, bound)
    key = _key(state.config.log_dir)
    _BOUND[key] = bound
    log.info("schema registry at %s", public_url(bound, "/"))

    async def run() -> None:
        try:   # a failure is logged and the server restarted by the supervisor: never the broker's end
            await state.supervisor.run("schema-registry.http", server.serve, sock)
        finally:
            sock.close()
            _BOUND.pop(key, None)

    nursery.start_soon(service.load)
    nursery.start_soon(run)
