"""Share-group (KIP-932) admin requests for ``kafkalite groups``, on the project's codec.

confluent-kafka (2.x) has no share-group admin API, so :class:`ShareAdmin` speaks the requests Kafka's Java
``Admin`` uses for ``kafka-share-groups.sh`` itself, over :mod:`kafkalite.client.wire` (same TLS/SASL
settings as the tools' ``--command-config``):

- ``ListGroups`` v5 with ``TypesFilter=["share"]`` (KIP-848's type filter), sent to every broker of the
  cluster (each lists the groups it coordinates), as the Java admin's ``listGroups`` does;
- ``FindCoordinator`` v3 (key type 0, group), then, to the coordinator: ``ShareGroupDescribe`` v1 (state,
  epochs, members with their assignment), ``DescribeShareGroupOffsets`` v1 (per share-partition the start
  offset, leader epoch and, since KIP-1226, the lag; null Topics = all topics the group has state for),
  ``DeleteGroups`` v2, ``AlterShareGroupOffsets`` v0 and ``DeleteShareGroupOffsets`` v0 (the broker refuses
  both for a group with members: NON_EMPTY_GROUP; an unknown group is GROUP_ID_NOT_FOUND);
- ``Metadata`` v9 for partition leaders and ``ListOffsets`` v7 (earliest -2, latest -1, or a timestamp) sent
  to each leader.

A coordinator that moved or is loading (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
COORDINATOR_LOAD_IN_PROGRESS) is looked up again until the tool's timeout; other errors raise
:class:`~kafkalite.client.wire.WireError` with Kafka's code.
"""
from __future__ import annotations

import time
from typing import Any

from kafkalite.client.wire import Connection, Security, WireError, bootstrap, error_name
from kafkalite_wire.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ShareGroupDescribeRequest,
)

_COORD_RETRY = {14, 15, 16}   # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
EARLIEST, LATEST = -2, -1
TP = tuple[str, int]


def _fail(what: str, code: int, message: str | None = None) -> WireError:
    return WireError(f"{what}: {error_name(code)}" + (f": {message}" if message else ""), code)


