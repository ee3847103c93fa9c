"""Which brokers and controllers are registered with the controller: what Kafka's ``ClusterControlManager`` keeps
(``brokerRegistrations``, ``controllerRegistrations``) and UnregisterBroker / UnregisterController remove.

kafkalite has no registration requests: a node registers by running (a single broker, or each node of a
``kafkalite.cluster``; every node is a combined broker and controller, as Kafka's ``process.roles=broker,controller``
nodes are). A node stays registered while it is stopped, as a Kafka broker does (fenced) until an
UnregisterBroker removes it; starting it again registers it again, as a Kafka broker registers at start-up.

The record of what was unregistered is one object per metadata room (``MetadataRoom.shared``), so every broker
of a cluster answers alike. It is not persisted: a whole restart registers every node again, as every Kafka node
registers when it starts.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Registrations:
    def __init__(self) -> None:
        self.unregistered_brokers: set[int] = set()
        self.unregistered_controllers: set[int] = set()

    def registered_brokers(self, nodes: Mapping[int, bool]) -> list[int]:
        """The registered broker ids among ``nodes`` (node id -> running): every running one, and the stopped
        ones no UnregisterBroker removed."""
        return sorted(n for n, up in nodes.items() if up or n not in self.unregistered_brokers)

    def registered_controllers(self, nodes: Mapping[int, bool]) -> list[int]:
        return sorted(n for n, up in nodes.items() if up or n not in self.unregistered_controllers)

    def unregister_broker(self, node_id: int) -> None:
        self.unregistered_brokers.add(node_id)

    def unregister_controller(self, node_id: int) -> None:
        self.unregistered_controllers.add(node_id)

    def started(self, node_id: int) -> None:
        """A node (re)started: it registers as a broker and as a controller again."""
        self.unregistered_brokers.discard(node_id)
        self.unregistered_controllers.discard(node_id)


def of(room: Any) -> Registrations:
    """The metadata room's registrations (a ``kafkalite.metadata.MetadataRoom``)."""
    reg: Registrations = room.shared("registrations", Registrations)
    return reg
