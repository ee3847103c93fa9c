"""Trio glue for the streams group coordinator, owned by the classic :class:`GroupService` (as the consumer
group service is): it runs the timer loop under the supervisor (``streams-group-coordinator.timers``), gives
the coordinator the broker's topics, and creates the internal topics (repartition, changelog) a configured
topology finds missing, with the partitions and configs the topology asks for, as Kafka's broker does. Offsets
of streams groups live with the classic coordinator's offsets, validated here first (member epochs)."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.internal_topics import TimerLoop, create_internal_topic
from kafkalite.coordinator.streams.coordinator import (
    HeartbeatRequest,
    HeartbeatResult,
    StreamsConfig,
    StreamsGroupCoordinator,
)
from kafkalite.coordinator.streams.topology import MISSING_INTERNAL_TOPICS

log = logging.getLogger("kafkalite.coordinator.streams")


def streams_config(conf: Any) -> StreamsConfig:
    cfg = StreamsConfig()
    if conf is None or not hasattr(conf, "get"):
        return cfg

    def num(key: str, default: int) -> int:
        try:
            v = conf.get(key)
        except KeyError:
            return default
        return int(v) if v not in (None, "") else default
    cfg.heartbeat_interval_ms = num("group.streams.heartbeat.interval.ms", cfg.heartbeat_interval_ms)
    cfg.session_timeout_ms = num("group.streams.session.timeout.ms", cfg.session_timeout_ms)
    cfg.num_standby_replicas = num("group.streams.num.standby.replicas", cfg.num_standby_replicas)
    cfg.max_standby_replicas = num("group.streams.max.standby.replicas", cfg.max_standby_replicas)
    cfg.max_size = num("group.streams.max.size", cfg.max_size)
    cfg.initial_rebalance_delay_ms = num("group.streams.initial.rebalance.delay.ms", cfg.initial_rebalance_delay_ms)
    return cfg


class StreamsGroupService:
    def __init__(self, groups: Any) -> None:
        self.groups = groups
        state = groups.state
        self.coordinator = StreamsGroupCoordinator(streams_config(getattr(state, "config", None)), self._other_group)
        lookup = getattr(state, "group_configs", None)
        if callable(lookup):
            self.coordinator.config.group_configs = lookup
        self.coordinator.write = self._append
        self.timers = TimerLoop(self)
        self._creating: set[str] = set()
        self._create_failed: set[str] = set()   # internal topics whose creation failed (logged once)

    def now_ms(self) -> int:
        return int(self.groups.now_ms())

    def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        self.groups._append(self.groups.partition_for(group_id), records)

    def _other_group(self, group_id: str) -> bool:
        """A group id another kind of group holds: a consumer group, a share group, or a classic group with
        members (an empty classic group, offsets only, becomes a streams group, as in Kafka)."""
        if group_id in self.groups.consumer.coordinator.groups or self.groups._is_share_group(group_id):
            return True
        g = self.groups.coordinator.groups.get(group_id)
        return g is not None and bool(g.members)

    def _topics(self) -> dict[str, int]:
        topics = getattr(self.groups.state, "topics", None) or {}
        return {name: info.partitions for name, info in topics.items()}

    async def heartbeat(self, req: HeartbeatRequest, may_create: Callable[[list[str]], list[str]] | None = None
                        ) -> HeartbeatResult:
        """``may_create``: the internal topics the caller is not allowed to create (CREATE denied)."""
        if not self.coordinator.active:
            return HeartbeatResult(E.NOT_COORDINATOR)
        if self.groups.coordinator.loading:
            return HeartbeatResult(E.COORDINATOR_LOAD_IN_PROGRESS)
        await self.groups.ensure_offsets_topic_async()
        try:
            res = self.coordinator.heartbeat(self.now_ms(), req, self._topics())
        except Exception:   # a bug in one group's handling: that request fails, the connection and group stay
            log.exception("streams group %s: heartbeat of member %s failed", req.group_id, req.member_id)
            res = HeartbeatResult(E.UNKNOWN_SERVER_ERROR, "internal error")
        self.timers.kick()
        if res.error_code or not res.create_topics:
            return res
        wanted = {n: w for n, w in res.create_topics.items() if n not in self._creating}
        denied = set(may_create(sorted(wanted))) if may_create is not None else set()
        if denied:
            res.statuses = [s for s in res.statuses or [] if s[0] != MISSING_INTERNAL_TOPICS] + [
                (MISSING_INTERNAL_TOPICS, f"Unauthorized to CREATE on topics {', '.join(sorted(denied))}.")]
        for name, (parts, _rf, cfg) in sorted(wanted.items()):
            if name in denied:
                continue
            self._creating.add(name)
            try:
                await create_internal_topic(self.groups.state, name, parts, cfg)
                log.info("streams group %s: created internal topic %s (%d partitions)", req.group_id, name, parts)
            except Exception:   # the topic stays missing (MISSING_INTERNAL_TOPICS); retried on the next heartbeat
                if name not in self._create_failed:   # logged once with its cause, not at every heartbeat
                    self._create_failed.add(name)
                    log.exception("streams group %s: creating internal topic %s failed", req.group_id, name)
            else:
                self._create_failed.discard(name)
            finally:
                self._creating.discard(name)
        self.coordinator.topics_changed(self.now_ms(), req.group_id, self._topics())
        self.timers.kick()
        return res
