"""The seam between the fault tools and whatever runs the brokers.

The HTTP control API, the `kafkalite fault` CLI (through that API) and the Python helpers ask for cluster
operations — stop/start/restart a broker, move a partition's leader, shrink or grow its ISR, move a group or
transaction coordinator — through `ClusterControl`. `kafkalite.cluster.Cluster` implements it structurally for
several brokers in one process; `SingleBrokerControl` implements it for the ordinary one-broker `serve`, where
every operation that needs a second broker is refused with `ClusterOpError("not a cluster ...")` (the control API
answers those with 409, bad arguments with 400).

All methods are async (trio) and run in the broker's event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

CoordinatorKind = Literal["group", "transaction"]


class ClusterOpError(Exception):
    """A cluster operation that cannot be done: unknown node id, unknown topic-partition, a replica set that does
    not contain the new leader, or (on a single broker) any operation that needs several brokers. The message is
    shown to the user as is (control API body, CLI stderr)."""


@runtime_checkable
class ClusterControl(Protocol):
    """Cluster operations the fault tools drive. Node ids are Kafka broker ids (`node.id`)."""

    def node_ids(self) -> list[int]:
        """Every broker's node id, running or stopped, ascending."""
        ...

    async def stop_broker(self, node_id: int) -> None:
        """Stop one broker: its listeners refuse connections, open connections are closed, it leaves the ISRs
        (a controlled shutdown moves leadership away first, as Kafka's does)."""
        ...

    async def start_broker(self, node_id: int) -> None:
        """Start a stopped broker again on the same port(s); it catches up and rejoins the ISRs."""
        ...

    async def restart_broker(self, node_id: int) -> None:
        """stop_broker then start_broker."""
        ...

    async def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make `node_id` (a replica in the ISR) the partition's leader, bumping the leader epoch."""
        ...

    async def set_isr(self, topic: str, partition: int, node_ids: list[int]) -> None:
        """Set the partition's in-sync replica set (a subset of its replicas containing the leader)."""
        ...

    async def move_coordinator(self, kind: CoordinatorKind, key: str, node_id: int) -> None:
        """Move the coordinator of group `key` (kind "group") or transactional id `key` (kind "transaction")
        to `node_id`: the old one answers NOT_COORDINATOR from then on."""
        ...

    async def describe(self) -> dict[str, Any]:
        """JSON-able view: {"brokers": [{"node_id", "host", "port", "up"}], "partitions": [{"topic",
        "partition", "leader", "replicas", "isr"}], ...}."""
        ...


_NOT_A_CLUSTER = "not a cluster: this kafkalite runs a single broker (start it with `serve --brokers N` for {op})"


class SingleBrokerControl:
    """`ClusterControl` for one broker: it knows its node id and describes itself; every operation that needs
    other brokers raises ClusterOpError. `state` is the broker's BrokerState (or anything with `node_id`,
    `advertised` listeners and a topic catalog); it is read lazily so the control API can be built early."""

    def __init__(self, state: BrokerState) -> None:
        self._state = state

    def node_ids(self) -> list[int]:
        return [int(self._state.node_id)]

    def _refuse(self, op: str) -> None:
        raise ClusterOpError(_NOT_A_CLUSTER.format(op=op))

    async def stop_broker(self, node_id: int) -> None:
        self._refuse("stop_broker")

    async def start_broker(self, node_id: int) -> None:
        self._refuse("start_broker")

    async def restart_broker(self, node_id: int) -> None:
        self._refuse("restart_broker")

    async def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._refuse("move_leader")

    async def set_isr(self, topic: str, partition: int, node_ids: list[int]) -> None:
        self._refuse("set_isr")

    async def move_coordinator(self, kind: CoordinatorKind, key: str, node_id: int) -> None:
        self._refuse("move_coordinator")

    async def describe(self) -> dict[str, Any]:
        from kafkalite.faults.describe import describe_single_broker  # one broker only: not at cluster start

        return describe_single_broker(self._state)
