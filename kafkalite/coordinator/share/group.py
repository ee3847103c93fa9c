"""Share group membership (KIP-932's ShareGroupHeartbeat), pure: time comes in as ``now`` (ms).

As Kafka's ``GroupMetadataManager.shareGroupHeartbeat``:

- Members name themselves (a client-generated id, required in v1) and join with epoch 0 and their subscribed
  topic names; they leave with epoch -1. Any other epoch must be the member's current one
  (FENCED_MEMBER_EPOCH otherwise); an unknown member id with a non-zero epoch gets UNKNOWN_MEMBER_ID, or
  GROUP_ID_NOT_FOUND when the group does not exist (Kafka creates a group only for a joining member).
- The group epoch is bumped whenever membership, a subscription or the subscribed topics' partitions
  change; the target assignment is then recomputed and every member moves to the group epoch with its new
  partitions at its next heartbeat. Share groups need no revocation phase: a partition may be shared by
  several members, and records, not partitions, are what members own.
- The assignor is Kafka's ``simple`` share assignor (``SimpleHomogeneousAssignmentBuilder``): partitions are
  shared by ceil(members / partitions) members each, every member gets an equal share (within one) of the
  assignment slots, and a member keeps what it had where balance allows. With fewer members than
  partitions each partition has exactly one member; a 1-partition topic is shared by every member.
- A member that does not heartbeat within ``share.session.timeout.ms`` is removed (``poll``), as is its
  claim on acquired records (the caller releases them).
- Group states as Kafka reports them: ``Empty`` (no members) and ``Stable``.

Membership is persisted as Kafka persists it: every change leaves records of Kafka 4.3's share group types in
``outbox`` (``grouprecords.py``: member metadata, group epoch, target assignment, current member assignment),
which the caller appends to ``__consumer_offsets`` before answering. ``load`` restores groups from them after a
restart: members keep their ids and epochs and go on heartbeating (their session timers start again), and a
group whose subscribed topics changed meanwhile gets a new epoch and assignment at its next heartbeat.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.share import grouprecords as R
from kafkalite.coordinator.share.config import ShareConfig

FENCED_MEMBER_EPOCH = 110
GROUP_MAX_SIZE_REACHED = 81
GROUP_ID_NOT_FOUND = 69
INVALID_REQUEST = 42

TP = tuple[uuid.UUID, int]
#: topic name -> (topic id, partition count) of existing topics
Topics = Callable[[], Mapping[str, tuple[uuid.UUID, int]]]


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    deadline: int
    assignment: set[TP] = field(default_factory=set)
    previous_epoch: int = -1


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, set[TP]] = field(default_factory=dict)
    topology: tuple[tuple[str, tuple[uuid.UUID, int]], ...] = ()   # (topic, (id, partitions)), sorted

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}


@dataclass(slots=True)
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    interval_ms: int = 0
    assignment: dict[uuid.UUID, list[int]] | None = None


class ShareGroupCoordinator:
    def __init__(self, config: ShareConfig, topics: Topics) -> None:
        self.config = config
        self.topics = topics
        self.groups: dict[str, ShareGroup] = {}
        self.outbox: dict[str, list[R.Record]] = {}      # group -> records to persist, in order (drained by the caller)
        self._now = 0

    def _emit(self, group_id: str, *records: R.Record) -> None:
        self.outbox.setdefault(group_id, []).extend(records)

    def take_outbox(self) -> dict[str, list[R.Record]]:
        out, self.outbox = self.outbox, {}
        return out

    def load(self, loaded: Mapping[str, R.LoadedGroup], now: int) -> None:
        """Groups replayed from ``__consumer_offsets`` (``grouprecords.GroupReplay.groups``)."""
        topics = self.topics()
        for gid, lg in loaded.items():
            settings = self.config.for_group(gid)
            g = ShareGroup(gid, lg.epoch, lg.assignment_epoch)
            for mid, lm in lg.members.items():
                g.members[mid] = ShareMember(mid, lm.member_epoch, lm.client_id, lm.client_host, lm.rack_id,
                                             sorted(set(lm.subscribed)), now + settings.session_timeout_ms,
                                             set(lm.assignment), lm.previous_epoch)
            g.target = {mid: set(t) for mid, t in lg.target.items()}
            sig = tuple(sorted((t, topics[t]) for t in g.subscribed_topics() if t in topics))
            if R.metadata_hash(dict(sig)) == lg.metadata_hash:
                g.topology = sig          # unchanged: no new epoch; otherwise the next heartbeat reassigns
            self.groups[gid] = g

    def ensure_group(self, group_id: str) -> ShareGroup:
        g = self.groups.get(group_id)
        if g is None:
            epoch = self.config.initial_epoch
            g = self.groups[group_id] = ShareGroup(group_id, epoch, epoch)
        return g

    def heartbeat(self, now: int, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str = "", client_host: str = "") -> HeartbeatResult:
        """One ShareGroupHeartbeat. Returns the response fields; leaving members are reported by ``left``."""
        settings = self.config.for_group(group_id)
        if not member_id:
            return HeartbeatResult(INVALID_REQUEST, "MemberId can't be empty.")
        if member_epoch < -1:
            return HeartbeatResult(INVALID_REQUEST, "MemberEpoch is invalid.")
        if rack_id is not None and not rack_id:
            return HeartbeatResult(INVALID_REQUEST, "RackId can't be empty.")
        if member_epoch == 0 and not subscribed:
            return HeartbeatResult(INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        self._now = now
        g = self.groups.get(group_id)
        if member_epoch == -1:
            if g is not None and g.members.pop(member_id, None) is not None:
                self._removed(g, member_id)
                self._bump(g)
            return HeartbeatResult(E.NONE, member_id=member_id, member_epoch=-1,
                                   interval_ms=settings.heartbeat_interval_ms)
        m = g.members.get(member_id) if g is not None else None
        if g is None and member_epoch != 0:   # Kafka creates a group only for a joining member (epoch 0)
            return HeartbeatResult(E.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        if m is None and member_epoch != 0:
            return HeartbeatResult(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if m is not None and member_epoch > m.member_epoch:   # GroupMetadataManager's wording
            return HeartbeatResult(FENCED_MEMBER_EPOCH, f"The share group member has a greater member epoch "
                                   f"({member_epoch}) than the one known by the group coordinator "
                                   f"({m.member_epoch}). The member must abandon all its partitions and rejoin.")
        if m is not None and 0 < member_epoch < m.member_epoch and member_epoch != m.previous_epoch:
            # the previous epoch is accepted: the response that bumped it may have been lost
            return HeartbeatResult(FENCED_MEMBER_EPOCH, f"The share group member has a smaller member epoch "
                                   f"({member_epoch}) than the one known by the group coordinator "
                                   f"({m.member_epoch}), and it does not match the previous member epoch "
                                   f"({m.previous_epoch}). The member must abandon all its partitions and rejoin.")
        if g is None:
            g = self.ensure_group(group_id)
        if m is None:
            if len(g.members) >= self.config.max_group_size:
                return HeartbeatResult(GROUP_MAX_SIZE_REACHED, f"The share group has reached its maximum "
                                       f"capacity of {self.config.max_group_size} members.")
            m = g.members[member_id] = ShareMember(member_id, 0, client_id, client_host, rack_id,
                                                   sorted(set(subscribed or [])), 0)
            self._member_record(g, m)
            self._bump(g)
        else:
            if subscribed is not None and sorted(set(subscribed)) != m.subscribed:
                m.subscribed = sorted(set(subscribed))
                if rack_id is not None:
                    m.rack_id = rack_id
                self._member_record(g, m)
                self._bump(g)
            elif rack_id is not None and rack_id != m.rack_id:
                m.rack_id = rack_id
                self._member_record(g, m)
        m.deadline = now + settings.session_timeout_ms
        self._refresh_topology(g)
        send = None
        if member_epoch == 0 or m.member_epoch != g.assignment_epoch:
            if m.member_epoch != g.assignment_epoch:
                m.previous_epoch = m.member_epoch
            m.member_epoch = g.assignment_epoch
            m.assignment = set(g.target.get(member_id, set()))
            send = _by_topic(m.assignment)
            self._emit(group_id, (R.key(R.CURRENT_ASSIGNMENT, group_id, member_id),
                                  R.current_value(m.member_epoch, m.previous_epoch, m.assignment)))
        return HeartbeatResult(E.NONE, member_id=member_id, member_epoch=m.member_epoch,
                               interval_ms=settings.heartbeat_interval_ms, assignment=send)

    def next_deadline(self) -> int | None:
        ds = [m.deadline for g in self.groups.values() for m in g.members.values()]
        return min(ds) if ds else None

    def poll(self, now: int) -> list[tuple[str, str]]:
        """Remove members whose session expired; returns (group, member) of each removed."""
        out = []
        self._now = now
        for g in self.groups.values():
            gone = [mid for mid, m in g.members.items() if m.deadline <= now]
            for mid in gone:
                del g.members[mid]
                self._removed(g, mid)
                out.append((g.group_id, mid))
            if gone:
                self._bump(g)
        return out

    def delete(self, group_id: str) -> int:
        g = self.groups.get(group_id)
        if g is not None and g.members:
            return E.NON_EMPTY_GROUP
        if self.groups.pop(group_id, None) is not None:
            self._emit(group_id, (R.key(R.STATE_PARTITIONS, group_id), None),
                       (R.key(R.TARGET_METADATA, group_id), None), (R.key(R.GROUP_METADATA, group_id), None))
        return E.NONE

    # -- records -------------------------------------------------------------------------------
    def _member_record(self, g: ShareGroup, m: ShareMember) -> None:
        self._emit(g.group_id, (R.key(R.MEMBER_METADATA, g.group_id, m.member_id),
                                R.member_value(m.rack_id, m.client_id, m.client_host, m.subscribed)))

    def _removed(self, g: ShareGroup, member_id: str) -> None:
        """Kafka's removeMember: tombstones for the current assignment, the target assignment, the metadata."""
        g.target.pop(member_id, None)
        self._emit(g.group_id, *[(R.key(t, g.group_id, member_id), None)
                                 for t in (R.CURRENT_ASSIGNMENT, R.TARGET_MEMBER, R.MEMBER_METADATA)])

    # -- assignment ----------------------------------------------------------------------------
    def _bump(self, g: ShareGroup) -> None:
        g.epoch += 1
        self._assign(g)

    def _refresh_topology(self, g: ShareGroup) -> None:
        """A subscribed topic created, deleted or grown since the last assignment: bump and reassign."""
        topics = self.topics()
        sig = tuple(sorted((t, topics[t]) for t in g.subscribed_topics() if t in topics))
        if sig != g.topology:
            self._bump(g)

    def _assign(self, g: ShareGroup) -> None:
        topics = self.topics()
        g.topology = tuple(sorted((t, topics[t]) for t in g.subscribed_topics() if t in topics))
        subs = {}
        for mid, m in g.members.items():
            subs[mid] = {(topics[t][0], p) for t in m.subscribed if t in topics for p in range(topics[t][1])}
        old = {mid: m.assignment for mid, m in g.members.items()}
        before = g.target
        g.target = simple_assign(subs, old)
        g.assignment_epoch = g.epoch
        gid = g.group_id
        self._emit(gid, (R.key(R.GROUP_METADATA, gid), R.group_value(g.epoch, R.metadata_hash(dict(g.topology)))))
        self._emit(gid, *[(R.key(R.TARGET_MEMBER, gid, mid), R.target_member_value(parts))
                          for mid, parts in sorted(g.target.items()) if before.get(mid) != parts])
        self._emit(gid, (R.key(R.TARGET_METADATA, gid), R.target_metadata_value(g.assignment_epoch, self._now)))


