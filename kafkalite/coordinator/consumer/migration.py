"""Online conversion between a classic group and a consumer group (KIP-848 upgrade / downgrade, Kafka 4.0).

``group.consumer.migration.policy`` (bidirectional -- Kafka 4.0's default --, upgrade, downgrade, disabled)
decides which way a live group may convert. An *empty* group always converts (its committed offsets stay;
``ConsumerGroupCoordinator.remove_empty`` and the classic JoinGroup path). A *non-empty* one, as Kafka's
GroupMetadataManager does it:

* **Upgrade** (``_upgrade``): a ConsumerGroupHeartbeat with epoch 0 names a non-empty classic group. Allowed when
  the policy enables upgrades, the group's protocol type is ``consumer`` (ClassicGroup.usesConsumerGroupProtocol)
  and its size is within ``group.consumer.max.size``; otherwise GROUP_ID_NOT_FOUND ("Group X is not a consumer
  group"). ConsumerGroup.fromClassicGroup: group epoch = target assignment epoch = the classic generation; every
  member becomes a classic-protocol member (``classic.py``) at that epoch, STABLE, with the partitions of its
  last classic assignment as both its current and target assignment, its subscription and rack from its
  ConsumerProtocolSubscription. Parked JoinGroup / SyncGroup requests are answered REBALANCE_IN_PROGRESS (the
  rebalance in progress is abandoned; the members rejoin the consumer group). Records, in one batch: the classic
  GroupMetadata tombstone, then the consumer group's (member metadata, group epoch, target assignment, target
  epoch, current assignments). The joining member then bumps the group epoch, so the classic members' next
  Heartbeat says REBALANCE_IN_PROGRESS and their JoinGroup reconciles them to the new target.
* **Downgrade** (``_maybe_downgrade``): the last member using the consumer protocol leaves (epoch -1) or is
  fenced (session or rebalance timeout) while only classic-protocol members remain. Allowed when the policy
  enables downgrades and the remaining members fit ``group.max.size``; otherwise the member is just removed.
  ClassicGroup.fromConsumerGroup: a Stable classic group at generation = the group epoch, the remaining members
  with their JoinGroup protocols, each member's target assignment serialized as its ConsumerProtocolAssignment;
  records: the consumer group's tombstones and the classic GroupMetadata; then a rebalance is prepared, so the
  members rejoin as a classic group. Also when a classic static member's JoinGroup replaces the last
  consumer-protocol member (validateOnlineDowngradeWithReplacedMemberId): it takes over that member's target
  assignment and the classic group starts Stable, without a rebalance.

Committed offsets are the group's whatever its type (kafkalite keeps them with the classic coordinator, see
``service.py``), so they carry over both ways untouched.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkalite.coordinator.classic.group import Group, GroupState, JoinResult, Member, SyncResult
from kafkalite.coordinator.classic.records import (
    GroupValue,
    MemberRecord,
    encode_group_key,
    encode_group_value,
)
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.consumer import records as R
from kafkalite.coordinator.consumer.classic_members import (
    PROTOCOL_TYPE,
    ProtocolError,
    encode_assignment,
    ids_to_names,
    metadata_version,
    names_to_ids,
    parse_assignment,
    parse_subscription,
)
from kafkalite.coordinator.consumer.model import (
    ClassicMeta,
    ConsumerGroup,
    ConsumerMember,
    HeartbeatError,
    MemberState,
)

log = logging.getLogger("kafkalite.coordinator.consumer")

POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")

#: broker settings read here that Kafka 3.9 kept internal (public, default bidirectional, from Kafka 4.0)
KAFKA_4_BROKER_CONFIGS = frozenset({"group.consumer.migration.policy"})


def upgrade_enabled(policy: str) -> bool:
    return policy.lower() in ("bidirectional", "upgrade")


def downgrade_enabled(policy: str) -> bool:
    return policy.lower() in ("bidirectional", "downgrade")


@dataclass
class ClassicMemberInfo:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""                                  # upgrade: its last classic assignment
    target: dict[str, set[int]] = field(default_factory=dict)   # downgrade: its target partitions by topic name


@dataclass
class ClassicSnapshot:
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    members: list[ClassicMemberInfo]


class ClassicSide(Protocol):
    """What the consumer coordinator needs of the classic one (``ClassicBridge`` below)."""

    max_size: int

    def snapshot(self, group_id: str) -> ClassicSnapshot | None: ...
    def tombstones(self, group_id: str) -> list[tuple[bytes, bytes | None]]: ...
    def detach(self, group_id: str, now: int) -> None: ...
    def attach(self, group_id: str, now: int, generation: int,
               members: list[ClassicMemberInfo]) -> list[tuple[bytes, bytes | None]]: ...
    def rebalance(self, group_id: str, now: int) -> None: ...


class MigrationMixin:
    """The conversion half of :class:`ConsumerGroupCoordinator`."""

    groups: dict[str, ConsumerGroup]
    config: Any
    classic_side: ClassicSide | None
    _topics: Any
    _group_filters: dict[str, Any]
    _post: list[Callable[[], None]]

    def _refresh_metadata(self, group: ConsumerGroup, now: int, force: bool = False) -> bool: ...

    def _upgrade(self, now: int, group_id: str, out: list[tuple[bytes, bytes | None]]) -> ConsumerGroup:
        """validateOnlineUpgrade + convertToConsumerGroup, without touching the classic group yet: the caller
        detaches it once the joining member was accepted."""
        side = self.classic_side
        snap = side.snapshot(group_id) if side is not None else None
        refuse = f"Group {group_id} is not a consumer group."
        if snap is None or side is None:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, refuse)
        if not upgrade_enabled(self.config.migration_policy):
            log.info("cannot upgrade classic group %s to a consumer group: the online upgrade is disabled",
                     group_id)
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, refuse)
        if snap.protocol_type != PROTOCOL_TYPE:
            log.info("cannot upgrade classic group %s: it does not use the consumer embedded protocol", group_id)
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, refuse)
        if len(snap.members) > self.config.max_size:
            log.info("cannot upgrade classic group %s: its size exceeds group.consumer.max.size", group_id)
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, refuse)
        topics = self._topics()
        group = ConsumerGroup(group_id, group_epoch=snap.generation, assignment_epoch=snap.generation)
        try:
            for c in snap.members:
                meta = dict(c.protocols).get(snap.protocol_name or "", c.protocols[0][1] if c.protocols else b"")
                sub = parse_subscription(meta)
                assigned = names_to_ids(parse_assignment(c.assignment), topics)
                group.members[c.member_id] = ConsumerMember(
                    c.member_id, instance_id=c.instance_id, rack_id=sub.rack_id or None, client_id=c.client_id,
                    client_host=c.client_host, subscribed_topic_names=list(sub.topics),
                    rebalance_timeout_ms=c.rebalance_timeout_ms, member_epoch=snap.generation,
                    previous_member_epoch=snap.generation, state=MemberState.STABLE, assigned=assigned,
                    classic=ClassicMeta(c.session_timeout_ms, list(c.protocols)),
                    epochs={(t, p): snap.generation for t, ps in assigned.items() for p in ps},
                    session_deadline=now + c.session_timeout_ms)
                group.target[c.member_id] = {t: set(ps) for t, ps in assigned.items()}
        except ProtocolError as exc:
            log.warning("cannot upgrade classic group %s: the embedded consumer protocol is malformed: %s",
                        group_id, exc)
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {group_id} to consumer "
                                                       f"group because the embedded consumer protocol is "
                                                       f"malformed.") from None
        self._refresh_metadata(group, now, force=True)
        out.extend(side.tombstones(group_id))
        for m in group.members.values():
            out.append((R.encode_key(R.MEMBER_METADATA, group_id, m.member_id), R.member_metadata_value(m)))
        out.append((R.encode_key(R.PARTITION_METADATA, group_id), R.partition_metadata_value(group.topics)))
        out.append((R.encode_key(R.GROUP_METADATA, group_id), R.group_metadata_value(group.group_epoch)))
        for mid, a in group.target.items():
            out.append((R.encode_key(R.TARGET_MEMBER, group_id, mid), R.target_member_value(a)))
        out.append((R.encode_key(R.TARGET_METADATA, group_id), R.target_metadata_value(group.assignment_epoch, now)))
        for m in group.members.values():
            out.append((R.encode_key(R.CURRENT_ASSIGNMENT, group_id, m.member_id), R.current_assignment_value(m)))
        log.info("classic group %s (generation %d, %d members) converts to a consumer group", group_id,
                 snap.generation, len(snap.members))
        return group

    def _maybe_downgrade(self, now: int, group: ConsumerGroup, leaving: ConsumerMember | None,
                         out: list[tuple[bytes, bytes | None]]) -> bool:
        """validateOnlineDowngradeWithFencedMember + convertToClassicGroup; True when the group was converted
        (``leaving`` is not part of the classic group; the rebalance is prepared after the write). ``leaving``
        None: validateOnlineDowngradeWithReplacedMemberId -- a classic static member just replaced the last
        consumer-protocol member (it took over its assignment; no rebalance)."""
        side = self.classic_side
        others = [m for m in group.members.values() if m is not leaving]
        if side is None or (leaving is not None and leaving.classic is not None) or not others or any(
                m.classic is None for m in others):
            return False
        gid = group.group_id
        if not downgrade_enabled(self.config.migration_policy):
            log.info("cannot downgrade consumer group %s to a classic group: the online downgrade is disabled", gid)
            return False
        if len(others) > side.max_size:
            log.info("cannot downgrade consumer group %s: its size is greater than group.max.size", gid)
            return False
        for m in group.members.values():
            out.append((R.encode_key(R.CURRENT_ASSIGNMENT, gid, m.member_id), None))
        for m in group.members.values():
            out.append((R.encode_key(R.TARGET_MEMBER, gid, m.member_id), None))
        out.append((R.encode_key(R.TARGET_METADATA, gid), None))
        for m in group.members.values():
            out.append((R.encode_key(R.MEMBER_METADATA, gid, m.member_id), None))
        out.append((R.encode_key(R.PARTITION_METADATA, gid), None))
        out.append((R.encode_key(R.GROUP_METADATA, gid), None))
        topics = self._topics()
        infos = [ClassicMemberInfo(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                   m.classic.session_timeout_ms, list(m.classic.protocols),  # type: ignore[union-attr]
                                   target=ids_to_names(group.target.get(m.member_id, {}), topics))
                 for m in others]
        out.extend(side.attach(gid, now, group.group_epoch, infos))
        del self.groups[gid]
        self._group_filters.pop(gid, None)
        log.info("consumer group %s downgrades to a classic group (epoch %d, %d members): its last consumer-"
                 "protocol member %s left", gid, group.group_epoch, len(others),
                 leaving.member_id if leaving is not None else "was replaced by a classic static member")
        if leaving is not None:
            self._post.append(lambda: side.rebalance(gid, now))
        return True

    def _run_post(self) -> None:
        todo, self._post[:] = list(self._post), []
        for fn in todo:
            fn()


class ClassicBridge:
    """:class:`ClassicSide` over kafkalite's classic :class:`~kafkalite.coordinator.classic.coordinator.GroupCoordinator`
    (pure: both coordinators are in memory, time passed in)."""

    def __init__(self, classic: Any) -> None:
        self.classic = classic

    @property
    def max_size(self) -> int:
        return int(self.classic.config.group_max_size)

    def snapshot(self, group_id: str) -> ClassicSnapshot | None:
        g = self.classic.groups.get(group_id)
        if g is None or not g.members:
            return None
        return ClassicSnapshot(g.generation_id, g.protocol_type, g.protocol_name, [
            ClassicMemberInfo(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                              m.session_timeout_ms, list(m.protocols), bytes(m.assignment))
            for m in g.members.values()])

    def tombstones(self, group_id: str) -> list[tuple[bytes, bytes | None]]:
        return [(encode_group_key(group_id), None)]

    def detach(self, group_id: str, now: int) -> None:
        """The classic group gives up its members (their parked JoinGroup / SyncGroup answered
        REBALANCE_IN_PROGRESS) and stays an Empty shell holding the group's committed offsets."""
        g = self.classic.groups.get(group_id)
        if g is None:
            return
        for m in list(g.members.values()):
            if m.join_pending is not None:
                p, m.join_pending = m.join_pending, None
                p.set(JoinResult(E.REBALANCE_IN_PROGRESS, m.member_id))
            if m.sync_pending is not None:
                p2, m.sync_pending = m.sync_pending, None
                p2.set(SyncResult(E.REBALANCE_IN_PROGRESS))
        g.reset_to_empty(now)

    def attach(self, group_id: str, now: int, generation: int,
               members: list[ClassicMemberInfo]) -> list[tuple[bytes, bytes | None]]:
        """ClassicGroup.fromConsumerGroup: a Stable classic group (the Empty shell holding the offsets, or a new
        one); returns its GroupMetadata record."""

        g = self.classic.groups.get(group_id)
        if g is None:
            g = self.classic.groups[group_id] = Group(group_id, now)
        g.generation_id = generation
        g.protocol_type = PROTOCOL_TYPE
        for c in members:
            m = Member(c.member_id, c.instance_id, c.client_id, c.client_host, c.rebalance_timeout_ms,
                       c.session_timeout_ms, PROTOCOL_TYPE, list(c.protocols))
            g.add(m, None)
            m.heartbeat_deadline = now + c.session_timeout_ms
        g.protocol_name = g.select_protocol()
        g.subscribed_topics = g._compute_subscribed_topics()
        for c in members:
            m = g.members[c.member_id]
            meta = m.metadata(g.protocol_name) if g.protocol_name else b""
            m.assignment = encode_assignment(metadata_version(meta), c.target)
        g.state = GroupState.STABLE   # a conversion, not a protocol transition (as Kafka builds it Stable)
        g.state_timestamp = now
        value = GroupValue(protocol_type=PROTOCOL_TYPE, generation=generation, protocol=g.protocol_name,
                           leader=g.leader_id, current_state_timestamp=now,
                           members=[MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                                 m.rebalance_timeout_ms, m.session_timeout_ms,
                                                 m.metadata(g.protocol_name) if g.protocol_name else b"",
                                                 m.assignment) for m in g.members.values()])
        return [(encode_group_key(group_id), encode_group_value(value))]

    def rebalance(self, group_id: str, now: int) -> None:
        g = self.classic.groups.get(group_id)
        if g is not None and g.members:
            self.classic._maybe_prepare_rebalance(g, now, f"Downgrade group {group_id} from consumer to classic.")
