"""Trio glue for the consumer group coordinator, owned by the classic :class:`GroupService`.

The classic service loads ``__consumer_offsets`` once and hands the consumer group records to
``ConsumerGroupCoordinator.load``; it runs this service's timer loop beside its own under the supervisor
(``consumer-group-coordinator.timers``). Records are appended through the classic service's ``_append`` (the
group's ``__consumer_offsets`` partition, created on first use). Offsets of consumer groups live with the
classic coordinator's offsets (the same OffsetCommit records), validated here first (member epochs).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkalite.coordinator.classic.group import JoinResult, SyncResult
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.internal_topics import TimerLoop
from kafkalite.coordinator.consumer.coordinator import (
    ConsumerConfig,
    ConsumerGroupCoordinator,
    HeartbeatResult,
)
from kafkalite.coordinator.consumer.migration import POLICIES, ClassicBridge
from kafkalite.coordinator.consumer.model import Assignment
from kafkalite_wire.errors import ErrorCode

log = logging.getLogger("kafkalite.coordinator.consumer")


def consumer_config(conf: Any) -> ConsumerConfig:
    cfg = ConsumerConfig()
    if conf is None or not hasattr(conf, "get"):
        return cfg
    cfg.heartbeat_interval_ms = int(conf.get("group.consumer.heartbeat.interval.ms") or cfg.heartbeat_interval_ms)
    cfg.session_timeout_ms = int(conf.get("group.consumer.session.timeout.ms") or cfg.session_timeout_ms)
    cfg.max_size = int(conf.get("group.consumer.max.size") or cfg.max_size)
    cfg.initial_epoch = 0 if getattr(conf, "release", "3.9") == "3.9" else 1
    policy = str(conf.get("group.consumer.migration.policy") or cfg.migration_policy).strip().lower()
    if policy in POLICIES:
        cfg.migration_policy = policy
    names = [a.strip() for a in str(conf.get("group.consumer.assignors") or "").split(",") if a.strip()]
    if names:
        cfg.assignors = tuple(names)
    return cfg


class ConsumerGroupService:
    def __init__(self, groups: Any) -> None:
        self.groups = groups
        state = groups.state
        self.coordinator = ConsumerGroupCoordinator(
            consumer_config(getattr(state, "config", None)), self._append, self._topics, self._classic_busy)
        self.coordinator.loading = True
        self.coordinator.classic_side = ClassicBridge(groups.coordinator)
        racks = getattr(state, "partition_racks", None)
        if callable(racks):   # a broker that knows its replicas' racks (several brokers with broker.rack)
            self.coordinator.partition_racks = racks
        lookup = getattr(state, "group_configs", None)
        if callable(lookup):   # the broker's group config store, when it has one
            self.coordinator.config.group_configs = lookup
        self.timers = TimerLoop(self)

    def now_ms(self) -> int:
        return int(self.groups.now_ms())

    def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        self.groups._append(self.groups.partition_for(group_id), records)

    def _topics(self) -> Any:
        return getattr(self.groups.state, "topics", {})

    def subscribed_topics(self, group_id: str) -> set[str]:
        """The topics a non-empty consumer group reads (their committed offsets must not expire)."""
        g = self.coordinator.groups.get(group_id)
        return set(g.topics) if g is not None and g.members else set()

    def subscribed_names(self, group_id: str) -> set[str] | None:
        """None when ``group_id`` is not a consumer group, else the topics its members subscribe to, by name or
        through a regex (Kafka's ConsumerGroup.isSubscribedToTopic, which OffsetDelete checks)."""
        g = self.coordinator.groups.get(group_id)
        return None if g is None else g.subscribed_names()

    def _classic_busy(self, group_id: str) -> bool:
        g = self.groups.coordinator.groups.get(group_id)
        return g is not None and bool(g.members)

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                        rack_id: str | None, rebalance_timeout_ms: int, topic_names: list[str] | None,
                        topic_regex: str | None, server_assignor: str | None, owned: Assignment | None,
                        client_id: str, client_host: str, version: int,
                        topic_filter: Callable[[set[str]], set[str]] | None = None) -> HeartbeatResult:
        await self.groups.ensure_offsets_topic_async()
        if group_id in self.groups.streams.coordinator.groups:   # a streams group's id (KIP-1071), as Kafka 4.4
            return HeartbeatResult(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        try:
            result = self.coordinator.heartbeat(self.now_ms(), group_id, member_id, member_epoch, instance_id,
                                                rack_id, rebalance_timeout_ms, topic_names, topic_regex,
                                                server_assignor, owned, client_id, client_host, version,
                                                topic_filter)
        except Exception:   # a bug in one group's handling: that request fails, the connection and group stay
            log.exception("consumer group %s: heartbeat of member %s failed", group_id, member_id)
            result = HeartbeatResult(int(ErrorCode.UNKNOWN_SERVER_ERROR), "internal error")
        self.timers.kick()
        return result

    # -- classic-protocol members of consumer groups (classic.py), routed here by GroupService --------------
    def serves_classic(self, group_id: str, joining: bool = False) -> bool:
        """True when a classic request for ``group_id`` belongs to a consumer group: JoinGroup when the group has
        members (an empty one converts back to classic), the other requests whenever it exists."""
        g = self.coordinator.groups.get(group_id)
        return g is not None and (bool(g.members) or not joining)

    def _classic_call(self, group_id: str, what: str, fn: Callable[[], Any], failed: Any) -> Any:
        if not self.coordinator.active:   # closing
            return failed(E.NOT_COORDINATOR)
        if self.coordinator.loading:
            return failed(E.COORDINATOR_LOAD_IN_PROGRESS)
        try:
            result = fn()
        except Exception:   # a bug in one group's handling: that request fails, the connection and group stay
            log.exception("consumer group %s: classic %s failed", group_id, what)
            result = failed(E.UNKNOWN_SERVER_ERROR)
        self.timers.kick()
        return result

    def classic_join(self, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                     client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                     protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinResult:
        return self._classic_call(group_id, "JoinGroup", lambda: self.coordinator.classic_join(
            self.now_ms(), group_id, member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
            session_timeout_ms, protocol_type, protocols, require_known_member_id),
            lambda code: JoinResult(code, member_id))

    def classic_sync(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                     protocol_type: str | None, protocol_name: str | None) -> SyncResult:
        return self._classic_call(group_id, "SyncGroup", lambda: self.coordinator.classic_sync(
            self.now_ms(), group_id, generation_id, member_id, instance_id, protocol_type, protocol_name),
            lambda code: SyncResult(E.REBALANCE_IN_PROGRESS if code == E.COORDINATOR_LOAD_IN_PROGRESS else code))

    def classic_heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> int:
        return self._classic_call(group_id, "Heartbeat", lambda: self.coordinator.classic_heartbeat(
            self.now_ms(), group_id, member_id, instance_id, generation_id),
            lambda code: E.NONE if code == E.COORDINATOR_LOAD_IN_PROGRESS else code)   # Kafka answers blindly

    def classic_leave(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        return self._classic_call(group_id, "LeaveGroup", lambda: self.coordinator.classic_leave(
            self.now_ms(), group_id, members), lambda code: (code, []))
