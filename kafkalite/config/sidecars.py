"""The settings that turn on the broker's HTTP sidecars: where each listens (``HOST:PORT``; empty: off).

Named here, in the settings room, so the server, the cluster runtime and the tools can read them without importing
the sidecars themselves (each pulls in its HTTP server).
"""
from __future__ import annotations

METRICS_LISTEN = "kafkalite.metrics.listen"
CONSOLE_LISTEN = "kafkalite.console.listen"
CONTROL_LISTEN = "kafkalite.control.listen"
SCHEMA_REGISTRY_LISTEN = "kafkalite.schema.registry.listen"
SCHEMA_REGISTRY_AUTH = "kafkalite.schema.registry.authentication.method"