class ShareAdmin:
    """Connections to a cluster's brokers (opened on first use, one per broker) for share-group requests."""

    def __init__(self, servers: str, *, timeout: float, security: Security | None = None) -> None:
        self.servers = bootstrap(servers)
        self.timeout = timeout
        self.security = security
        self._conns: dict[tuple[str, int], Connection] = {}
        self.coordinator_id = -1   # node id of the coordinator last found

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def __enter__(self) -> ShareAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, addr: tuple[str, int], body: Any, version: int) -> Any:
        conn = self._conns.get(addr)
        if conn is None:
            conn = self._conns[addr] = Connection(*addr, timeout=self.timeout, security=self.security,
                                                  client_id="kafkalite-groups")
        try:
            return conn.request(body, version)
        except (OSError, WireError):
            self._conns.pop(addr, None)
            conn.close()
            raise

    def _any(self, body: Any, version: int) -> Any:
        """To the first bootstrap server that answers."""
        last: Exception | None = None
        for addr in self.servers:
            try:
                return self._send(addr, body, version)
            except OSError as exc:
                last = exc
        raise ConnectionError(f"no bootstrap server answered: {last}")

    def metadata(self, topics: list[str] | None) -> Any:
        req = MetadataRequest(topics=None if topics is None else
                              [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                              allow_auto_topic_creation=False)
        return self._any(req, 9)

    def list_groups(self) -> list[tuple[str, str]]:
        """``(group, state)`` of every share group, sorted."""
        brokers = [(b.host, b.port) for b in self.metadata([]).brokers] or self.servers[:1]
        out: set[tuple[str, str]] = set()
        for addr in brokers:
            r = self._send(addr, ListGroupsRequest(types_filter=["share"]), 5)
            if r.error_code:
                raise _fail("ListGroups", r.error_code)
            out.update((g.group_id, g.group_state) for g in r.groups if g.group_type.lower() == "share")
        return sorted(out)

    def _coordinated(self, group: str, what: str, attempt: Any) -> Any:
        """``attempt(addr)`` at ``group``'s coordinator; a coordinator error code it returns is retried."""
        deadline = time.monotonic() + self.timeout
        while True:
            r = self._any(FindCoordinatorRequest(key=group, key_type=0), 3)
            code = r.error_code
            if code == 0:
                addr = (r.host, r.port)
                self.coordinator_id = r.node_id
                code, out = attempt(addr)
                if code == 0:
                    return out
            if code not in _COORD_RETRY or time.monotonic() > deadline:
                raise _fail(f"{what} of group '{group}'", code, getattr(r, "error_message", None)
                            if r.error_code else None)
            time.sleep(0.2)

    def describe(self, group: str) -> tuple[Any, str]:
        """The ShareGroupDescribe ``DescribedGroup`` of ``group`` (error_code set: not a share group, ...)
        and its coordinator as Kafka prints it: ``host:port (id)``."""
        def attempt(addr: tuple[str, int]) -> tuple[int, Any]:
            d = self._send(addr, ShareGroupDescribeRequest(group_ids=[group]), 1).groups[0]
            return (d.error_code if d.error_code in _COORD_RETRY else 0), (d, f"{addr[0]}:{addr[1]} ({self.coordinator_id})")
        return self._coordinated(group, "describe", attempt)

    def start_offsets(self, group: str) -> dict[TP, tuple[int, int, int]]:
        """``{(topic, partition): (start offset, leader epoch, lag)}`` of every share-partition the group has
        state for (-1: unknown)."""
        def attempt(addr: tuple[str, int]) -> tuple[int, Any]:
            req = DescribeShareGroupOffsetsRequest(groups=[
                DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
            g = self._send(addr, req, 1).groups[0]
            if g.error_code:
                return g.error_code, g.error_message
            return 0, {(t.topic_name, p.partition_index): (p.start_offset, p.leader_epoch, p.lag)
                       for t in g.topics for p in t.partitions if not p.error_code}
        return self._coordinated(group, "offsets", attempt)

    def delete(self, group: str) -> int:
        """DeleteGroups for one group: its error code (0: deleted)."""
        def attempt(addr: tuple[str, int]) -> tuple[int, Any]:
            code = self._send(addr, DeleteGroupsRequest(groups_names=[group]), 2).results[0].error_code
            return (code if code in _COORD_RETRY else 0), code
        return self._coordinated(group, "delete", attempt)

    def alter_offsets(self, group: str, offsets: dict[TP, int]) -> dict[TP, str]:
        """AlterShareGroupOffsets: the partitions that failed, with Kafka's error name (empty: all set)."""
        by_topic: dict[str, list[Any]] = {}
        for (t, p), off in sorted(offsets.items()):
            by_topic.setdefault(t, []).append(
                AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestPartition(partition_index=p,
                                                                                     start_offset=off))
        req = AlterShareGroupOffsetsRequest(group_id=group, topics=[
            AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
            for t, ps in by_topic.items()])

        def attempt(addr: tuple[str, int]) -> tuple[int, Any]:
            r = self._send(addr, req, 0)
            if r.error_code:
                if r.error_code in _COORD_RETRY:
                    return r.error_code, None
                raise _fail(f"alter offsets of share group '{group}'", r.error_code, r.error_message)
            return 0, {(t.topic_name, p.partition_index): error_name(p.error_code) +
                       (f": {p.error_message}" if p.error_message else "")
                       for t in r.responses for p in t.partitions if p.error_code}
        return self._coordinated(group, "alter offsets", attempt)

    def delete_offsets(self, group: str, topics: list[str]) -> tuple[int, str | None, dict[str, tuple[int, str | None]]]:
        """DeleteShareGroupOffsets: (top-level error code, its message, ``{topic: (error code, message)}``).
        The group's share-partition state of those topics is forgotten; its next member starts again from
        ``share.auto.offset.reset``."""
        req = DeleteShareGroupOffsetsRequest(group_id=group, topics=[
            DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics])

        def attempt(addr: tuple[str, int]) -> tuple[int, Any]:
            r = self._send(addr, req, 0)
            if r.error_code in _COORD_RETRY:
                return r.error_code, None
            return 0, (r.error_code, r.error_message,
                       {t.topic_name: (t.error_code, t.error_message) for t in r.responses})
        return self._coordinated(group, "delete offsets", attempt)

    def partitions(self, topics: list[str]) -> dict[str, list[int]]:
        """Partition ids of each named topic that exists (unknown topics are left out)."""
        md = self.metadata(topics)
        return {t.name: sorted(p.partition_index for p in t.partitions) for t in md.topics if not t.error_code}

    def list_offsets(self, tps: list[TP], timestamp: int) -> dict[TP, int]:
        """ListOffsets at ``timestamp`` (EARLIEST, LATEST or ms) for each partition, asked of its leader;
        -1 where no offset matches a timestamp."""
        if not tps:
            return {}
        md = self.metadata(sorted({t for t, _ in tps}))
        nodes = {b.node_id: (b.host, b.port) for b in md.brokers}
        leader = {(t.name, p.partition_index): p.leader_id for t in md.topics for p in t.partitions}
        by_leader: dict[int, dict[str, list[int]]] = {}
        for t, p in tps:
            if (t, p) not in leader:
                raise WireError(f"{t}-{p}: UNKNOWN_TOPIC_OR_PARTITION", 3)
            by_leader.setdefault(leader[(t, p)], {}).setdefault(t, []).append(p)
        out: dict[TP, int] = {}
        for node, topics in by_leader.items():
            req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=t, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                                    for p in ps]) for t, ps in topics.items()])
            r = self._send(nodes.get(node, self.servers[0]), req, 7)
            for t in r.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise _fail(f"offsets of {t.name}-{p.partition_index}", p.error_code)
                    out[(t.name, p.partition_index)] = p.offset
        return out
