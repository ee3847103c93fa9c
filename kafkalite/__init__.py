"""kafkalite: a Kafka-compatible broker in Python that keeps Kafka's own on-disk format.

``kafkalite.Broker`` is the embedded broker (see ``kafkalite.embedded``); ``python -m kafkalite serve`` runs
the server.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.embedded import Broker

__all__ = ["Broker"]


def __getattr__(name: str) -> Any:
    if name == "Broker":
        from kafkalite.embedded import Broker

        return Broker
    raise AttributeError(f"module 'kafkalite' has no attribute {name!r}")
