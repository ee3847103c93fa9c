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

from kafkalite.coordinator.consumer.coordinator import (
    ConsumerConfig,
    ConsumerGroupCoordinator,
    HeartbeatResult,
)
from kafkalite.coordinator.consumer.model import Assignment
from kafkalite.coordinator.internal_topics import TimerLoop
from wire.errors import ErrorCode

log = logging.getLogger("kafkalite.coordinator.consumer")


def consumer_config(conf: Any) -> ConsumerConfig:
    cfg = ConsumerConfig()
    if conf is None or not hasattr(conf, "get"):
        return cfg
    cfg.heartbeat_interval_ms = int(conf.get("group.consumer.heartbeat.interval.ms") or cfg.heartbeat_interval_ms)
    cfg.session_timeout_ms = int(conf.get("group.consumer.session.timeout.ms") or cfg.session_timeout_ms)
    cfg.max_size = int(conf.get("group.consumer.max.size") or cfg.max_size)
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

    def _classic_busy(self, group_id: str) -> bool:
        g = self.groups.coordinator.groups.get(group_id)
        return g is not None and bool(g.members)

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                        rack_id: str | None, rebalance_timeout_ms: int, topic_names: list[str] | None,
                        topic_regex: str | None, server_assignor: str | None, owned: Assignment | None,
                        client_id: str, client_host: str, version: int,
                        topic_filter: Callable[[set[str]], set[str]] | None = None) -> HeartbeatResult:
        await self.groups.ensure_offsets_topic_async()
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
