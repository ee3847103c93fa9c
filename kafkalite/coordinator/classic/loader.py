"""Rebuild the coordinator's state from ``__consumer_offsets`` records (Kafka's loadGroupsAndOffsets).

Records are replayed in log order; the last value per key wins and a tombstone deletes. Offsets
committed inside a transaction (transactional batches) apply when their COMMIT marker is read, unless
a plain commit was written after them, and are dropped on ABORT; offsets of a transaction still open at
the end of the log come back pending in their group (``pending_txn_offsets``), for the transaction
coordinator to complete. A group with
a GroupMetadata record comes back Stable (members, generation, leader, protocol, assignments) or Empty
if it had no members; a group with only offsets comes back as an Empty "simple" group. Loaded members
get a fresh session-timeout deadline, as Kafka's onGroupLoaded schedules their heartbeats.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

from kafkalite.coordinator.classic.group import Group, GroupState, Member, OffsetAndMetadata
from kafkalite.coordinator.classic.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    RecordDecodeError,
    decode_group_value,
    decode_key,
    decode_offset_value,
)

log = logging.getLogger("kafkalite.coordinator")


class StateLoader:
    """Kafka 3.9's ``GroupMetadataManager.doLoadGroupsAndOffsets``, record by record.

    A plain offset record (or tombstone) applies at once; one in a transactional batch waits in
    ``pending_txn[producer_id]`` (a tombstone there removes the pending entry). A COMMIT marker applies
    the producer's pending offsets where no newer record was loaded for the partition (``olderThan``:
    the batches' base offsets compared), an ABORT drops them. Group records apply at once either way.
    """

    def __init__(self) -> None:
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self.groups: dict[str, GroupValue | None] = {}
        self.records = 0
        # transactional offset commits waiting for their COMMIT/ABORT marker, per producer id
        self.pending_txn: dict[int, dict[tuple[str, str, int], OffsetAndMetadata]] = {}

    def feed_entries(self, entries: Iterable[tuple[str, int, bytes | None, object, int]]) -> None:
        """Entries from ``records.iter_entries``: transactional records apply only once committed."""
        for kind, pid, key, value, base_offset in entries:
            if kind == "marker":
                pending = self.pending_txn.pop(pid, {})
                if value:
                    for (gid, topic, part), om in pending.items():
                        per_group = self.offsets.setdefault(gid, {})
                        cur = per_group.get((topic, part))
                        if cur is None or cur.record_offset < om.record_offset:
                            per_group[(topic, part)] = om
            else:
                self._one(key, value, base_offset, pid)  # type: ignore[arg-type]

    def feed(self, records: Iterable[tuple[bytes | None, bytes | None]], base_offset: int = -1) -> None:
        """Plain (non-transactional) records, e.g. of one batch at ``base_offset``."""
        for key, value in records:
            self._one(key, value, base_offset, -1)

    def _one(self, key: bytes | None, value: bytes | None, base_offset: int, pid: int) -> None:
        if key is None:
            return
        self.records += 1
        try:
            k = decode_key(key)
            if isinstance(k, OffsetKey):
                if pid >= 0:
                    pending = self.pending_txn.setdefault(pid, {})
                    if value is None:
                        pending.pop((k.group, k.topic, k.partition), None)
                    else:
                        om = decode_offset_value(value)
                        om.record_offset = base_offset
                        pending[(k.group, k.topic, k.partition)] = om
                    return
                per_group = self.offsets.setdefault(k.group, {})
                if value is None:
                    per_group.pop((k.topic, k.partition), None)
                else:
                    om = decode_offset_value(value)
                    om.record_offset = base_offset
                    per_group[(k.topic, k.partition)] = om
            elif isinstance(k, GroupKey):
                self.groups[k.group] = None if value is None else decode_group_value(value)
        except (RecordDecodeError, UnicodeDecodeError) as exc:
            log.warning("skipping undecodable __consumer_offsets record: %s", exc)

    def build(self, now_ms: int) -> dict[str, Group]:
        out: dict[str, Group] = {}
        for gid, value in self.groups.items():
            if value is None:
                continue
            out[gid] = group_from_value(gid, value, now_ms)
        for gid, offs in self.offsets.items():
            if not offs:
                continue
            g = out.get(gid)
            if g is None:
                g = out[gid] = Group(gid, now_ms)
            g.offsets.update(offs)
        for pid, pending in self.pending_txn.items():
            for (gid, topic, part), om in pending.items():
                g = out.get(gid)
                if g is None:
                    g = out[gid] = Group(gid, now_ms)
                g.pending_txn_offsets.setdefault(pid, {})[(topic, part)] = om
        return out


def group_from_value(group_id: str, v: GroupValue, now_ms: int) -> Group:
    g = Group(group_id, v.current_state_timestamp if v.current_state_timestamp >= 0 else now_ms)
    g.generation_id = v.generation
    g.protocol_type = v.protocol_type or None
    g.protocol_name = v.protocol
    for m in v.members:
        member = Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout,
                        m.session_timeout, v.protocol_type, [(v.protocol or "", m.subscription)],
                        assignment=m.assignment)
        member.heartbeat_deadline = now_ms + m.session_timeout
        g.add(member, None)
    g.protocol_type = v.protocol_type or None  # add() may have set it from the first member
    g.leader_id = v.leader if v.leader in g.members else next(iter(g.members), None)
    if g.members:
        g.state = GroupState.STABLE
        g.subscribed_topics = g._compute_subscribed_topics()
    else:
        g.state = GroupState.EMPTY
        g.subscribed_topics = set() if g.protocol_type == "consumer" else None
    return g
