"""One classic consumer group: members, generation, protocol vote, committed offsets.

Pure data plus the small invariants Kafka's ``GroupMetadata`` keeps; the protocol rules that move a
group between states live in ``coordinator.py``. No trio, no I/O, no clocks: times are passed in.

States and the transitions Kafka allows::

    Empty               -> PreparingRebalance (a member joins) | Dead (deleted / offsets expired)
    PreparingRebalance  -> CompletingRebalance (join completed) | Empty (everyone left) | Dead
    CompletingRebalance -> Stable (leader's SyncGroup stored) | PreparingRebalance | Dead
    Stable              -> PreparingRebalance | Dead
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, tuple[GroupState, ...]] = {
    GroupState.EMPTY: (GroupState.PREPARING_REBALANCE,),
    GroupState.PREPARING_REBALANCE: (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY),
    GroupState.COMPLETING_REBALANCE: (GroupState.PREPARING_REBALANCE,),
    GroupState.STABLE: (GroupState.COMPLETING_REBALANCE,),
    GroupState.DEAD: (GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                      GroupState.EMPTY, GroupState.DEAD),
}

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""A new member's JoinGroup waits at most this long (Kafka's NewMemberJoinTimeoutMs)."""


class Pending(Generic[T]):
    """A response that a later state transition completes (JoinGroup / SyncGroup long polls).

    Sans-I/O: the trio glue registers a callback that sets a ``trio.Event``.
    """

    __slots__ = ("_callbacks", "result")

    def __init__(self) -> None:
        self.result: T | None = None
        self._callbacks: list[Callable[[T], None]] = []

    @property
    def done(self) -> bool:
        return self.result is not None

    def set(self, result: T) -> bool:
        if self.result is not None:
            return False
        self.result = result
        for cb in self._callbacks:
            cb(result)
        self._callbacks.clear()
        return True

    def add_done_callback(self, cb: Callable[[T], None]) -> None:
        if self.result is not None:
            cb(self.result)
        else:
            self._callbacks.append(cb)

    @classmethod
    def completed(cls, result: T) -> Pending[T]:
        p: Pending[T] = cls()
        p.set(result)
        return p


@dataclass(slots=True)
class JoinResult:
    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # (member_id, instance, meta)


