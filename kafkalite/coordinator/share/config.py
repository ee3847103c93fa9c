"""Share group settings: the broker's ``group.share.*`` defaults, overridden per group by Kafka's group configs
(``share.record.lock.duration.ms``, ``share.delivery.count.limit``, ``share.partition.max.record.locks``,
``share.session.timeout.ms``, ``share.heartbeat.interval.ms``, ``share.auto.offset.reset``,
``share.isolation.level`` — set with IncrementalAlterConfigs on a GROUP resource where the broker keeps
group configs). ``share.auto.offset.reset`` and ``share.isolation.level`` have no broker-level setting in
Kafka; kafkalite's ``kafkalite.share.auto.offset.reset`` / ``kafkalite.share.isolation.level`` give the value
for groups without one (Kafka's defaults: latest, read_uncommitted); the first takes the group config's values,
``by_duration:<ISO-8601 duration>`` included (``reset.broker_default_error`` checks it at broker start)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kafkalite.coordinator.share.partition import Limits

STATE_TOPIC = "__share_group_state"

#: broker settings kafkalite reads that Kafka 3.9 did not have yet (its share coordinator came in 4.0)
KAFKA_4_BROKER_CONFIGS = frozenset({
    "group.share.max.share.sessions", "share.coordinator.state.topic.num.partitions",
    "share.coordinator.state.topic.segment.bytes", "share.coordinator.snapshot.update.records.per.snapshot",
    "share.coordinator.state.topic.prune.interval.ms", "share.coordinator.cold.partition.snapshot.interval.ms",
})

_GROUP_KEYS = {
    "share.record.lock.duration.ms": "lock_ms",
    "share.delivery.count.limit": "delivery_limit",
    "share.partition.max.record.locks": "max_locks",
    "share.session.timeout.ms": "session_timeout_ms",
    "share.heartbeat.interval.ms": "heartbeat_interval_ms",
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
    "errors.deadletterqueue.topic.name": "dlq_topic",
    "errors.deadletterqueue.copy.record.enable": "dlq_copy",
}


@dataclass(frozen=True, slots=True)
class GroupSettings:
    lock_ms: int = 30_000
    delivery_limit: int = 5
    max_locks: int = 2000
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    auto_offset_reset: str = "latest"
    isolation_level: str = "read_uncommitted"
    dlq_topic: str = ""              # errors.deadletterqueue.topic.name (KIP-1191; blank: no DLQ)
    dlq_copy: str = "false"          # errors.deadletterqueue.copy.record.enable

    @property
    def limits(self) -> Limits:
        return Limits(self.lock_ms, self.delivery_limit, self.max_locks)

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"


@dataclass(slots=True)
class ShareConfig:
    defaults: GroupSettings = GroupSettings()
    max_group_size: int = 200
    max_sessions: int = 2000
    state_partitions: int = 50
    state_segment_bytes: int = 100 * 1024 * 1024
    updates_per_snapshot: int = 500
    prune_interval_ms: int = 300_000
    cold_snapshot_interval_ms: int = 300_000
    group_configs: Callable[[str], Mapping[str, str]] | None = None   # the broker's group config store
    #: the epoch a new group starts at (Kafka 4.1+: 1, ModernGroup; the first member's join bumps it to 2)
    initial_epoch: int = 0

    @classmethod
    def from_broker(cls, conf: Any) -> ShareConfig:
        def get(key: str, default: Any) -> Any:
            val = conf.get(key) if conf is not None else None
            if val is None:
                return default
            if isinstance(default, int):
                with contextlib.suppress(TypeError, ValueError):
                    return int(val)
                return default
            return str(val)

        d = GroupSettings()
        defaults = GroupSettings(
            get("group.share.record.lock.duration.ms", d.lock_ms),
            get("group.share.delivery.count.limit", d.delivery_limit),
            get("group.share.partition.max.record.locks", d.max_locks),
            get("group.share.session.timeout.ms", d.session_timeout_ms),
            get("group.share.heartbeat.interval.ms", d.heartbeat_interval_ms),
            get("kafkalite.share.auto.offset.reset", d.auto_offset_reset),
            get("kafkalite.share.isolation.level", d.isolation_level))
        return cls(defaults, get("group.share.max.size", 200), get("group.share.max.share.sessions", 2000),
                   get("share.coordinator.state.topic.num.partitions", 50),
                   get("share.coordinator.state.topic.segment.bytes", 100 * 1024 * 1024),
                   get("share.coordinator.snapshot.update.records.per.snapshot", 500),
                   get("share.coordinator.state.topic.prune.interval.ms", 300_000),
                   get("share.coordinator.cold.partition.snapshot.interval.ms", 300_000),
                   initial_epoch=0 if getattr(conf, "release", "3.9") == "3.9" else 1)

    def for_group(self, group_id: str) -> GroupSettings:
        overrides = self.group_configs(group_id) if self.group_configs is not None else None
        if not overrides:
            return self.defaults
        changes: dict[str, Any] = {}
        for key, attr in _GROUP_KEYS.items():
            val = overrides.get(key)
            if val is None:
                continue
            if isinstance(getattr(self.defaults, attr), int):
                with contextlib.suppress(TypeError, ValueError):
                    changes[attr] = int(val)
            else:   # validated (and kept) exactly as Kafka takes them: case-sensitive
                changes[attr] = str(val)
        return replace(self.defaults, **changes)
