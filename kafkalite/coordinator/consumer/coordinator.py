"""The consumer group coordinator (KIP-848): a pure state machine, time passed in (``now``), records out.

``heartbeat()`` follows Kafka 4.3's GroupMetadataManager.consumerGroupHeartbeat: get or create the group (epoch
0 creates), get or create the member (static members by ``group.instance.id``), update its subscription, bump
the group epoch when membership or the subscribed topics' metadata changed, recompute the target assignment when
the group epoch is ahead of it, reconcile this member one step, and answer with its epoch and (when it changed,
or on a full request) its assignment. Every change is written to ``__consumer_offsets`` as Kafka 4's records
(``records.py``) before it is answered; ``load()`` rebuilds the groups from them.

Errors, as Kafka's: UNKNOWN_MEMBER_ID (unknown member / static instance), FENCED_MEMBER_EPOCH (an epoch ahead of
the member's, or behind it other than the previous epoch with a subset of its partitions), UNRELEASED_INSTANCE_ID
(a static instance id still held by a member that did not leave with epoch -2), FENCED_INSTANCE_ID (a static
instance id now held by another member id), GROUP_ID_NOT_FOUND (an epoch other than 0 for an unknown group, or
a group id a non-empty classic group holds), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, INVALID_REQUEST.

Timers (``poll``): a member that sends no heartbeat for ``group.consumer.session.timeout.ms`` is removed
(fenced); a member that does not revoke partitions within its rebalance timeout is removed too. Either bumps the
group epoch, so the others are reassigned its partitions.
"""
from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.keys import storable
from kafkalite.coordinator.consumer import records as R
from kafkalite.coordinator.consumer.admin import AdminMixin
from kafkalite.coordinator.consumer.assignors import ASSIGNORS, assign
from kafkalite.coordinator.consumer.classic_members import ClassicMembersMixin
from kafkalite.coordinator.consumer.migration import ClassicSide, MigrationMixin
from kafkalite.coordinator.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ClassicMeta,
    ConsumerGroup,
    ConsumerMember,
    HeartbeatError,
    MemberState,
    new_member_id,
)
from kafkalite.coordinator.consumer.reconcile import reconcile
from kafkalite.coordinator.consumer.regex import RegexError, compile_re2
from kafkalite_wire.errors import ErrorCode

log = logging.getLogger("kafkalite.coordinator.consumer")

FENCED_MEMBER_EPOCH = int(ErrorCode.FENCED_MEMBER_EPOCH)
UNRELEASED_INSTANCE_ID = int(ErrorCode.UNRELEASED_INSTANCE_ID)
UNSUPPORTED_ASSIGNOR = int(ErrorCode.UNSUPPORTED_ASSIGNOR)
STALE_MEMBER_EPOCH = int(ErrorCode.STALE_MEMBER_EPOCH)
INVALID_REGULAR_EXPRESSION = int(ErrorCode.INVALID_REGULAR_EXPRESSION)
ILLEGAL_GENERATION = int(ErrorCode.ILLEGAL_GENERATION)
METADATA_REFRESH_MS = 500   # subscribed topics re-read at most this often per group (on heartbeats)


@dataclass
class ConsumerConfig:
    heartbeat_interval_ms: int = 5_000      # group.consumer.heartbeat.interval.ms
    session_timeout_ms: int = 45_000        # group.consumer.session.timeout.ms
    assignors: tuple[str, ...] = ASSIGNORS  # group.consumer.assignors (the first is the default)
    max_size: int = 2**31 - 1               # group.consumer.max.size
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy (migration.py)
    #: the epoch a new group starts at: Kafka 4.1+ starts modern groups at 1 (ModernGroup: a member joining
    #: without a subscription gets epoch 1, one with a subscription bumps it to 2); 3.9 started at 0 and its
    #: first member's join bumped it to 1
    initial_epoch: int = 0
    #: the broker's group config store (IncrementalAlterConfigs on GROUP resources), when it has one: a group's
    #: consumer.session.timeout.ms / consumer.heartbeat.interval.ms override the broker's (Kafka's GroupConfig)
    group_configs: Callable[[str], Mapping[str, str]] | None = None

    def _group_int(self, group_id: str, key: str, default: int) -> int:
        overrides = self.group_configs(group_id) if self.group_configs is not None else None
        if overrides and overrides.get(key) is not None:
            with contextlib.suppress(TypeError, ValueError):
                return int(overrides[key])
        return default

    def session_timeout(self, group_id: str) -> int:
        return self._group_int(group_id, "consumer.session.timeout.ms", self.session_timeout_ms)

    def heartbeat_interval(self, group_id: str) -> int:
        return self._group_int(group_id, "consumer.heartbeat.interval.ms", self.heartbeat_interval_ms)


