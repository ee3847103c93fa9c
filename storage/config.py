"""Per-topic log configuration with Kafka's topic-config names and defaults.

`LogConfig.from_props({"segment.bytes": "1048576", ...})` accepts the string or int values AlterConfigs /
CreateTopics carry; `to_props()` gives them back under Kafka's names (DescribeConfigs). Unknown keys are kept
in `extra` so the broker can echo them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000
DEFAULT_INDEX_BYTES = 10 * 1024 * 1024

# Kafka name -> (attribute, type)
_NAMES: dict[str, tuple[str, type]] = {
    "segment.bytes": ("segment_bytes", int),
    "segment.ms": ("segment_ms", int),
    "segment.jitter.ms": ("segment_jitter_ms", int),
    "segment.index.bytes": ("segment_index_bytes", int),
    "index.interval.bytes": ("index_interval_bytes", int),
    "max.message.bytes": ("max_message_bytes", int),
    "message.timestamp.type": ("message_timestamp_type", str),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", int),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", int),
    "message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", int),
    "flush.messages": ("flush_messages", int),
    "flush.ms": ("flush_ms", int),
    "retention.ms": ("retention_ms", int),
    "retention.bytes": ("retention_bytes", int),
    "cleanup.policy": ("cleanup_policy", str),
    "compression.type": ("compression_type", str),
    "min.insync.replicas": ("min_insync_replicas", int),
    "delete.retention.ms": ("delete_retention_ms", int),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", int),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", int),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float),
    "file.delete.delay.ms": ("file_delete_delay_ms", int),
    "preallocate": ("preallocate", bool),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", bool),
}

LONG_MAX = 2**63 - 1
# lower bounds Kafka's LogConfig puts on numeric topic configs
_AT_LEAST = {"segment.jitter.ms": 0, "flush.messages": 1, "flush.ms": 0, "retention.ms": -1,
             "delete.retention.ms": 0, "min.compaction.lag.ms": 0, "max.compaction.lag.ms": 1,
             "file.delete.delay.ms": 0, "min.insync.replicas": 1, "message.timestamp.before.max.ms": 0,
             "message.timestamp.after.max.ms": 0, "message.timestamp.difference.max.ms": 0}
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log settings; field defaults are Kafka 3.9's."""

    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = DEFAULT_INDEX_BYTES
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_difference_max_ms: int = LONG_MAX   # deprecated; fallback for before/after (Kafka 3.6+)
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_ms: int = DEFAULT_SEGMENT_MS
    retention_bytes: int = -1
    cleanup_policy: str = "delete"
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60000
    preallocate: bool = False
    unclean_leader_election_enable: bool = False
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """Retention applies (Kafka's LogConfig.delete); an empty cleanup.policy means neither."""
        return "delete" in self.cleanup_policy

    @classmethod
    def names(cls) -> list[str]:
        """Kafka config names this class understands."""
        return list(_NAMES)

    @classmethod
    def from_props(cls, props: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        """Build from Kafka-named properties, layered over `base` (default: Kafka defaults)."""
        kwargs: dict[str, Any] = {}
        extra: dict[str, str] = dict(base.extra) if base is not None else {}
        for key, raw in props.items():
            if raw is None:
                continue
            spec = _NAMES.get(key)
            if spec is None:
                extra[key] = str(raw)
                continue
            attr, typ = spec
            kwargs[attr] = _convert(key, raw, typ)
        cfg = dataclasses.replace(base if base is not None else cls(), extra=extra, **kwargs)
        cfg.check()
        return cfg

    def check(self) -> None:
        if self.segment_bytes < 14:
            raise ValueError("segment.bytes must be at least 14")
        if self.segment_index_bytes < 12:
            raise ValueError("segment.index.bytes must be at least 12")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ValueError(f"invalid message.timestamp.type {self.message_timestamp_type!r}")
        if self.segment_ms < 1 or self.max_message_bytes < 0 or self.index_interval_bytes < 0:
            raise ValueError("invalid segment.ms, max.message.bytes or index.interval.bytes")
        for key, low in _AT_LEAST.items():  # Kafka's ConfigDef validators, with its wording
            v = getattr(self, _NAMES[key][0])
            if v < low:
                raise ValueError(f"Invalid value {v} for configuration {key}: Value must be at least {low}")
        if not 0 <= self.min_cleanable_dirty_ratio <= 1:
            raise ValueError(f"Invalid value {self.min_cleanable_dirty_ratio} for configuration "
                             "min.cleanable.dirty.ratio: Value must be no more than 1")
        # an empty list is valid (Kafka's ValidList checks each element): no deletion, no compaction
        bad = [p for p in self.cleanup_policy.split(",") if p.strip() and p.strip() not in ("compact", "delete")]
        if bad:
            raise ValueError(f"Invalid value {self.cleanup_policy} for configuration cleanup.policy: "
                             "String must be one of: compact, delete")
        if self.compression_type not in _COMPRESSION_TYPES:
            raise ValueError(f"Invalid value {self.compression_type} for configuration compression.type: "
                             f"String must be one of: {', '.join(_COMPRESSION_TYPES)}")

    def to_props(self) -> dict[str, str]:
        """Kafka-named string values (DescribeConfigs), including unknown keys passed in."""
        out: dict[str, str] = {}
        for key, (attr, _typ) in _NAMES.items():
            v = getattr(self, attr)
            out[key] = str(v).lower() if isinstance(v, bool) else str(v)
        out.update(self.extra)
        return out


def _convert(key: str, raw: Any, typ: type) -> Any:
    try:
        if typ is bool:
            if isinstance(raw, bool):
                return raw
            s = str(raw).strip().lower()
            if s not in ("true", "false"):
                raise ValueError(s)
            return s == "true"
        if typ is int:
            return int(str(raw).strip())
        if typ is float:
            return float(str(raw).strip())
        return str(raw).strip()
    except ValueError as exc:
        raise ValueError(f"invalid value {raw!r} for {key}") from exc
