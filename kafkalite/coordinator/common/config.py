"""Group coordinator settings, named and defaulted as Kafka's broker configs.

Kafka default for ``group.initial.rebalance.delay.ms`` is 3000; kafkalite defaults to 0 (a single-node
development broker has no reason to wait for more members), configurable like the rest.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(slots=True)
class GroupConfig:
    group_min_session_timeout_ms: int = 6_000          # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1_800_000      # group.max.session.timeout.ms
    group_initial_rebalance_delay_ms: int = 0          # group.initial.rebalance.delay.ms (Kafka: 3000)
    group_max_size: int = 2**31 - 1                    # group.max.size
    offsets_retention_minutes: int = 10_080            # offsets.retention.minutes (7 days)
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    offsets_topic_num_partitions: int = 50             # offsets.topic.num.partitions
    offset_metadata_max_bytes: int = 4096              # offset.metadata.max.bytes
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024  # offsets.topic.segment.bytes

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def from_mapping(cls, conf: object) -> GroupConfig:
        """Build from any object carrying Kafka-style keys (dict with dotted names, or attributes)."""
        out = cls()
        for name in cls.__dataclass_fields__:
            dotted = name.replace("_", ".")
            val = None
            if isinstance(conf, dict):
                val = conf.get(dotted, conf.get(name))
            else:
                val = getattr(conf, name, None)
                if val is None and hasattr(conf, "get"):
                    try:
                        val = conf.get(dotted)
                    except Exception:
                        val = None
            if val is not None:
                with contextlib.suppress(TypeError, ValueError):
                    setattr(out, name, int(val))
        return out