@dataclass(slots=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int | None = None
    # base offset in ``__consumer_offsets`` of the batch holding this commit (-1: not written / unknown);
    # Kafka's CommitRecordMetadataAndOffset.appendedBatchOffset, which orders transactional and plain commits
    record_offset: int = field(default=-1, compare=False, repr=False)


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_pending: Pending[JoinResult] | None = None
    sync_pending: Pending[SyncResult] | None = None
    is_new: bool = False
    heartbeat_deadline: int | None = None  # member is removed when now >= this

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_pending is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_pending is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        """The member's protocol names, each once, in its order of preference.

        A JoinGroup may name a protocol twice (``[range, range]``); Kafka's request collection keeps both
        entries. Counting each entry would let one member count twice towards "supported by every member"
        and leave a group with no candidate protocol once the others leave, so the group's tally counts a
        name once per member; the member's metadata for a name is its first entry's, as in Kafka."""
        return list(dict.fromkeys(name for name, _ in self.protocols))

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str | None:
        """The member's most preferred candidate protocol (None if it supports none of them)."""
        for name in self.protocol_names():
            if name in candidates:
                return name
        return None


class Group:
    """State of one group. Mutated only by the coordinator."""

    def __init__(self, group_id: str, now_ms: int, state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}          # insertion-ordered, like Kafka's LinkedHashMap
        self.static_members: dict[str, str] = {}      # group.instance.id -> member id
        self.pending_members: dict[str, int] = {}     # member id (MEMBER_ID_REQUIRED) -> expiry deadline
        self.pending_sync: set[str] = set()
        self.supported_protocols: dict[str, int] = {}
        self.new_member_added = False
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        # producer id -> {(topic, partition): offset} for transactional commits not yet completed
        self.pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self.subscribed_topics: set[str] | None = None
        # timers (absolute ms), driven by GroupCoordinator.poll
        self.join_deadline: int | None = None
        self.join_initial_remaining_ms = 0            # InitialDelayedJoin's remaining budget
        self.join_is_initial = False
        self.sync_deadline: int | None = None

    # -- state ---------------------------------------------------------------------------------
    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: illegal transition {self.state} -> {state}")
        self.state = state
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    # -- membership ----------------------------------------------------------------------------
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def add(self, member: Member, join_pending: Pending[JoinResult] | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        member.join_pending = join_pending
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        for name in member.protocol_names():
            self.supported_protocols[name] -= 1
            if self.supported_protocols[name] <= 0:
                del self.supported_protocols[name]
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(self, member: Member, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, join_pending: Pending[JoinResult] | None) -> None:
        for name in member.protocol_names():
            self.supported_protocols[name] -= 1
            if self.supported_protocols[name] <= 0:
                del self.supported_protocols[name]
        member.protocols = list(protocols)
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if join_pending is not None:
            member.join_pending = join_pending

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        # the old incarnation's outstanding requests are fenced
        if member.join_pending is not None:
            member.join_pending.set(JoinResult(error=82, member_id=old_id))  # FENCED_INSTANCE_ID
            member.join_pending = None
        if member.sync_pending is not None:
            member.sync_pending.set(SyncResult(error=82))
            member.sync_pending = None
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def current_static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for mid, m in self.members.items():
            if m.is_awaiting_join:
                self.leader_id = mid
                return True
        return False

    # -- protocols -----------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        """Kafka's ``supportsProtocols`` (classic groups), checked at JoinGroup time so that an incompatible
        member is refused with INCONSISTENT_GROUP_PROTOCOL instead of breaking the next protocol selection:
        an Empty group accepts any non-empty protocol type and set; otherwise the type must be the group's
        and one of the names must be a current candidate (supported by every member)."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(p, 0) == len(self.members) for p in protocols
        )

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, c in self.supported_protocols.items() if c == n}

    def select_protocol(self) -> str | None:
        """Kafka's vote: each member votes for its most preferred protocol all members support; the most
        votes win. None when no protocol is supported by every member (the join-time check keeps that from
        happening; the coordinator then resets the group rather than raise out of a timer)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            if choice is not None:
                votes[choice] = votes.get(choice, 0) + 1
        if not votes:
            return None
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def reset_to_empty(self, now_ms: int) -> list[Member]:
        """Drop every member and go to Empty at the next generation, keeping committed offsets (the safe
        state a group is put in after an unexpected failure). Returns the removed members so the caller can
        answer their parked requests."""
        removed = list(self.members.values())
        self.members.clear()
        self.static_members.clear()
        self.pending_members.clear()
        self.pending_sync.clear()
        self.supported_protocols.clear()
        self.leader_id = None
        self.protocol_name = None
        self.new_member_added = False
        self.join_deadline = None
        self.join_is_initial = False
        self.join_initial_remaining_ms = 0
        self.sync_deadline = None
        self.subscribed_topics = set() if self.protocol_type == "consumer" else None
        if self.state is not GroupState.DEAD:
            self.generation_id += 1
            self.state = GroupState.EMPTY   # from any state: this is a recovery, not a protocol transition
            self.state_timestamp = now_ms
        return removed

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        assert self.protocol_name is not None
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    def init_next_generation(self, now_ms: int) -> None:
        """Callers make sure a non-empty group has a common protocol (``select_protocol()`` is not None)."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self._compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)

    def _compute_subscribed_topics(self) -> set[str] | None:
        """Topics of a "consumer" group, parsed from the members' subscriptions (None if unknown)."""
        if self.protocol_type != "consumer":
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_consumer_subscription_topics(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        return self.subscribed_topics is not None and topic in self.subscribed_topics

    # -- descriptions --------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        stable = self.state is GroupState.STABLE
        members = []
        for m in self.members.values():
            members.append({
                "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                "client_host": m.client_host,
                "metadata": m.metadata(self.protocol_name) if stable and self.protocol_name else b"",
                "assignment": m.assignment if stable else b"",
            })
        return {
            "state": self.state.value, "protocol_type": self.protocol_type or "",
            "protocol": (self.protocol_name or "") if stable else "", "members": members,
        }


def parse_consumer_subscription_topics(data: bytes) -> list[str] | None:
    """Topics in a ConsumerProtocolSubscription (any version): int16 version, [string] topics, ..."""
    try:
        buf = bytes(data)
        if len(buf) < 6:
            return None
        n = int.from_bytes(buf[2:6], "big", signed=True)
        pos = 6
        out = []
        for _ in range(max(n, 0)):
            ln = int.from_bytes(buf[pos:pos + 2], "big", signed=True)
            pos += 2
            if ln < 0 or pos + ln > len(buf):
                return None
            out.append(buf[pos:pos + ln].decode("utf-8"))
            pos += ln
        return out
    except (UnicodeDecodeError, ValueError, TypeError):   # not a subscription a client could have meant
        return None