def simple_assign(subs: Mapping[str, set[TP]], old: Mapping[str, set[TP]]) -> dict[str, set[TP]]:
    """Kafka's share ``simple`` assignor, in its essentials: balance first (each partition shared by
    ceil(M/P) members, each member within one of the others' count), then stickiness."""
    members = sorted(subs)
    out: dict[str, set[TP]] = {mid: set() for mid in members}
    parts = sorted(set().union(*subs.values())) if subs else []
    if not members or not parts:
        return out
    sharing = -(-len(members) // len(parts))
    total = sharing * len(parts)
    quota = {mid: total // len(members) + (1 if i < total % len(members) else 0) for i, mid in enumerate(members)}
    holders: dict[TP, int] = dict.fromkeys(parts, 0)
    for mid in members:                                     # keep what fits
        for tp in sorted(old.get(mid, ())):
            if tp in subs[mid] and len(out[mid]) < quota[mid] and holders[tp] < sharing:
                out[mid].add(tp)
                holders[tp] += 1
    for tp in sorted(parts, key=lambda t: (holders[t], t)):   # fill
        while holders[tp] < sharing:
            cands = [mid for mid in members if tp in subs[mid] and tp not in out[mid] and len(out[mid]) < quota[mid]]
            if not cands:
                break
            mid = min(cands, key=lambda c: (len(out[c]), c))
            out[mid].add(tp)
            holders[tp] += 1
    for tp in parts:                                        # no partition left without a member (uneven subscriptions)
        if not holders[tp]:
            mid = min((m for m in members if tp in subs[m]), key=lambda c: (len(out[c]), c))
            out[mid].add(tp)
            holders[tp] += 1
    for mid in members:                                     # nobody subscribed to something goes without
        if not out[mid] and subs[mid]:
            tp = min(subs[mid], key=lambda t: (holders[t], t))
            out[mid].add(tp)
            holders[tp] += 1
    return out


def _by_topic(assignment: set[TP]) -> dict[uuid.UUID, list[int]]:
    out: dict[uuid.UUID, list[int]] = {}
    for tid, p in sorted(assignment):
        out.setdefault(tid, []).append(p)
    return out