@dataclass
class HeartbeatResult:
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _brief(a: Assignment) -> str:
    """An assignment for a log line: ``topicid8:p,p,...`` per topic."""
    return " ".join(f"{t.hex[:8]}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(a.items()) if ps) or "-"


def _tp_set(a: Assignment | None) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in (a or {}).items() for p in ps}


class ConsumerGroupCoordinator(ClassicMembersMixin, MigrationMixin, AdminMixin):
    def __init__(self, config: ConsumerConfig, append: Callable[[str, list[tuple[bytes, bytes | None]]], None],
                 topics: Callable[[], Mapping[str, Any]],
                 classic_group_busy: Callable[[str], bool] = lambda g: False) -> None:
        self.config = config
        self.groups: dict[str, ConsumerGroup] = {}
        self._append = append                  # (group id, records) -> None; raises AppendError
        self._topics = topics                  # name -> TopicInfo (topic_id, partitions, internal)
        self._classic_busy = classic_group_busy
        self.loading = False
        self.active = True
        self.owns: Callable[[str], bool] | None = None   # kafkalite.cluster: does this broker coordinate it
        self._matches: dict[str, dict[str, bool]] = {}   # regex -> topic name -> matches (each matched once)
        self._topic_filter: Callable[[set[str]], set[str]] | None = None   # the heartbeating member's (authz)
        self._group_filters: dict[str, Callable[[set[str]], set[str]] | None] = {}   # group -> last filter
        self.classic_side: ClassicSide | None = None   # the classic coordinator, for online conversion
        #: (topic name, partition) -> racks of its replicas' brokers, for rack-aware assignment (None: no racks)
        self.partition_racks: Callable[[str, int], Any] | None = None
        self._post: list[Callable[[], None]] = []      # run after a write (a downgraded group's rebalance)

    # -- heartbeat -----------------------------------------------------------------------------------------
    def heartbeat(self, now: int, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                  rack_id: str | None, rebalance_timeout_ms: int, topic_names: list[str] | None,
                  topic_regex: str | None, server_assignor: str | None, owned: Assignment | None,
                  client_id: str = "", client_host: str = "", version: int = 0,
                  topic_filter: Callable[[set[str]], set[str]] | None = None) -> HeartbeatResult:
        """``topic_filter`` (None: no authorizer) keeps the topics this member may describe; the group's regexes
        resolve through the filter of the member whose heartbeat last refreshed them (Kafka 4.x)."""
        if not self.active or (self.owns is not None and not self.owns(group_id)):
            return HeartbeatResult(E.NOT_COORDINATOR)
        if self.loading:
            return HeartbeatResult(E.COORDINATOR_LOAD_IN_PROGRESS)
        try:
            self._validate(group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                           topic_names, topic_regex, server_assignor, owned, version)
            self._topic_filter = topic_filter
            return self._heartbeat(now, group_id, member_id, member_epoch, instance_id, rack_id,
                                   rebalance_timeout_ms, topic_names, topic_regex, server_assignor, owned,
                                   client_id, client_host)
        except HeartbeatError as e:
            return HeartbeatResult(e.code, str(e))
        finally:
            self._topic_filter = None

    def _validate(self, group_id: str, member_id: str, epoch: int, instance_id: str | None, rack_id: str | None,
                  rebalance_timeout_ms: int, names: list[str] | None, regex: str | None,
                  assignor: str | None, owned: Assignment | None, version: int) -> None:
        """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        bad = E.INVALID_REQUEST
        if (version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and not member_id:
            raise HeartbeatError(bad, "MemberId can't be empty.")
        if not group_id:
            raise HeartbeatError(bad, "GroupId can't be empty.")
        # a string Kafka's request parser would refuse (over 0x7fff bytes) cannot be stored in a record key or
        # value either (kafkalite.coordinator.common.keys): the group id is INVALID_GROUP_ID, the rest INVALID_REQUEST
        if not storable(group_id):
            raise HeartbeatError(E.INVALID_GROUP_ID, "GroupId is too long.")
        for what, text in (("MemberId", member_id), ("InstanceId", instance_id), ("RackId", rack_id),
                           ("SubscribedTopicRegex", regex), ("ServerAssignor", assignor)):
            if text is not None and not storable(text):
                raise HeartbeatError(bad, f"{what} is too long.")
        if names and not all(storable(n) for n in names):
            raise HeartbeatError(bad, "A subscribed topic name is too long.")
        if instance_id == "":
            raise HeartbeatError(bad, "InstanceId can't be empty.")
        if rack_id == "":
            raise HeartbeatError(bad, "RackId can't be empty.")
        if epoch == 0:
            if rebalance_timeout_ms == -1:
                raise HeartbeatError(bad, "RebalanceTimeoutMs must be provided in first request.")
            if owned is None or owned:
                raise HeartbeatError(bad, "TopicPartitions must be empty when (re-)joining.")
            if names is None and regex is None:
                raise HeartbeatError(bad, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                                          "when (re-)joining.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise HeartbeatError(bad, "InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise HeartbeatError(bad, "MemberEpoch is invalid.")
        if assignor is not None and assignor not in self.config.assignors:
            raise HeartbeatError(UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. Supported "
                                                       f"assignors: {', '.join(self.config.assignors)}.")
        if regex is not None:
            try:
                compile_re2(regex)
            except RegexError as exc:
                raise HeartbeatError(INVALID_REGULAR_EXPRESSION, str(exc)) from None

    def _heartbeat(self, now: int, group_id: str, member_id: str, epoch: int, instance_id: str | None,
                   rack_id: str | None, rebalance_timeout_ms: int, names: list[str] | None, regex: str | None,
                   assignor: str | None, owned: Assignment | None, client_id: str,
                   client_host: str) -> HeartbeatResult:
        out: list[tuple[bytes, bytes | None]] = []
        group = self.groups.get(group_id)
        if group is None:
            if epoch != 0:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            # a non-empty classic group converts online (migration.py) or the heartbeat is refused
            converting = self._classic_busy(group_id)
            group = self._upgrade(now, group_id, out) if converting else self._new_group(group_id)
        else:
            converting = False
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(now, group, member_id, epoch, instance_id)
        member = self._member(group, member_id or new_member_id(), epoch, instance_id, owned, out)
        if len(group.members) >= self.config.max_size and member.member_id not in group.members:
            raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of "
                                 f"{self.config.max_size} members.")
        if converting and self.classic_side is not None:
            self.classic_side.detach(group_id, now)
        self.groups.setdefault(group_id, group)
        old_meta = member.metadata_key() if member.member_id in group.members else None
        old_assign = member.assignment_key() if member.member_id in group.members else None
        old_assigned = _tp_set(member.assigned)
        sub_changed = False
        if instance_id is not None:
            member.instance_id = instance_id
        if rack_id is not None:
            member.rack_id = rack_id
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if assignor is not None:
            member.server_assignor = assignor
        if names is not None and sorted(names) != sorted(member.subscribed_topic_names):
            member.subscribed_topic_names = list(names)
            sub_changed = True
        # kept as sent, "" included (Kafka's maybeUpdateSubscribedTopicRegex; ConsumerGroupDescribe answers it back):
        # an empty regex subscribes to nothing (the Java client 4.x sends "" with a java.util.regex.Pattern)
        if regex is not None and regex != member.subscribed_topic_regex:
            member.subscribed_topic_regex = regex
            sub_changed = True
        member.client_id, member.client_host = client_id, client_host
        joined = member.member_id not in group.members
        group.members[member.member_id] = member
        bump = sub_changed or (joined and self.config.initial_epoch == 0)
        if self._refresh_metadata(group, now, force=bump):
            bump = True
        if bump:
            self._bump(group, out)
        self._maybe_new_target(group, now, out)
        reconcile(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                  group.member_topic_ids(member), self._held_elsewhere(group, member.member_id), owned,
                  sub_changed)
        self._timers_after(member, now, self.config.session_timeout(group_id))
        if member.metadata_key() != old_meta:
            out.append((R.encode_key(R.MEMBER_METADATA, group_id, member.member_id),
                        R.member_metadata_value(member)))
        if member.assignment_key() != old_assign:
            out.append((R.encode_key(R.CURRENT_ASSIGNMENT, group_id, member.member_id),
                        R.current_assignment_value(member)))
        self._write(group_id, out)
        if log.isEnabledFor(logging.DEBUG) and (member.assignment_key() != old_assign or epoch != member.member_epoch):
            log.debug("consumer group %s: member %s heartbeat epoch %d owned %s -> epoch %d %s assigned %s "
                      "revoking %s", group_id, member.member_id, epoch, _brief(owned) if owned is not None else None,
                      member.member_epoch, member.state.name, _brief(member.assigned),
                      _brief(member.pending_revocation))
        full = rebalance_timeout_ms != -1 and (names is not None or regex is not None) and owned is not None
        changed = _tp_set(member.assigned) != old_assigned
        return HeartbeatResult(
            member_id=member.member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval(group_id),
            assignment={t: set(ps) for t, ps in member.assigned.items()} if epoch == 0 or full or changed
            else None)

    def _new_group(self, group_id: str) -> ConsumerGroup:
        epoch = self.config.initial_epoch
        return ConsumerGroup(group_id, group_epoch=epoch, assignment_epoch=epoch)

    def _member(self, group: ConsumerGroup, member_id: str, epoch: int, instance_id: str | None,
                owned: Assignment | None, out: list[tuple[bytes, bytes | None]]) -> ConsumerMember:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if epoch != 0:
                    raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group {group.group_id}.")
                return ConsumerMember(member_id)
            self._check_epoch(member, epoch, owned)
            return member
        existing = group.static_member(instance_id)
        if epoch == 0:
            if existing is None:
                return group.members.get(member_id) or ConsumerMember(member_id, instance_id=instance_id)
            if existing.member_id == member_id:
                return existing
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise HeartbeatError(UNRELEASED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id {instance_id} cannot join the "
                                     f"group because the instance id is owned by {existing.member_id} member.")
            # the static member comes back under a new member id: it takes over the old one's assignment
            new = ConsumerMember(member_id, instance_id=instance_id, rack_id=existing.rack_id,
                                 subscribed_topic_names=list(existing.subscribed_topic_names),
                                 subscribed_topic_regex=existing.subscribed_topic_regex,
                                 rebalance_timeout_ms=existing.rebalance_timeout_ms,
                                 server_assignor=existing.server_assignor, member_epoch=0, previous_member_epoch=0,
                                 state=existing.state, assigned={t: set(p) for t, p in existing.assigned.items()},
                                 pending_revocation={t: set(p) for t, p in existing.pending_revocation.items()},
                                 epochs=dict(existing.epochs))
            target = group.target.pop(existing.member_id, None)
            self._remove_records(group.group_id, existing.member_id, out)
            del group.members[existing.member_id]
            group.members[member_id] = new
            if target is not None:
                group.target[member_id] = target
                out.append((R.encode_key(R.TARGET_MEMBER, group.group_id, member_id),
                            R.target_member_value(target)))
            out.append((R.encode_key(R.MEMBER_METADATA, group.group_id, member_id), R.member_metadata_value(new)))
            out.append((R.encode_key(R.CURRENT_ASSIGNMENT, group.group_id, member_id),
                        R.current_assignment_value(new)))
            return new
        if existing is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                                        f"was fenced by member {existing.member_id}.")
        self._check_epoch(existing, epoch, owned)
        return existing

    @staticmethod
    def _check_epoch(member: ConsumerMember, epoch: int, owned: Assignment | None) -> None:
        if epoch == 0:
            return
        if epoch > member.member_epoch:
            raise HeartbeatError(FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a greater member epoch ({epoch}) than the one "
                                 f"known by the group coordinator ({member.member_epoch}). The member must "
                                 f"abandon all its partitions and rejoin.")
        if epoch < member.member_epoch and (
                epoch != member.previous_member_epoch or not _tp_set(owned) <= _tp_set(member.assigned)):
            raise HeartbeatError(FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({epoch}) than the one "
                                 f"known by the group coordinator ({member.member_epoch}). The member must "
                                 f"abandon all its partitions and rejoin.")

    def _leave(self, now: int, group: ConsumerGroup, member_id: str, epoch: int,
               instance_id: str | None) -> HeartbeatResult:
        out: list[tuple[bytes, bytes | None]] = []
        if instance_id is not None:
            member = group.static_member(instance_id)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if member.member_id != member_id:
                raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                                            f"{instance_id} was fenced by member {member.member_id}.")
        else:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"Member {member_id} is not a member of group {group.group_id}.")
        if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # a static member leaving temporarily keeps its assignment until its session expires or it returns
            member.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            out.append((R.encode_key(R.CURRENT_ASSIGNMENT, group.group_id, member.member_id),
                        R.current_assignment_value(member)))
            self._write(group.group_id, out)
            return HeartbeatResult(member_id=member.member_id, member_epoch=epoch)
        log.info("member %s leaves consumer group %s", member.member_id, group.group_id)
        if not self._maybe_downgrade(now, group, member, out):
            self._remove(group, member, out, now)
        try:
            self._write(group.group_id, out)
        finally:
            self._run_post()
        return HeartbeatResult(member_id=member.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)

    # -- group bookkeeping -----------------------------------------------------------------------------------
    def _remove_records(self, group_id: str, member_id: str, out: list[tuple[bytes, bytes | None]]) -> None:
        out.append((R.encode_key(R.CURRENT_ASSIGNMENT, group_id, member_id), None))
        out.append((R.encode_key(R.TARGET_MEMBER, group_id, member_id), None))
        out.append((R.encode_key(R.MEMBER_METADATA, group_id, member_id), None))

    def _remove(self, group: ConsumerGroup, member: ConsumerMember, out: list[tuple[bytes, bytes | None]],
                now: int = 0) -> None:
        self._remove_records(group.group_id, member.member_id, out)
        group.members.pop(member.member_id, None)
        group.target.pop(member.member_id, None)
        self._refresh_metadata(group, 0, force=True)
        self._bump(group, out)
        if not group.members:   # an empty group's assignment epoch catches up with its group epoch (Kafka 4.3)
            group.assignment_epoch = group.group_epoch
            group.target.clear()
            out.append((R.encode_key(R.TARGET_METADATA, group.group_id),
                        R.target_metadata_value(group.assignment_epoch, now)))

    def _bump(self, group: ConsumerGroup, out: list[tuple[bytes, bytes | None]]) -> None:
        group.group_epoch += 1
        out.append((R.encode_key(R.PARTITION_METADATA, group.group_id), R.partition_metadata_value(group.topics)))
        out.append((R.encode_key(R.GROUP_METADATA, group.group_id), R.group_metadata_value(group.group_epoch)))

    def _refresh_metadata(self, group: ConsumerGroup, now: int, force: bool = False) -> bool:
        """Re-read the subscribed topics (names and regex matches); True when their ids / partition counts
        changed (a topic created, grown or deleted), which bumps the group epoch."""
        if not force and now - group.metadata_checked_ms < METADATA_REFRESH_MS:
            return False
        group.metadata_checked_ms = now
        topics = self._topics()
        regexes = {m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex}
        resolved: dict[str, set[str]] = {}
        for rx in regexes:
            try:
                pat = compile_re2(rx)
            except RegexError:
                resolved[rx] = set()
                continue
            seen = self._matches.setdefault(rx, {})
            if len(seen) > 2 * len(topics) + 1000:   # deleted topics' entries
                seen.clear()
            hits = set()
            for n, info in topics.items():
                hit = seen.get(n)
                if hit is None:
                    hit = seen[n] = (not getattr(info, "internal", False) and not n.startswith("__")
                                     and pat.fullmatch(n) is not None)
                if hit:
                    hits.add(n)
            resolved[rx] = hits
        if self._topic_filter is not None:
            self._group_filters[group.group_id] = self._topic_filter
        allowed = self._group_filters.get(group.group_id)
        if allowed is not None:
            resolved = {rx: allowed(hits) for rx, hits in resolved.items()}
        group.resolved = resolved
        meta: dict[str, tuple[uuid.UUID, int]] = {}
        for name in group.subscribed_names():
            info = topics.get(name)
            if info is not None and info.partitions > 0:
                meta[name] = (info.topic_id, info.partitions)
        if meta != group.topics:
            group.topics = meta
            return True
        return False

    def _assignor(self, group: ConsumerGroup) -> str:
        """The assignor most members asked for (ties: the configured order), else the configured default."""
        counts: dict[str, int] = {}
        for m in group.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return self.config.assignors[0]
        return max(counts, key=lambda a: (counts[a], -self.config.assignors.index(a)
                                          if a in self.config.assignors else -99))

    def _maybe_new_target(self, group: ConsumerGroup, now: int, out: list[tuple[bytes, bytes | None]]) -> None:
        if group.group_epoch <= group.assignment_epoch:
            return
        subs = {mid: group.member_topic_ids(m) for mid, m in group.members.items()}
        parts = dict(group.topics.values())
        names = {tid: name for name, (tid, _n) in group.topics.items()}
        racks_of = None
        if self.partition_racks is not None:
            lookup = self.partition_racks

            def racks_of(t: uuid.UUID, p: int) -> frozenset[str]:
                return frozenset(lookup(names.get(t, ""), p))
        new = assign(self._assignor(group), subs, parts, group.target,
                     {mid: m.rack_id for mid, m in group.members.items()}, racks_of)
        for mid, a in new.items():
            if {t: ps for t, ps in group.target.get(mid, {}).items() if ps} != {t: ps for t, ps in a.items() if ps}:
                out.append((R.encode_key(R.TARGET_MEMBER, group.group_id, mid), R.target_member_value(a)))
        group.target = new
        group.assignment_epoch = group.group_epoch
        out.append((R.encode_key(R.TARGET_METADATA, group.group_id),
                    R.target_metadata_value(group.assignment_epoch, now)))

    @staticmethod
    def _held_elsewhere(group: ConsumerGroup, member_id: str) -> Callable[[uuid.UUID, int], bool]:
        owners = group.partition_owner_epochs()

        def held(t: uuid.UUID, p: int) -> bool:
            o = owners.get((t, p))
            return o is not None and o[0] != member_id
        return held

    def _timers_after(self, member: ConsumerMember, now: int, session_ms: int) -> None:
        member.session_deadline = now + (member.classic.session_timeout_ms if member.classic else session_ms)
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            if member.rebalance_deadline is None:
                member.rebalance_deadline = now + max(member.rebalance_timeout_ms, 0)
        else:
            member.rebalance_deadline = None

    def _write(self, group_id: str, out: list[tuple[bytes, bytes | None]]) -> None:
        if not out:
            return
        try:
            self._append(group_id, out)
        except Exception as exc:
            log.warning("could not write consumer group %s records: %s", group_id, exc)
            raise HeartbeatError(E.group_write_error(exc), f"could not store the group: {exc}") from None

    # -- timers ----------------------------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        best: int | None = None
        for g in self.groups.values():
            for m in g.members.values():
                for d in (m.session_deadline, m.rebalance_deadline, m.join_deadline, m.sync_deadline):
                    if d is not None and (best is None or d < best):
                        best = d
        return best

    def poll(self, now: int) -> None:
        if self.loading or not self.active:
            return
        for g in list(self.groups.values()):
            try:
                self._expire(g, now)
            except Exception:
                log.exception("consumer group %s: timer failed", g.group_id)

    def _expire(self, group: ConsumerGroup, now: int) -> None:
        out: list[tuple[bytes, bytes | None]] = []
        for m in list(group.members.values()):
            why = None
            if m.session_deadline is not None and m.session_deadline <= now:
                why = "session timeout"
            elif m.rebalance_deadline is not None and m.rebalance_deadline <= now:
                why = "rebalance timeout (partitions not revoked)"
            elif m.join_deadline is not None and m.join_deadline <= now:
                why = "the classic member failed to join within the rebalance timeout"
            elif m.sync_deadline is not None and m.sync_deadline <= now:
                why = "the classic member failed to sync within the rebalance timeout"
            if why:
                log.info("member %s of consumer group %s fenced: %s", m.member_id, group.group_id, why)
                if self._maybe_downgrade(now, group, m, out):
                    break
                self._remove(group, m, out, now)
        if out:
            with contextlib.suppress(HeartbeatError):   # logged; memory is ahead of the log until the next write
                self._write(group.group_id, out)
        self._run_post()

    # -- loading ---------------------------------------------------------------------------------------------
    def load(self, entries: list[tuple[bytes, bytes | None]], now: int) -> None:
        """Replay consumer group records (log order; tombstones delete)."""
        groups: dict[str, ConsumerGroup] = {}
        for key, value in entries:
            try:
                k = R.decode_key(key)
                g = groups.get(k.group_id)
                if g is None:
                    if value is None:
                        continue
                    g = groups[k.group_id] = self._new_group(k.group_id)
                self._replay(g, k, None if value is None else R.decode_value(k.type, value))
                if k.type == R.GROUP_METADATA and value is None:
                    del groups[k.group_id]
            except R.ConsumerRecordError as exc:
                log.warning("skipping undecodable consumer group record: %s", exc)
        for g in groups.values():
            for m in g.members.values():
                m.session_deadline = now + (m.classic.session_timeout_ms if m.classic is not None
                                            else self.config.session_timeout(g.group_id))
                if m.state == MemberState.UNREVOKED_PARTITIONS:
                    m.rebalance_deadline = now + max(m.rebalance_timeout_ms, 0)
        self.groups.update(groups)

    @staticmethod
    def _replay(g: ConsumerGroup, k: R.Key, v: object) -> None:
        if k.type == R.GROUP_METADATA:
            g.group_epoch = v if isinstance(v, int) else g.group_epoch
        elif k.type == R.PARTITION_METADATA:
            g.topics = v if isinstance(v, dict) else {}
        elif k.type == R.TARGET_METADATA:
            g.assignment_epoch = v if isinstance(v, int) else g.assignment_epoch
        elif k.type == R.TARGET_MEMBER:
            if v is None:
                g.target.pop(k.member_id or "", None)
            else:
                g.target[k.member_id or ""] = v  # type: ignore[assignment]
        elif k.type == R.MEMBER_METADATA:
            if v is None:
                g.members.pop(k.member_id or "", None)
                return
            assert isinstance(v, R.MemberMetadata)
            m = g.members.setdefault(k.member_id or "", ConsumerMember(k.member_id or ""))
            m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, \
                v.client_host
            m.subscribed_topic_names = list(v.subscribed_topic_names)
            m.subscribed_topic_regex = v.subscribed_topic_regex
            m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
            m.classic = ClassicMeta(v.classic[0], list(v.classic[1])) if v.classic is not None else None
        elif k.type == R.CURRENT_ASSIGNMENT:
            if v is None:
                return
            m = g.members.setdefault(k.member_id or "", ConsumerMember(k.member_id or ""))
            epoch, prev, state, assigned, pending, epochs = v  # type: ignore[misc]
            m.member_epoch, m.previous_member_epoch = epoch, prev
            m.state = MemberState(state) if state in (0, 1, 2) else MemberState.UNKNOWN
            m.assigned, m.pending_revocation, m.epochs = assigned, pending, epochs
