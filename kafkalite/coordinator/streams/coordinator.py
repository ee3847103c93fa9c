"""The streams group coordinator: a pure state machine (``now`` is an argument; ``poll``/``next_deadline`` drive
its timers), as Kafka's ``GroupMetadataManager.streamsGroupHeartbeat`` and ``StreamsGroup``.

A heartbeat:

1. is validated (INVALID_REQUEST with Kafka's messages: an empty group or member id, a join without topology,
   process id or rebalance timeout, or with tasks; an epoch below -2);
2. joins (epoch 0), leaves (-1; -2 for a static member, which keeps its tasks for its instance id until its
   session times out), or checks the epoch (greater: FENCED_MEMBER_EPOCH; the previous one is accepted when the
   member owns nothing it was not given, the lost-response case; else FENCED_MEMBER_EPOCH; unknown member:
   UNKNOWN_MEMBER_ID);
3. takes the topology from the first member (a member with an older topology epoch gets STALE_TOPOLOGY; a newer
   one while other members run the old one is STREAMS_INVALID_TOPOLOGY_EPOCH);
4. configures the topology against the broker's topics when they change (``topology.configure``) and bumps the
   group epoch when tasks, members or their processes change; a new target assignment is computed for a new
   group epoch (``assignor.assign``);
5. reconciles the member: active tasks leaving it are revoked first (UNREVOKED_TASKS, epoch unchanged); then it
   moves to the target epoch with the target's tasks, less active tasks still held by others (UNRELEASED_TASKS
   until they are released).

Session timeouts and revocations that outlast the member's rebalance timeout fence the member.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.streams import records as REC
from kafkalite.coordinator.streams import topology as T
from kafkalite.coordinator.streams.assignor import assign
from kafkalite.coordinator.streams.model import (
    STABLE,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    StreamsGroup,
    StreamsMember,
    Subtopology,
    TaskMap,
    Tasks,
    Topology,
    copy_tasks,
    intersect,
    minus,
    normal,
)
from kafkalite_wire.errors import ErrorCode

log = logging.getLogger("kafkalite.coordinator.streams")

INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)
FENCED_MEMBER_EPOCH = int(ErrorCode.FENCED_MEMBER_EPOCH)
STALE_MEMBER_EPOCH = int(ErrorCode.STALE_MEMBER_EPOCH)
ILLEGAL_GENERATION = int(ErrorCode.ILLEGAL_GENERATION)
GROUP_ID_NOT_FOUND = int(ErrorCode.GROUP_ID_NOT_FOUND)
UNRELEASED_INSTANCE_ID = int(ErrorCode.UNRELEASED_INSTANCE_ID)
GROUP_MAX_SIZE_REACHED = int(ErrorCode.GROUP_MAX_SIZE_REACHED)
STREAMS_INVALID_TOPOLOGY = int(ErrorCode.STREAMS_INVALID_TOPOLOGY)
STREAMS_INVALID_TOPOLOGY_EPOCH = int(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH)
LEAVE, LEAVE_STATIC = -1, -2


class HeartbeatError(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class StreamsConfig:
    heartbeat_interval_ms: int = 5_000       # group.streams.heartbeat.interval.ms
    session_timeout_ms: int = 45_000         # group.streams.session.timeout.ms
    num_standby_replicas: int = 0            # group.streams.num.standby.replicas
    max_standby_replicas: int = 2            # group.streams.max.standby.replicas
    max_size: int = 2**31 - 1                # group.streams.max.size
    initial_rebalance_delay_ms: int = 3_000  # group.streams.initial.rebalance.delay.ms
    acceptable_recovery_lag: int = 10_000    # streams.acceptable.recovery.lag
    task_offset_interval_ms: int = 60_000    # streams.task.offset.interval.ms
    group_configs: Callable[[str], Mapping[str, str]] | None = None

    def group_int(self, group_id: str, key: str, default: int) -> int:
        """A per-group override (IncrementalAlterConfigs on the GROUP resource), else ``default``."""
        overrides = self.group_configs(group_id) if self.group_configs is not None else None
        if overrides and overrides.get(key) is not None:
            with contextlib.suppress(TypeError, ValueError):
                return int(overrides[key])
        return default


@dataclass
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: TaskMap | None = None
    standby_tasks: TaskMap | None = None
    warmup_tasks: TaskMap | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] | None = None
    shutdown_application: bool = False
    task_offsets: list[tuple[str, int, int]] | None = None
    task_end_offsets: list[tuple[str, int, int]] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class HeartbeatResult:
    error_code: int = 0
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    acceptable_recovery_lag: int = 0
    task_offset_interval_ms: int = 0
    statuses: list[tuple[int, str]] | None = None
    tasks: Tasks | None = None
    endpoint_information_epoch: int = 0
    #: (host, port) -> (active partitions, standby partitions) as {topic: [partitions]}
    endpoints: list[tuple[tuple[str, int], dict[str, set[int]], dict[str, set[int]]]] | None = None
    #: internal topics the service should create: name -> (partitions, replication factor, configs)
    create_topics: dict[str, tuple[int, int, dict[str, str]]] = field(default_factory=dict)


class StreamsGroupCoordinator:
    def __init__(self, config: StreamsConfig | None = None,
                 other_group: Callable[[str], bool] | None = None) -> None:
        self.config = config or StreamsConfig()
        self.groups: dict[str, StreamsGroup] = {}
        #: True when the group id belongs to another kind of group (classic, consumer, share)
        self.other_group = other_group or (lambda _g: False)
        self.loading = False
        self.active = True
        #: appends records to the group's ``__consumer_offsets`` partition (None: nothing is persisted)
        self.write: Callable[[str, list[tuple[bytes, bytes | None]]], None] | None = None
        self._written: dict[str, dict[bytes, bytes]] = {}
        self._write_failed: set[str] = set()   # groups whose last write failed (logged once)

    # -- persistence -----------------------------------------------------------------------------------------
    def persist(self, group_id: str) -> None:
        """Write what changed in the group since its last write (records.diff); a deleted group's tombstones."""
        if self.write is None:
            return
        g = self.groups.get(group_id)
        after = REC.group_records(g) if g is not None else {}
        before = self._written.get(group_id, {})
        out = REC.diff(before, after)
        if not out:
            return
        try:
            self.write(group_id, out)
        except Exception:   # the state stays in memory; the next change writes the difference again
            if group_id not in self._write_failed:   # logged once with its cause until a write succeeds again
                self._write_failed.add(group_id)
                log.exception("streams group %s: writing its records failed", group_id)
            return
        self._write_failed.discard(group_id)
        if after:
            self._written[group_id] = after
        else:
            self._written.pop(group_id, None)

    def load(self, records: list[tuple[bytes, bytes | None]], now: int) -> None:
        try:
            self.groups, self._written = REC.load(records, now, self.config.session_timeout_ms)
        except Exception:   # damaged records: the other groups' coordinators and the broker still start
            log.exception("streams groups: their records could not be read back; starting without them")
            self.groups, self._written = {}, {}

    # -- heartbeat -------------------------------------------------------------------------------------------
    def heartbeat(self, now: int, req: HeartbeatRequest, topics: Mapping[str, int]) -> HeartbeatResult:
        try:
            _validate(req)
            res = self._heartbeat(now, req, topics)
            self.persist(req.group_id)
            return res
        except HeartbeatError as e:
            return HeartbeatResult(e.code, e.message)
        except T.InvalidTopology as e:
            return HeartbeatResult(STREAMS_INVALID_TOPOLOGY, str(e))

    def _session_ms(self, gid: str) -> int:
        return self.config.group_int(gid, "streams.session.timeout.ms", self.config.session_timeout_ms)

    def _heartbeat(self, now: int, req: HeartbeatRequest, topics: Mapping[str, int]) -> HeartbeatResult:
        gid = req.group_id
        group = self.groups.get(gid)
        if group is None:
            if self.other_group(gid):
                raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Group {gid} is not a streams group.")
            if req.member_epoch != 0:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID if req.member_epoch > 0 else GROUP_ID_NOT_FOUND,
                                     f"Streams group {gid} not found.")
            group = self.groups[gid] = StreamsGroup(gid)
            delay = self.config.group_int(gid, "streams.initial.rebalance.delay.ms",
                                          self.config.initial_rebalance_delay_ms)
            if delay > 0:   # the first assignment waits for more members (Kafka's streamsInitialRebalanceKey timer)
                group.initial_delay_until = now + delay
        if req.member_epoch in (LEAVE, LEAVE_STATIC):
            return self._leave(now, group, req)

        member = group.members.get(req.member_id)
        bump = False
        if req.member_epoch == 0:
            member, bump = self._join(now, group, req, member)
        elif member is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {gid}.")
        else:
            self._check_epoch(member, req)
        if req.active_tasks is not None:
            member.owned_active = copy_tasks(req.active_tasks)

        statuses: list[tuple[int, str]] = []
        if req.topology is not None:
            bump |= self._take_topology(group, member, req.topology)
        if group.topology is not None and member.topology_epoch < group.topology.epoch:
            statuses.append((T.STALE_TOPOLOGY, f"The member's topology epoch {member.topology_epoch} is behind the "
                             f"group's topology epoch {group.topology.epoch}."))
        bump |= _update_member(group, member, req)

        create = self._configure(group, topics)
        if create is not None:
            bump = True
        if bump:
            group.group_epoch += 1
        target_epoch, target = group.target_epoch, group.target.get(member.member_id, Tasks())
        if group.group_epoch > group.target_epoch or group.initial_delay_until is not None:
            if group.initial_delay_until is not None and now < group.initial_delay_until:
                # the first members get an empty assignment at epoch max(1, assignment epoch) meanwhile
                group.target_epoch = target_epoch = max(1, group.target_epoch)
                group.target, target = {}, Tasks()
                statuses.append((T.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial "
                                 "rebalance delay."))
            else:
                group.initial_delay_until = None
                self._maybe_assign(group)
                target_epoch, target = group.target_epoch, group.target.get(member.member_id, Tasks())
        if group.configured is not None:
            statuses += group.configured.statuses
        if group.shutdown_requested:
            statuses.append((T.SHUTDOWN_APPLICATION, "A KafkaStreams instance encountered a fatal error and "
                             "requested a shutdown for the entire application."))
        before = (member.member_epoch, member.assigned.copy())
        self._reconcile(now, group, member, target_epoch, target)
        member.session_deadline_ms = now + self._session_ms(gid)

        changed = req.member_epoch == 0 or before != (member.member_epoch, member.assigned)
        if changed and group.members and any(m.user_endpoint for m in group.members.values()):
            group.endpoint_information_epoch += 1 if req.member_epoch != 0 or before[1] != member.assigned else 0
        res = HeartbeatResult(
            member_id=member.member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.config.group_int(gid, "streams.heartbeat.interval.ms",
                                                        self.config.heartbeat_interval_ms),
            acceptable_recovery_lag=self.config.group_int(gid, "streams.acceptable.recovery.lag",
                                                          self.config.acceptable_recovery_lag),
            task_offset_interval_ms=self.config.group_int(gid, "streams.task.offset.interval.ms",
                                                          self.config.task_offset_interval_ms),
            statuses=statuses, tasks=member.assigned.copy() if changed else None,
            endpoint_information_epoch=group.endpoint_information_epoch,
            create_topics=dict(group.configured.internal_to_create) if group.configured else {})
        if member.user_endpoint is not None and req.endpoint_information_epoch < group.endpoint_information_epoch:
            res.endpoints = self._endpoints(group)
        return res

    def _join(self, now: int, group: StreamsGroup, req: HeartbeatRequest,
              member: StreamsMember | None) -> tuple[StreamsMember, bool]:
        gid = group.group_id
        if member is not None:   # a member rejoining under its id: it starts over, owning nothing
            member.member_epoch, member.previous_member_epoch, member.state = 0, -1, STABLE
            member.assigned, member.pending_revocation, member.owned_active = Tasks(), Tasks(), None
            return member, False
        old: StreamsMember | None = None
        if req.instance_id is not None:
            oid = group.static.get(req.instance_id)
            old = group.members.get(oid) if oid is not None else None
            if old is not None and old.member_epoch != LEAVE_STATIC:
                raise HeartbeatError(UNRELEASED_INSTANCE_ID, f"Static member {old.member_id} with instance id "
                                     f"{req.instance_id} is not released yet.")
        max_size = self.config.group_int(gid, "streams.max.size", self.config.max_size)
        if old is None and len(group.members) >= max_size:
            raise HeartbeatError(GROUP_MAX_SIZE_REACHED, f"The streams group has reached its maximum capacity of "
                                 f"{max_size} members.")
        member = StreamsMember(req.member_id, instance_id=req.instance_id,
                               rebalance_timeout_ms=req.rebalance_timeout_ms)
        if old is not None:   # a static member back: it takes its predecessor's place and tasks
            del group.members[old.member_id]
            member.member_epoch, member.previous_member_epoch = old.previous_member_epoch, -1
            member.assigned, member.process_id = old.assigned, old.process_id
            member.topology_epoch = old.topology_epoch
            if old.member_id in group.target:
                group.target[req.member_id] = group.target.pop(old.member_id)
            group.members[req.member_id] = member
            group.static[req.instance_id or ""] = req.member_id
            member.member_epoch = group.target_epoch if group.target_epoch else 0
            return member, False
        group.members[req.member_id] = member
        if req.instance_id is not None:
            group.static[req.instance_id] = req.member_id
        return member, True

    def _check_epoch(self, member: StreamsMember, req: HeartbeatRequest) -> None:
        got = req.member_epoch
        if got == member.member_epoch:
            return
        if got < member.member_epoch and got == member.previous_member_epoch:
            owned = req.active_tasks
            if owned is None or not minus(owned, member.assigned.active):
                return
        raise HeartbeatError(FENCED_MEMBER_EPOCH, "The streams group member has a "
                             f"{'greater' if got > member.member_epoch else 'smaller'} member epoch ({got}) than "
                             f"the one known by the group coordinator ({member.member_epoch}). The member must "
                             "abandon all its partitions and rejoin.")

    def _take_topology(self, group: StreamsGroup, member: StreamsMember, topo: Topology) -> bool:
        T.validate(topo)
        member.topology_epoch = topo.epoch
        cur = group.topology
        if cur is None or (cur.epoch < topo.epoch and set(group.members) == {member.member_id}):
            group.topology, group.metadata_signature = topo, None
            return True
        if topo.epoch > cur.epoch:
            raise HeartbeatError(STREAMS_INVALID_TOPOLOGY_EPOCH, f"Topology epoch {topo.epoch} is greater than the "
                                 f"group's topology epoch {cur.epoch} while other members run it.")
        return False

    def _configure(self, group: StreamsGroup, topics: Mapping[str, int]) -> dict[str, Any] | None:
        """Re-configure the topology when the topics it reads changed; not None when the tasks changed."""
        if group.topology is None:
            return None
        names = set()
        for s in group.topology.subtopologies:
            names.update(s.source_topics)
            names.update(n for n, *_ in s.repartition_source_topics)
            names.update(n for n, *_ in s.state_changelog_topics)
        regex = any(s.source_topic_regex for s in group.topology.subtopologies)
        sig = tuple(sorted((t, n) for t, n in topics.items() if t in names or (regex and not t.startswith("__"))))
        if sig == group.metadata_signature and group.configured is not None:
            return None
        group.metadata_signature = sig
        before = group.configured.tasks if group.configured is not None else None
        group.configured = T.configure(group.topology, topics)
        if group.reconfigure_bumped:   # topics_changed bumped the epoch for this already
            group.reconfigure_bumped = False
            return None
        return {} if group.configured.tasks != before else None

    def _maybe_assign(self, group: StreamsGroup) -> None:
        if group.target_epoch == group.group_epoch:
            return
        tasks = group.configured.tasks if group.configured is not None and group.configured.ready else {}
        standby = min(self.config.group_int(group.group_id, "streams.num.standby.replicas",
                                            self.config.num_standby_replicas), self.config.max_standby_replicas)
        live = {m: x for m, x in group.members.items() if x.member_epoch != LEAVE_STATIC or x.instance_id}
        group.target = assign(live, tasks, standby, {m: x.assigned for m, x in group.members.items()})
        group.target_epoch = group.group_epoch
        log.debug("streams group %s: target assignment at epoch %d: %s", group.group_id, group.target_epoch,
                  {m: (normal(t.active), normal(t.standby)) for m, t in group.target.items()})

    def _reconcile(self, now: int, group: StreamsGroup, member: StreamsMember, target_epoch: int,
                   target: Tasks) -> None:
        owned = member.owned_active if member.owned_active is not None else member.assigned.active
        if member.state == UNREVOKED_TASKS:
            if intersect(owned, member.pending_revocation.active):
                return   # still owns tasks it must give up
        elif member.member_epoch == target_epoch and member.state == STABLE:
            return
        revoke = minus(member.assigned.active, target.active)
        if revoke and intersect(owned, revoke) and member.state != UNREVOKED_TASKS:
            member.assigned = Tasks(intersect(member.assigned.active, target.active), copy_tasks(target.standby),
                                    copy_tasks(target.warmup))
            member.pending_revocation = Tasks(active=revoke)
            member.state = UNREVOKED_TASKS
            member.revocation_deadline_ms = now + max(member.rebalance_timeout_ms, 0)
            return
        others = group.owner_of_active(member.member_id)
        new_active = {s: {p for p in ps if (s, p) not in others} for s, ps in target.active.items()}
        new_active = {s: ps for s, ps in new_active.items() if ps}
        unreleased = minus(target.active, new_active)
        if member.member_epoch != target_epoch:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, target_epoch
        member.assigned = Tasks(new_active, copy_tasks(target.standby), copy_tasks(target.warmup))
        member.pending_revocation = Tasks()
        member.revocation_deadline_ms = None
        member.state = UNRELEASED_TASKS if unreleased else STABLE

    def _leave(self, now: int, group: StreamsGroup, req: HeartbeatRequest) -> HeartbeatResult:
        member = group.members.get(req.member_id)
        if member is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                 f"{group.group_id}.")
        if req.member_epoch == LEAVE_STATIC and member.instance_id is not None:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, LEAVE_STATIC
            member.session_deadline_ms = now + self._session_ms(group.group_id)
        else:
            self._remove(group, member.member_id)
        return HeartbeatResult(member_id=req.member_id, member_epoch=req.member_epoch, acceptable_recovery_lag=-1)

    def _remove(self, group: StreamsGroup, member_id: str) -> None:
        m = group.members.pop(member_id, None)
        if m is None:
            return
        if m.instance_id is not None and group.static.get(m.instance_id) == member_id:
            del group.static[m.instance_id]
        group.target.pop(member_id, None)
        group.group_epoch += 1
        if not group.members:
            group.shutdown_requested = False
        if m.user_endpoint is not None:
            group.endpoint_information_epoch += 1
        if group.initial_delay_until is None:
            self._maybe_assign(group)

    def _endpoints(self, group: StreamsGroup) -> list[tuple[tuple[str, int], dict[str, set[int]],
                                                            dict[str, set[int]]]]:
        inputs = group.configured.inputs if group.configured is not None else {}

        def parts(tasks: TaskMap) -> dict[str, set[int]]:
            out: dict[str, set[int]] = {}
            for s, ps in tasks.items():
                for t in inputs.get(s, []):
                    out.setdefault(t, set()).update(ps)
            return out
        return [(m.user_endpoint, parts(m.assigned.active), parts({**m.assigned.standby, **m.assigned.warmup}))
                for _mid, m in sorted(group.members.items()) if m.user_endpoint is not None]

    def topics_changed(self, now: int, group_id: str, topics: Mapping[str, int]) -> None:
        """The broker's topics changed under a group (its internal topics were just created): as Kafka does on a
        new metadata image, the group epoch is bumped at once, and the topology is configured again on the
        group's next heartbeat (without a second bump)."""
        group = self.groups.get(group_id)
        if group is None or group.topology is None:
            return
        group.group_epoch += 1
        group.metadata_signature = None
        group.reconfigure_bumped = True
        self.persist(group_id)

    # -- timers ----------------------------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        ds = [d for g in self.groups.values() for m in g.members.values()
              for d in (m.session_deadline_ms, m.revocation_deadline_ms) if d is not None]
        ds += [g.initial_delay_until for g in self.groups.values() if g.initial_delay_until is not None]
        return min(ds) if ds else None

    def poll(self, now: int) -> None:
        for group in list(self.groups.values()):
            if group.initial_delay_until is not None and group.initial_delay_until <= now:
                # the delay is over: a new group epoch, and its target assignment computed now (the members
                # that reconciled to the delay's empty assignment move on to it)
                group.initial_delay_until = None
                if group.members:
                    group.group_epoch += 1
                    self._maybe_assign(group)
                    self.persist(group.group_id)
            for mid, m in list(group.members.items()):
                expired = m.session_deadline_ms <= now
                stuck = m.revocation_deadline_ms is not None and m.revocation_deadline_ms <= now
                if expired or stuck:
                    log.info("streams group %s: member %s fenced (%s)", group.group_id, mid,
                             "session timeout" if expired else "revocation timeout")
                    self._remove(group, mid)
                    self.persist(group.group_id)

    # -- offsets (StreamsGroup.validateOffsetCommit / validateOffsetFetch) ------------------------------------
    def offset_commit_error(self, group_id: str, member_id: str, member_epoch: int,
                            transactional: bool = False) -> int | None:
        """None when ``group_id`` is not a streams group, else the code (0 = accepted)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if member_epoch < 0 and not group.members:
            return 0
        if transactional and member_epoch == -1 and member_id == "":
            return 0
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if member_epoch == member.member_epoch:
            return 0
        return ILLEGAL_GENERATION if transactional else STALE_MEMBER_EPOCH

    def offset_fetch_error(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        group = self.groups.get(group_id)
        if group is None or (member_epoch < 0 and member_id is None):
            return 0
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return 0 if member_epoch == member.member_epoch else STALE_MEMBER_EPOCH

    # -- admin -----------------------------------------------------------------------------------------------
    def list_groups(self, states: set[str], types: set[str]) -> list[dict[str, str]]:
        if types and "streams" not in types:
            return []
        return [{"group_id": g.group_id, "protocol_type": "streams", "group_state": g.state(),
                 "group_type": "streams"}
                for g in self.groups.values() if not states or g.state().lower() in states]

    def delete_group(self, group_id: str) -> int | None:
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return E.NON_EMPTY_GROUP
        del self.groups[group_id]
        self.persist(group_id)
        return 0


def _update_member(group: StreamsGroup, member: StreamsMember, req: HeartbeatRequest) -> bool:
    """Take the member's fields the heartbeat sent (null: unchanged); True when its process changed (an input of
    the assignment)."""
    bump = False
    if req.process_id is not None and req.process_id != member.process_id:
        member.process_id, bump = req.process_id, True
    if req.rack_id is not None:
        member.rack_id = req.rack_id
    if req.rebalance_timeout_ms > 0:
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
    if req.client_tags is not None:
        member.client_tags = dict(req.client_tags)
    if req.user_endpoint is not None and req.user_endpoint != member.user_endpoint:
        member.user_endpoint = req.user_endpoint
        group.endpoint_information_epoch += 1
    if req.shutdown_application:
        group.shutdown_requested = True
    if req.task_offsets is not None:
        member.task_offsets = list(req.task_offsets)
    if req.task_end_offsets is not None:
        member.task_end_offsets = list(req.task_end_offsets)
    member.client_id, member.client_host = req.client_id or member.client_id, req.client_host or member.client_host
    return bump


def _validate(req: HeartbeatRequest) -> None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures and
    throwIfStreamsGroupHeartbeatRequestIsInvalid, in their order and words."""
    def bad(msg: str) -> HeartbeatError:
        return HeartbeatError(INVALID_REQUEST, msg)
    if req.topology is not None and any(s.source_topic_regex for s in req.topology.subtopologies):
        raise bad("Regular expressions for source topics are not supported yet.")
    for value, what in ((req.member_id, "MemberId"), (req.group_id, "GroupId"), (req.instance_id, "InstanceId"),
                        (req.rack_id, "RackId")):
        if value is not None and not value.strip():
            raise bad(f"{what} can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise bad("RebalanceTimeoutMs must be provided in first request.")
        for tasks, what in ((req.active_tasks, "ActiveTasks"), (req.standby_tasks, "StandbyTasks"),
                            (req.warmup_tasks, "WarmupTasks")):
            if tasks is None or any(tasks.values()):
                raise bad(f"{what} must be empty when (re-)joining.")
        if req.topology is None:
            raise bad("Topology must be non-null when (re-)joining.")
        for s in req.topology.subtopologies:
            for name, parts, *_ in s.state_changelog_topics:
                if parts != 0:
                    raise T.InvalidTopology(f"Changelog topic {name} must have an undefined partition count, but "
                                            f"it is set to {parts}.")
    elif req.member_epoch == LEAVE_STATIC and req.instance_id is None:
        raise bad("InstanceId can't be null.")
    elif req.member_epoch < LEAVE_STATIC:
        raise bad(f"MemberEpoch is {req.member_epoch}, but must be greater than or equal to -2.")
    given = [t is not None for t in (req.active_tasks, req.standby_tasks, req.warmup_tasks)]
    if any(given) and not all(given):
        raise bad("If one task-type is non-null, all must be non-null.")
    if req.member_epoch != 0 and req.topology is not None:
        raise bad("Topology can only be provided when (re-)joining.")


def topology_from(subtopologies: list[Subtopology], epoch: int) -> Topology:
    return Topology(epoch, subtopologies)
