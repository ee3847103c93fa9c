"""The classic group protocol as a sans-I/O state machine (Kafka's ``GroupCoordinator``).

Every entry point takes ``now_ms``; nothing sleeps. Requests that Kafka parks in a purgatory
(JoinGroup until the rebalance completes, SyncGroup until the leader's assignment is stored) return
a :class:`~kafkalite.coordinator.classic.group.Pending` that a later transition completes. Timers (session
expiry, the initial rebalance delay, the rebalance timeout, the pending-sync timeout, offset
retention) are deadlines stored on groups and members: the glue sleeps until ``next_deadline()``
and calls ``poll(now_ms)``. Every public call also runs ``poll`` first so due timers never lag.

Persistence is a callback, ``append(partition, [(key, value|None), ...])``, called synchronously
with records in Kafka's own ``__consumer_offsets`` schemas; it raises on failure.

Rules worth remembering (all as Kafka 3.9):

* JoinGroup v4+ with an empty member id gets MEMBER_ID_REQUIRED plus a fresh id, kept as a *pending*
  member (the rebalance waits for it) until it rejoins or its session timeout passes.
* A rebalance completes when every known member has rejoined (and no pending member is left), or
  when the rebalance timeout (max over members) passes; members that did not rejoin are dropped
  (static members are kept). A group leaving Empty first waits ``group.initial.rebalance.delay.ms``,
  extended while new members keep arriving, up to the rebalance timeout.
* Heartbeat: PreparingRebalance -> REBALANCE_IN_PROGRESS; CompletingRebalance and Stable -> NONE.
* SyncGroup from the leader stores the group (GroupMetadata record) then answers every waiting member;
  members that do not sync within the rebalance timeout are removed and a new rebalance starts.
* OffsetCommit with generation -1 is a "simple" commit, accepted only while the group is Empty;
  commits from current members are accepted in Stable *and* PreparingRebalance (clients commit on
  revoke) but get REBALANCE_IN_PROGRESS in CompletingRebalance.
* JoinGroup refuses a member whose protocol type differs from a non-empty group's, or none of whose
  protocols every current member supports, with INCONSISTENT_GROUP_PROTOCOL (``supportsProtocols``), so
  a rebalance always has a protocol to select.

Failure containment: a group is the unit of failure. An unexpected exception while one group's timers
fire (``poll``) or while one request works on it (the service calls :meth:`contain_failure`) is logged
once with its traceback and that group alone is reset to Empty at the next generation, keeping its
committed offsets: parked JoinGroup/SyncGroup requests are answered UNKNOWN_MEMBER_ID and later
Heartbeat/SyncGroup/OffsetCommit from its old members get UNKNOWN_MEMBER_ID, the code every client
answers by dropping its member id and joining again. Kafka has no such recovery (an exception in a
delayed join there leaves the members' requests unanswered until they time out and rejoin), so this is
the effective outcome made prompt: the members rejoin, the other groups and the process are untouched.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from kafkalite.coordinator.classic.group import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    Group,
    GroupState,
    JoinResult,
    Member,
    Pending,
    SyncResult,
)
from kafkalite.coordinator.classic.offsets import OffsetsMixin
from kafkalite.coordinator.classic.records import (
    GroupValue,
    MemberRecord,
    encode_group_key,
    encode_group_value,
)
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import GroupConfig
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.metadata.partitions import partition_for

log = logging.getLogger("kafkalite.coordinator")

AppendFn = Callable[[int, list[tuple[bytes, bytes | None]]], int | None]  # -> the batch's base offset

S = GroupState


class GroupCoordinator(OffsetsMixin):
    def __init__(self, config: GroupConfig | None = None, append: AppendFn | None = None) -> None:
        self.config = config or GroupConfig()
        self._append = append or (lambda partition, records: None)
        self.groups: dict[str, Group] = {}
        self.loading = False
        self.active = True
        self.next_offset_expiry: int | None = None
        # several brokers (kafkalite.cluster): whether this broker coordinates a group id; None: every one
        self.owns: Callable[[str], bool] | None = None

    # -- helpers -------------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_num_partitions)

    def _validate_group_status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None:
        err = group_id_error(group_id, allow_empty_id)
        if err is not None:
            return err
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        if self.owns is not None and group_id and not self.owns(group_id):
            return E.NOT_COORDINATOR   # another broker leads its __consumer_offsets partition
        return None

    def _get_or_create(self, group_id: str, create: bool, now_ms: int) -> Group | None:
        g = self.groups.get(group_id)
        if g is None and create:
            g = Group(group_id, now_ms)
            self.groups[group_id] = g
        return g

    def _validate_current_member(self, group: Group, member_id: str, instance_id: str | None) -> int | None:
        if instance_id is not None:
            current = group.current_static_member_id(instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if current != member_id:
                return E.FENCED_INSTANCE_ID
            return None
        if not group.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        return None

    def _schedule_heartbeat(self, member: Member, now_ms: int, timeout_ms: int | None = None) -> None:
        member.heartbeat_deadline = now_ms + (member.session_timeout_ms if timeout_ms is None else timeout_ms)

    def _join_result(self, group: Group, member_id: str, *, members: bool, leader: str | None = None,
                     skip: bool = False) -> JoinResult:
        return JoinResult(
            error=E.NONE, member_id=member_id, generation_id=group.generation_id,
            protocol_type=group.protocol_type, protocol_name=group.protocol_name,
            leader_id=(group.leader_id or "") if leader is None else leader, skip_assignment=skip,
            members=group.current_member_metadata() if members else [],
        )

    @staticmethod
    def _invoke_join(member: Member, result: JoinResult) -> None:
        if member.join_pending is not None:
            p, member.join_pending = member.join_pending, None
            p.set(result)

    @staticmethod
    def _invoke_sync(member: Member, result: SyncResult) -> bool:
        if member.sync_pending is not None:
            p, member.sync_pending = member.sync_pending, None
            p.set(result)
            return True
        return False

    # -- JoinGroup -----------------------------------------------------------------------------
    def join_group(self, now_ms: int, group_id: str, member_id: str, group_instance_id: str | None,
                   client_id: str, client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                   protocol_type: str, protocols: list[tuple[str, bytes]], *,
                   require_known_member_id: bool = True, support_skip_assignment: bool = False,
                   reason: str | None = None) -> Pending[JoinResult]:
        self.poll(now_ms)
        err = self._validate_group_status(group_id)
        if err is not None:
            return Pending.completed(JoinResult(err, member_id))
        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return Pending.completed(JoinResult(E.INVALID_SESSION_TIMEOUT, member_id))
        protocols = [(n, bytes(m)) for n, m in protocols]
        unknown = member_id == ""
        group = self._get_or_create(group_id, unknown, now_ms)
        if group is None:
            return Pending.completed(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
        pending: Pending[JoinResult] = Pending()
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            pending.set(JoinResult(E.GROUP_MAX_SIZE_REACHED, ""))
        elif group.is_(S.DEAD):
            pending.set(JoinResult(E.COORDINATOR_NOT_AVAILABLE, member_id))
        elif not group.supports_protocols(protocol_type, {n for n, _ in protocols}):
            pending.set(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        elif unknown:
            self._new_member_join(now_ms, group, group_instance_id, require_known_member_id,
                                  support_skip_assignment, client_id, client_host, rebalance_timeout_ms,
                                  session_timeout_ms, protocol_type, protocols, pending)
        else:
            self._current_member_join(now_ms, group, member_id, group_instance_id, client_id, client_host,
                                      rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                      pending)
        if group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now_ms)
        if group.is_(S.EMPTY) and not group.members and not group.offsets and group.generation_id == 0 \
                and not group.pending_members and not group.pending_txn_offsets:
            self.groups.pop(group_id, None)  # a join that failed before creating anything
        return pending

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        if group.is_(S.EMPTY, S.DEAD):
            return True
        if group.is_(S.PREPARING_REBALANCE):
            m = group.members.get(member_id)
            return (m is not None and m.is_awaiting_join) or group.num_awaiting_join < self.config.group_max_size
        return group.has(member_id) or group.size < self.config.group_max_size

    def _new_member_join(self, now_ms: int, group: Group, instance_id: str | None, require_known: bool,
                         support_skip: bool, client_id: str, client_host: str, rebalance_timeout_ms: int,
                         session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                         pending: Pending[JoinResult]) -> None:
        new_id = group.generate_member_id(client_id, instance_id)
        if instance_id is not None:
            old_id = group.current_static_member_id(instance_id)
            if old_id is not None:
                self._update_static_member(now_ms, group, old_id, new_id, instance_id, protocols,
                                           rebalance_timeout_ms, session_timeout_ms, pending, support_skip)
            else:
                self._add_member_and_rebalance(now_ms, group, new_id, instance_id, client_id, client_host,
                                               rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                               protocols, pending)
        elif require_known:
            group.pending_members[new_id] = now_ms + session_timeout_ms
            pending.set(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(now_ms, group, new_id, None, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                           pending)

    def _current_member_join(self, now_ms: int, group: Group, member_id: str, instance_id: str | None,
                             client_id: str, client_host: str, rebalance_timeout_ms: int,
                             session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                             pending: Pending[JoinResult]) -> None:
        if member_id in group.pending_members:
            if instance_id is not None:  # a pending member is always dynamic
                pending.set(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
                return
            self._add_member_and_rebalance(now_ms, group, member_id, None, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                           pending)
            return
        err = self._validate_current_member(group, member_id, instance_id)
        if err is not None:
            pending.set(JoinResult(err, member_id))
            return
        member = group.members[member_id]
        if group.is_(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(now_ms, group, member, protocols, rebalance_timeout_ms,
                                              session_timeout_ms, pending)
        elif group.is_(S.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # the member missed its JoinGroup response: answer again for this generation
                pending.set(self._join_result(group, member_id, members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(now_ms, group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, pending)
        elif group.is_(S.STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                # the leader rejoining forces a rebalance (e.g. topic metadata changed)
                self._update_member_and_rebalance(now_ms, group, member, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms, pending)
            else:
                pending.set(self._join_result(group, member_id, members=False))
        else:
            pending.set(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _add_member_and_rebalance(self, now_ms: int, group: Group, member_id: str, instance_id: str | None,
                                  client_id: str, client_host: str, rebalance_timeout_ms: int,
                                  session_timeout_ms: int, protocol_type: str, protocols: list[tuple[str, bytes]],
                                  pending: Pending[JoinResult]) -> None:
        member = Member(member_id, instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                        protocol_type, protocols, is_new=True)
        if group.is_(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, pending)
        # new members cannot heartbeat yet; bound how long their JoinGroup may stay parked
        self._schedule_heartbeat(member, now_ms, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, now_ms, f"adding member {member_id}")

    def _update_member_and_rebalance(self, now_ms: int, group: Group, member: Member,
                                     protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                                     session_timeout_ms: int, pending: Pending[JoinResult]) -> None:
        if member.join_pending is not None and member.join_pending is not pending:
            # a duplicate JoinGroup replaces the parked one (the client gave up on it); answer the
            # old one with a retriable error rather than leave it hanging
            old, member.join_pending = member.join_pending, None
            old.set(JoinResult(E.REBALANCE_IN_PROGRESS, member.member_id))
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, pending)
        self._maybe_prepare_rebalance(group, now_ms, f"member {member.member_id} rejoining")

    def _update_static_member(self, now_ms: int, group: Group, old_id: str, new_id: str, instance_id: str,
                              protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                              session_timeout_ms: int, pending: Pending[JoinResult], support_skip: bool) -> None:
        current_leader = group.leader_id or ""
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat(member, now_ms)
        old_protocols = member.protocols
        old_timeouts = (member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, pending)
        if group.is_(S.STABLE):
            if group.protocol_name == group.select_protocol():
                # no rebalance: persist the new member id and hand back the current generation
                err = self._store_group(group, {m.member_id: m.assignment for m in group.members.values()},
                                        now_ms)
                if err != E.NONE:
                    group.update_member(member, old_protocols, *old_timeouts, None)
                    group.replace_static_member(instance_id, new_id, old_id)
                    member.join_pending = None
                    pending.set(JoinResult(err, "", group.generation_id, group.protocol_type,
                                           group.protocol_name, current_leader))
                    return
                is_leader = group.is_leader(new_id)
                if support_skip:
                    result = self._join_result(group, new_id, members=is_leader, skip=is_leader)
                else:
                    # old leader id: the rejoining leader must not compute an assignment a Stable
                    # group would never distribute
                    result = self._join_result(group, new_id, members=False, leader=current_leader)
                self._invoke_join(member, result)
            else:
                self._maybe_prepare_rebalance(group, now_ms, f"static member {instance_id} changed protocols")
        elif group.is_(S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms, f"static member {instance_id} rejoined during sync")
        # PreparingRebalance: the member simply waits for the join to complete

    # -- rebalance machinery -------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now_ms, reason)

    def _prepare_rebalance(self, group: Group, now_ms: int, reason: str) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, E.REBALANCE_IN_PROGRESS, now_ms)
        group.pending_sync.clear()
        group.sync_deadline = None
        if group.is_(S.EMPTY):
            delay = self.config.group_initial_rebalance_delay_ms
            group.join_is_initial = True
            group.join_initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.join_deadline = now_ms + delay
        else:
            group.join_is_initial = False
            group.join_deadline = now_ms + group.rebalance_timeout_ms()
        group.transition_to(S.PREPARING_REBALANCE, now_ms)
        log.info("preparing to rebalance group %s (generation %d): %s", group.group_id, group.generation_id,
                 reason)
        self._try_complete_join(group, now_ms)  # tryCompleteElseWatch

    def _try_complete_join(self, group: Group, now_ms: int) -> None:
        """DelayedJoin.tryComplete: done once everyone rejoined (the initial delay never short-cuts)."""
        if group.is_(S.PREPARING_REBALANCE) and not group.join_is_initial and group.has_all_members_joined():
            self._complete_join(group, now_ms)

    def _on_join_deadline(self, group: Group, now_ms: int) -> None:
        if group.join_is_initial and group.new_member_added and group.join_initial_remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.config.group_initial_rebalance_delay_ms, group.join_initial_remaining_ms)
            group.join_initial_remaining_ms -= delay
            group.join_deadline = now_ms + delay
            return
        self._complete_join(group, now_ms)

    def _complete_join(self, group: Group, now_ms: int) -> None:
        group.join_deadline = None
        group.join_is_initial = False
        for m in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(m.member_id)
        if group.is_(S.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # nobody rejoined: wait another rebalance timeout for session expiry to clear them out
            group.join_deadline = now_ms + group.rebalance_timeout_ms()
            return
        if group.members and group.select_protocol() is None:
            # cannot happen while JoinGroup checks supportsProtocols; never raise out of a timer for it
            log.error("group %s: no protocol is supported by every member; resetting it", group.group_id)
            self._reset_group(group, now_ms, E.INCONSISTENT_GROUP_PROTOCOL)
            return
        group.init_next_generation(now_ms)
        if group.is_(S.EMPTY):
            self._store_group(group, {}, now_ms)
            return
        log.info("group %s stabilised at generation %d with %d members (protocol %s)", group.group_id,
                 group.generation_id, group.size, group.protocol_name)
        for m in group.members.values():
            self._invoke_join(m, self._join_result(group, m.member_id, members=group.is_leader(m.member_id)))
            self._schedule_heartbeat(m, now_ms)
            m.is_new = False
            group.pending_sync.add(m.member_id)
        group.sync_deadline = now_ms + group.rebalance_timeout_ms()

    def _reset_and_propagate_assignment_error(self, group: Group, error: int, now_ms: int) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error, now_ms)

    def _propagate_assignment(self, group: Group, error: int, now_ms: int) -> None:
        ptype, pname = (group.protocol_type, group.protocol_name) if error == E.NONE else (None, None)
        for m in group.members.values():
            if self._invoke_sync(m, SyncResult(error, m.assignment, ptype, pname)):
                self._schedule_heartbeat(m, now_ms)

    def _remove_member_and_update_group(self, group: Group, member: Member, now_ms: int, reason: str) -> None:
        self._invoke_join(member, JoinResult(E.UNKNOWN_MEMBER_ID, ""))
        self._invoke_sync(member, SyncResult(E.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.is_(S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now_ms, reason)
        elif group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group, now_ms)

    def _reset_group(self, group: Group, now_ms: int, error: int = E.UNKNOWN_MEMBER_ID) -> None:
        """Put ``group`` in the safe state (Empty, no members, offsets kept) and answer its parked requests."""
        for m in group.reset_to_empty(now_ms):
            self._invoke_join(m, JoinResult(error, ""))
            self._invoke_sync(m, SyncResult(error))
        if not group.is_(S.DEAD):
            self._store_group(group, {}, now_ms)

    def contain_failure(self, group_id: str, now_ms: int, during: str) -> None:
        """Call from an ``except`` block: log the failure once with its traceback and reset that group only.
        A failure of the reset itself is logged and leaves the group as it is; it never propagates."""
        log.exception("group %s failed during %s; resetting it to Empty (its members must rejoin)",
                      group_id, during)
        group = self.groups.get(group_id)
        if group is None:
            return
        try:
            self._reset_group(group, now_ms)
        except Exception:
            log.exception("resetting group %s failed", group_id)

    def _store_group(self, group: Group, assignment: dict[str, bytes], now_ms: int) -> int:
        value = GroupValue(
            protocol_type=group.protocol_type or "", generation=group.generation_id,
            protocol=group.protocol_name, leader=group.leader_id if group.members else None,
            current_state_timestamp=group.state_timestamp,
            members=[MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                  m.rebalance_timeout_ms, m.session_timeout_ms,
                                  m.metadata(group.protocol_name) if group.protocol_name else b"",
                                  assignment.get(m.member_id, b""))
                     for m in group.members.values()],
        )
        try:
            self._append(self.partition_for(group.group_id),
                         [(encode_group_key(group.group_id), encode_group_value(value))])
        except Exception as exc:
            log.exception("failed to store metadata of group %s", group.group_id)
            return E.group_write_error(exc)
        return E.NONE

    # -- SyncGroup -----------------------------------------------------------------------------
    def sync_group(self, now_ms: int, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None, protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> Pending[SyncResult]:
        self.poll(now_ms)
        err = self._validate_group_status(group_id)
        if err == E.COORDINATOR_LOAD_IN_PROGRESS:
            # the rebalance state was lost with the old coordinator: make the member rejoin
            return Pending.completed(SyncResult(E.REBALANCE_IN_PROGRESS))
        if err is not None:
            return Pending.completed(SyncResult(err))
        group = self.groups.get(group_id)
        if group is None:
            return Pending.completed(SyncResult(E.UNKNOWN_MEMBER_ID))
        if group.is_(S.DEAD):
            return Pending.completed(SyncResult(E.COORDINATOR_NOT_AVAILABLE))
        err = self._validate_current_member(group, member_id, group_instance_id)
        if err is None:
            if generation_id != group.generation_id:
                err = E.ILLEGAL_GENERATION
            elif (protocol_type is not None and protocol_type != group.protocol_type) or (
                    protocol_name is not None and protocol_name != group.protocol_name):
                err = E.INCONSISTENT_GROUP_PROTOCOL
        if err is not None:
            return Pending.completed(SyncResult(err))
        if group.is_(S.EMPTY):
            return Pending.completed(SyncResult(E.UNKNOWN_MEMBER_ID))
        if group.is_(S.PREPARING_REBALANCE):
            return Pending.completed(SyncResult(E.REBALANCE_IN_PROGRESS))
        member = group.members[member_id]
        if group.is_(S.STABLE):
            group.pending_sync.discard(member_id)
            self._schedule_heartbeat(member, now_ms)
            return Pending.completed(SyncResult(E.NONE, member.assignment, group.protocol_type,
                                                group.protocol_name))
        # CompletingRebalance
        pending: Pending[SyncResult] = Pending()
        if member.sync_pending is not None:
            self._invoke_sync(member, SyncResult(E.REBALANCE_IN_PROGRESS))
        member.sync_pending = pending
        group.pending_sync.discard(member_id)
        if group.is_leader(member_id):
            full = {m: bytes(assignments.get(m, b"")) for m in group.members}
            err = self._store_group(group, full, now_ms)
            if group.is_(S.COMPLETING_REBALANCE) and generation_id == group.generation_id:
                if err != E.NONE:
                    self._reset_and_propagate_assignment_error(group, err, now_ms)
                    self._maybe_prepare_rebalance(group, now_ms, "failed to store the assignment")
                else:
                    for m in group.members.values():
                        m.assignment = full[m.member_id]
                    self._propagate_assignment(group, E.NONE, now_ms)
                    group.transition_to(S.STABLE, now_ms)
        if not group.pending_sync:
            group.sync_deadline = None
        return pending

    # -- Heartbeat / LeaveGroup ------------------------------------------------------------------
    def heartbeat(self, now_ms: int, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> int:
        self.poll(now_ms)
        err = self._validate_group_status(group_id)
        if err == E.COORDINATOR_LOAD_IN_PROGRESS:
            return E.NONE  # Kafka answers blindly while loading
        if err is not None:
            return err
        group = self.groups.get(group_id)
        if group is None:
            return E.UNKNOWN_MEMBER_ID
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        err = self._validate_current_member(group, member_id, group_instance_id)
        if err is not None:
            return err
        if generation_id != group.generation_id:
            return E.ILLEGAL_GENERATION
        if group.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group.members[member_id], now_ms)
        if group.is_(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def leave_group(self, now_ms: int, group_id: str,
                    members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """Members are (member_id, group_instance_id); returns (top-level error, per-member errors)."""
        self.poll(now_ms)
        err = self._validate_group_status(group_id)
        if err is not None:
            return err, []
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [E.UNKNOWN_MEMBER_ID for _ in members]
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE, []
        out = []
        for member_id, instance_id in members:
            if member_id == "":
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is None:
                    out.append(E.UNKNOWN_MEMBER_ID)
                    continue
                member_id = current
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
                self._try_complete_join(group, now_ms)
                out.append(E.NONE)
                continue
            else:
                e = self._validate_current_member(group, member_id, instance_id)
                if e is not None:
                    out.append(e)
                    continue
            log.info("member %s left group %s", member_id, group_id)
            self._remove_member_and_update_group(group, group.members[member_id], now_ms, "member left")
            out.append(E.NONE)
        return E.NONE, out

    # -- timers --------------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        best = self.next_offset_expiry
        for g in self.groups.values():
            for d in (g.join_deadline, g.sync_deadline, *g.pending_members.values(),
                      *(m.heartbeat_deadline for m in g.members.values())):
                if d is not None and (best is None or d < best):
                    best = d
        return best

    def poll(self, now_ms: int) -> None:
        """Fire every timer due at ``now_ms``."""
        if self.loading:
            return
        for group in list(self.groups.values()):
            try:
                self._poll_group(group, now_ms)
            except Exception:
                self.contain_failure(group.group_id, now_ms, "its timers")
        if self.next_offset_expiry is None:
            self.next_offset_expiry = now_ms + self.config.offsets_retention_check_interval_ms
        elif now_ms >= self.next_offset_expiry:
            self.next_offset_expiry = now_ms + self.config.offsets_retention_check_interval_ms
            self.expire_offsets(now_ms)

    def _poll_group(self, group: Group, now_ms: int) -> None:
        for mid, deadline in list(group.pending_members.items()):
            if now_ms >= deadline:
                del group.pending_members[mid]
                self._try_complete_join(group, now_ms)
        for member in list(group.members.values()):
            d = member.heartbeat_deadline
            if d is None or now_ms < d or group.members.get(member.member_id) is not member:
                continue
            if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
                member.heartbeat_deadline = None  # parked requests count as heartbeats
                continue
            log.info("member %s of group %s expired (session timeout)", member.member_id, group.group_id)
            member.heartbeat_deadline = None
            self._remove_member_and_update_group(group, member, now_ms, "session timeout")
        if group.join_deadline is not None and now_ms >= group.join_deadline and group.is_(S.PREPARING_REBALANCE):
            self._on_join_deadline(group, now_ms)
        if group.sync_deadline is not None and now_ms >= group.sync_deadline:
            group.sync_deadline = None
            if group.is_(S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync:
                for mid in list(group.pending_sync):
                    m = group.members.get(mid)
                    if m is not None:
                        self._invoke_sync(m, SyncResult(E.UNKNOWN_MEMBER_ID))
                        group.remove(mid)
                group.pending_sync.clear()
                self._prepare_rebalance(group, now_ms, "members did not send SyncGroup in time")
