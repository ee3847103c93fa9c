"""Consumer groups and their members (Kafka's ConsumerGroup / ConsumerGroupMember, KIP-848).

Group states, as ``ConsumerGroup.ConsumerGroupState`` names them (ListGroups / ConsumerGroupDescribe):
Empty (no members), Assigning (group epoch ahead of the target assignment epoch), Reconciling (some member not
yet at the target epoch or not stable), Stable.

Member states (``MemberState``, stored as int8 in CurrentMemberAssignment records): STABLE (0),
UNREVOKED_PARTITIONS (1: waiting for the member to revoke partitions), UNRELEASED_PARTITIONS (2: at the target
epoch, waiting for partitions other members still own), UNKNOWN (127).
"""
from __future__ import annotations

import uuid
from base64 import urlsafe_b64encode
from dataclasses import dataclass, field
from enum import IntEnum

Assignment = dict[uuid.UUID, set[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class HeartbeatError(Exception):
    """A request refused with a Kafka error code (and message): raised inside the coordinator, answered by it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def new_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): url-safe base64 of 16 random bytes, no padding."""
    return urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass
class ClassicMeta:
    """A member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside a consumer group: Kafka's
    ClassicMemberMetadata (its session timeout and the JoinGroup protocols it supports)."""
    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]

    def key(self) -> tuple[object, ...]:
        return (self.session_timeout_ms, tuple((n, bytes(m)) for n, m in self.protocols))


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = ""   # Kafka's member builder default: "" until a regex is sent
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMeta | None = None     # None: the member speaks ConsumerGroupHeartbeat
    #: KIP-1251 (Kafka 4.3): the member epoch at which it was given each partition it holds (assigned or pending
    #: revocation); a commit with an older member epoch is accepted for a partition held since that epoch or before
    epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    # timers (not persisted)
    session_deadline: int | None = None
    rebalance_deadline: int | None = None
    join_deadline: int | None = None       # a classic member told to rejoin must do so within its rebalance timeout
    sync_deadline: int | None = None       # ... and send SyncGroup after its JoinGroup within it too

    def metadata_key(self) -> tuple[object, ...]:
        """What a ConsumerGroupMemberMetadata record holds (a change means a new record)."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                tuple(self.subscribed_topic_names), self.subscribed_topic_regex, self.rebalance_timeout_ms,
                self.server_assignor, self.classic.key() if self.classic is not None else None)

    def assignment_key(self) -> tuple[object, ...]:
        """What a ConsumerGroupCurrentMemberAssignment record holds."""
        return (self.member_epoch, self.previous_member_epoch, int(self.state), _frozen(self.assigned),
                _frozen(self.pending_revocation), frozenset(self.epochs.items()))

    def held_since(self, t: uuid.UUID, p: int) -> int | None:
        """The assignment epoch of a partition the member holds (assigned or pending revocation), else None."""
        if p in self.assigned.get(t, ()) or p in self.pending_revocation.get(t, ()):
            return self.epochs.get((t, p), self.member_epoch)
        return None


def _frozen(a: Assignment) -> frozenset[tuple[uuid.UUID, frozenset[int]]]:
    return frozenset((t, frozenset(ps)) for t, ps in a.items() if ps)


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # subscribed topic metadata the target was computed from: topic name -> (topic id, partitions)
    topics: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    # regex -> topic names it resolved to
    resolved: dict[str, set[str]] = field(default_factory=dict)
    metadata_checked_ms: int = 0

    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE:
                return "Reconciling"
        return "Stable"

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def partition_owner_epochs(self) -> dict[tuple[uuid.UUID, int], tuple[str, int]]:
        """(topic id, partition) -> (member id, member epoch) for every partition a member holds, assigned or
        pending revocation (Kafka's currentPartitionEpoch)."""
        out: dict[tuple[uuid.UUID, int], tuple[str, int]] = {}
        for m in self.members.values():
            for a in (m.assigned, m.pending_revocation):
                for t, ps in a.items():
                    for p in ps:
                        out[(t, p)] = (m.member_id, m.member_epoch)
        return out

    def subscribed_names(self) -> set[str]:
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:   # "" is no regex
                names.update(self.resolved.get(m.subscribed_topic_regex, ()))
        return names

    def member_topic_ids(self, m: ConsumerMember) -> set[uuid.UUID]:
        names = set(m.subscribed_topic_names)
        if m.subscribed_topic_regex:   # "" is no regex
            names |= self.resolved.get(m.subscribed_topic_regex, set())
        return {self.topics[n][0] for n in names if n in self.topics}
