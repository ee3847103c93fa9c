"""Classic-protocol members of a consumer group (Kafka 4.0's GroupMetadataManager.classicGroup*ToConsumerGroup).

After a classic group converted to a consumer group online (``migration.py``), its remaining members keep
speaking JoinGroup / SyncGroup / Heartbeat / LeaveGroup; the consumer group serves them with the server-side
assignor, as Kafka does:

* JoinGroup (``classic_join``): the member's ConsumerProtocolSubscription (the first protocol's metadata) gives its
  topics, rack and owned partitions; the member is created or updated like a heartbeating member (group epoch
  bumped when its subscription changed, a new target assignment, one reconciliation step with its owned
  partitions) and answered at once: generation = its member epoch, protocol type ``consumer``, protocol name =
  its first protocol, no leader (so it sends SyncGroup without assignments). A v4+ dynamic member without a
  member id gets MEMBER_ID_REQUIRED first. Refused: INCONSISTENT_GROUP_PROTOCOL when the protocol type is not
  ``consumer`` or none of its protocols is supported by every classic member; GROUP_MAX_SIZE_REACHED.
* SyncGroup (``classic_sync``): UNKNOWN_MEMBER_ID for an unknown member or one using the consumer protocol,
  ILLEGAL_GENERATION when the generation is not its member epoch, INCONSISTENT_GROUP_PROTOCOL when the type or
  name differ, REBALANCE_IN_PROGRESS when the group epoch moved past it (unless it is still revoking); else its
  assigned partitions as a ConsumerProtocolAssignment, in the version of its subscription metadata.
* Heartbeat (``classic_heartbeat``): REBALANCE_IN_PROGRESS when the member must rejoin -- its epoch is behind the
  group's, it must revoke partitions, or partitions it waited for were released -- and then it must rejoin within
  its rebalance timeout (a JoinGroup timer, like the SyncGroup timer after a join) or it is fenced.
* LeaveGroup (``classic_leave``): the member is removed and the group epoch bumped.

Session timeouts of these members are their JoinGroup session timeouts. Offsets they commit are validated with
their generation (ILLEGAL_GENERATION on a mismatch, any OffsetCommit version).
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafkalite.coordinator.classic.group import JoinResult, SyncResult
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.consumer import records as R
from kafkalite.coordinator.consumer.model import (
    Assignment,
    ClassicMeta,
    ConsumerGroup,
    ConsumerMember,
    HeartbeatError,
    MemberState,
    new_member_id,
)
from kafkalite.coordinator.consumer.reconcile import reconcile
from kafkalite_wire.primitives import Reader, Writer

log = logging.getLogger("kafkalite.coordinator.consumer")

PROTOCOL_TYPE = "consumer"
ILLEGAL_GENERATION = 22


class ProtocolError(ValueError):
    """Embedded consumer protocol bytes that do not parse (Kafka's SchemaException)."""


class Subscription:
    __slots__ = ("owned", "rack_id", "topics", "version")

    def __init__(self, version: int, topics: list[str], owned: dict[str, set[int]] | None,
                 rack_id: str | None) -> None:
        self.version, self.topics, self.owned, self.rack_id = version, topics, owned, rack_id


def parse_subscription(data: bytes) -> Subscription:
    """ConsumerProtocolSubscription v0-v3 (a newer version is read as v3, as Kafka's parser does): Topics,
    UserData, OwnedPartitions (v1+), GenerationId (v2+), RackId (v3+). ``owned`` is None before v1."""
    try:
        r = Reader(bytes(data))
        version = r.int16()
        topics = [r.string() for _ in range(max(r.int32(), 0))]
        n = r.int32()
        if n > 0:
            r.raw(n)
        owned: dict[str, set[int]] | None = None
        rack: str | None = None
        if version >= 1:
            owned = {}
            for _ in range(max(r.int32(), 0)):
                t = r.string()
                owned.setdefault(t, set()).update(r.int32() for _ in range(max(r.int32(), 0)))
        if version >= 2:
            r.int32()
        if version >= 3:
            rack = r.nullable_string()
        return Subscription(version, topics, owned, rack)
    except Exception as exc:   # any truncation or bad length in the client's bytes
        raise ProtocolError(f"malformed ConsumerProtocolSubscription: {exc}") from None


def parse_assignment(data: bytes) -> dict[str, set[int]]:
    """ConsumerProtocolAssignment (any version): AssignedPartitions[Topic, Partitions], UserData."""
    if not data:
        return {}
    try:
        r = Reader(bytes(data))
        r.int16()
        out: dict[str, set[int]] = {}
        for _ in range(max(r.int32(), 0)):
            t = r.string()
            out.setdefault(t, set()).update(r.int32() for _ in range(max(r.int32(), 0)))
        return out
    except Exception as exc:
        raise ProtocolError(f"malformed ConsumerProtocolAssignment: {exc}") from None


def encode_assignment(version: int, parts: Mapping[str, set[int]]) -> bytes:
    """ConsumerProtocolAssignment in ``version`` (0-3 share one layout), no user data."""
    w = Writer()
    w.int16(max(0, min(version, 3)))
    items = [(t, sorted(ps)) for t, ps in sorted(parts.items()) if ps]
    w.int32(len(items))
    for t, ps in items:
        w.string(t)
        w.int32(len(ps))
        for p in ps:
            w.int32(p)
    w.int32(-1)
    return w.getvalue()


def metadata_version(meta: bytes) -> int:
    return int.from_bytes(bytes(meta[:2]), "big", signed=True) if len(meta) >= 2 else 0


def names_to_ids(parts: Mapping[str, set[int]], topics: Mapping[str, Any]) -> Assignment:
    out: Assignment = {}
    for name, ps in parts.items():
        info = topics.get(name)
        if info is not None and ps:
            out.setdefault(info.topic_id, set()).update(p for p in ps if 0 <= p < info.partitions)
    return out


def ids_to_names(a: Assignment, topics: Mapping[str, Any]) -> dict[str, set[int]]:
    by_id = {info.topic_id: name for name, info in topics.items()}
    return {by_id[t]: set(ps) for t, ps in a.items() if ps and t in by_id}


class ClassicMembersMixin:
    """The JoinGroup/SyncGroup/Heartbeat/LeaveGroup side of :class:`ConsumerGroupCoordinator`."""

    groups: dict[str, ConsumerGroup]
    config: Any

    # provided by the coordinator
    def _write(self, group_id: str, out: list[tuple[bytes, bytes | None]]) -> None: ...
    def _bump(self, group: ConsumerGroup, out: list[tuple[bytes, bytes | None]]) -> None: ...
    def _refresh_metadata(self, group: ConsumerGroup, now: int, force: bool = False) -> bool: ...
    def _maybe_new_target(self, group: ConsumerGroup, now: int, out: list[tuple[bytes, bytes | None]]) -> None: ...
    def _remove(self, group: ConsumerGroup, member: ConsumerMember, out: list[tuple[bytes, bytes | None]],
                now: int = 0) -> None: ...
    def _member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id: str | None,
                owned: Assignment | None, out: list[tuple[bytes, bytes | None]]) -> ConsumerMember: ...
    _topics: Any
    _held_elsewhere: Any
    _replaced_consumer_member = False
    _maybe_downgrade: Any   # MigrationMixin's (a stub here would shadow it: this mixin comes first)

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember | int:
        """validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol: the member or an error code."""
        if instance_id is not None:
            member = group.static_member(instance_id)
            if member is None:
                return E.UNKNOWN_MEMBER_ID
            if member.member_id != member_id:
                return E.FENCED_INSTANCE_ID
        else:
            found = group.members.get(member_id)
            if found is None:
                return E.UNKNOWN_MEMBER_ID
            member = found
        return member if member.classic is not None else E.UNKNOWN_MEMBER_ID

    def classic_join(self, now: int, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                     client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                     protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinResult:
        group = self.groups[group_id]
        unknown = member_id == ""
        if unknown:
            member_id = new_member_id()
        if (len(group.members) >= self.config.max_size and member_id not in group.members
                and (instance_id is None or group.static_member(instance_id) is None)):
            return JoinResult(E.GROUP_MAX_SIZE_REACHED, member_id)
        names = {n for n, _ in protocols}
        classic = group.classic_members()
        if protocol_type != PROTOCOL_TYPE or not names or (classic and not any(
                sum(1 for m in classic if n in {x for x, _ in m.classic.protocols}) == len(classic)  # type: ignore
                for n in names)):
            return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, "" if unknown else member_id)
        if unknown and instance_id is None and require_known_member_id:
            return JoinResult(E.MEMBER_ID_REQUIRED, member_id)
        try:
            sub = parse_subscription(protocols[0][1])
        except ProtocolError as exc:
            log.info("consumer group %s: classic member %s: %s", group_id, member_id, exc)
            return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id)
        out: list[tuple[bytes, bytes | None]] = []
        self._replaced_consumer_member = False
        try:
            member = self._classic_get_member(group, member_id, instance_id, unknown, out)
        except _JoinRefused as e:
            return JoinResult(e.code, member_id)
        old_meta = member.metadata_key() if member.member_id in group.members else None
        old_assign = member.assignment_key() if member.member_id in group.members else None
        member.instance_id = instance_id if instance_id is not None else member.instance_id
        if sub.rack_id:
            member.rack_id = sub.rack_id
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        sub_changed = sorted(sub.topics) != sorted(member.subscribed_topic_names)
        member.subscribed_topic_names = list(sub.topics)
        member.client_id, member.client_host = client_id, client_host
        member.classic = ClassicMeta(session_timeout_ms, [(n, bytes(m)) for n, m in protocols])
        joined = member.member_id not in group.members
        group.members[member.member_id] = member
        bump = joined or sub_changed
        if self._refresh_metadata(group, now, force=bump):
            bump = True
        if bump:
            self._bump(group, out)
        self._maybe_new_target(group, now, out)
        topics = self._topics()
        owned = names_to_ids(sub.owned, topics) if sub.owned is not None else None
        reconcile(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                  group.member_topic_ids(member), self._held_elsewhere(group, member.member_id), owned, sub_changed)
        if member.metadata_key() != old_meta:
            out.append((R.encode_key(R.MEMBER_METADATA, group_id, member.member_id), R.member_metadata_value(member)))
        if member.assignment_key() != old_assign:
            out.append((R.encode_key(R.CURRENT_ASSIGNMENT, group_id, member.member_id),
                        R.current_assignment_value(member)))
        # the last consumer-protocol member replaced by this classic static member: back to a classic group
        downgraded = self._replaced_consumer_member and self._maybe_downgrade(now, group, None, out)
        try:
            self._write(group_id, out)
        except HeartbeatError as exc:   # the write failed: its code is the answer
            return JoinResult(exc.code, member.member_id)
        if downgraded:
            return JoinResult(E.NONE, member.member_id, generation_id=member.member_epoch,
                              protocol_type=PROTOCOL_TYPE, protocol_name=protocols[0][0], leader_id="")
        member.session_deadline = now + session_timeout_ms
        member.join_deadline = None
        member.sync_deadline = now + max(member.rebalance_timeout_ms, 0)
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            if member.rebalance_deadline is None:
                member.rebalance_deadline = now + max(member.rebalance_timeout_ms, 0)
        else:
            member.rebalance_deadline = None
        log.info("classic member %s joined consumer group %s at epoch %d", member.member_id, group_id,
                 member.member_epoch)
        return JoinResult(E.NONE, member.member_id, generation_id=member.member_epoch, protocol_type=PROTOCOL_TYPE,
                          protocol_name=protocols[0][0], leader_id="")

    def _classic_get_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None, unknown: bool,
                            out: list[tuple[bytes, bytes | None]]) -> ConsumerMember:
        if instance_id is None:
            m = group.members.get(member_id)
            if m is None:
                return ConsumerMember(member_id)
            if m.classic is None:
                raise _JoinRefused(E.UNKNOWN_MEMBER_ID)
            return m
        existing = group.static_member(instance_id)
        if existing is None:
            if not unknown and member_id in group.members:
                raise _JoinRefused(E.UNKNOWN_MEMBER_ID)
            return ConsumerMember(member_id, instance_id=instance_id)
        if existing.member_id == member_id:
            return existing
        if not unknown:
            raise _JoinRefused(E.FENCED_INSTANCE_ID)
        # a static member rejoining with a new member id replaces the old one and takes over its assignment
        self._replaced_consumer_member = existing.classic is None
        existing.member_epoch = -2
        return self._member(group, member_id, 0, instance_id, None, out)

    def classic_sync(self, now: int, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                     protocol_type: str | None, protocol_name: str | None) -> SyncResult:
        group = self.groups.get(group_id)
        if group is None or not group.members:
            return SyncResult(E.UNKNOWN_MEMBER_ID)
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, int):
            return SyncResult(member)
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return SyncResult(ILLEGAL_GENERATION)
        name = member.classic.protocols[0][0]
        if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != name):
            return SyncResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            if member.join_deadline is None:
                member.join_deadline = now + max(member.rebalance_timeout_ms, 0)
            return SyncResult(E.REBALANCE_IN_PROGRESS)
        member.sync_deadline = None
        member.session_deadline = now + member.classic.session_timeout_ms
        data = encode_assignment(metadata_version(member.classic.protocols[0][1]),
                                 ids_to_names(member.assigned, self._topics()))
        return SyncResult(E.NONE, data, protocol_type, protocol_name)

    def classic_heartbeat(self, now: int, group_id: str, member_id: str, instance_id: str | None,
                          generation_id: int) -> int:
        group = self.groups.get(group_id)
        if group is None or not group.members:
            return E.UNKNOWN_MEMBER_ID
        member = self._classic_member(group, member_id, instance_id)
        if isinstance(member, int):
            return member
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return ILLEGAL_GENERATION
        member.session_deadline = now + member.classic.session_timeout_ms
        if (member.member_epoch < group.group_epoch or member.state == MemberState.UNREVOKED_PARTITIONS
                or (member.state == MemberState.UNRELEASED_PARTITIONS and not _waiting(group, member))):
            if member.join_deadline is None:
                member.join_deadline = now + max(member.rebalance_timeout_ms, 0)
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def classic_leave(self, now: int, group_id: str,
                      members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID for _ in members]
        out: list[tuple[bytes, bytes | None]] = []
        codes: list[int] = []
        for member_id, instance_id in members:
            if instance_id is not None and member_id == "":   # administrative removal by instance id
                found = group.static_member(instance_id)
                member: ConsumerMember | int = E.UNKNOWN_MEMBER_ID if found is None else (
                    found if found.classic is not None else E.UNKNOWN_MEMBER_ID)
            else:
                member = self._classic_member(group, member_id, instance_id)
            if isinstance(member, int):
                codes.append(member)
                continue
            log.info("classic member %s left consumer group %s", member.member_id, group_id)
            self._remove(group, member, out, now)
            codes.append(E.NONE)
        try:
            self._write(group_id, out)
        except HeartbeatError as exc:
            return exc.code, []
        return E.NONE, codes


def _waiting(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """ConsumerGroup.waitingOnUnreleasedPartition: a target partition it lacks is still held by another."""
    owners = group.partition_owner_epochs()
    for t, ps in group.target.get(member.member_id, {}).items():
        have = member.assigned.get(t, set())
        for p in ps:
            o = owners.get((t, p))
            if p not in have and o is not None and o[0] != member.member_id:
                return True
    return False


class _JoinRefused(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
