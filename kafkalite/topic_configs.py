"""Topic and broker config descriptions shared by CreateTopics, DescribeConfigs and the Alter*Configs APIs.

Config sources (DescribeConfigs v1+ ``ConfigSource``): 1 DYNAMIC_TOPIC_CONFIG (a topic override),
4 STATIC_BROKER_CONFIG (set in server.properties / overrides), 5 DEFAULT_CONFIG. Config types (v3+): 1 BOOLEAN,
2 STRING, 3 INT, 5 LONG, 6 DOUBLE, 7 LIST.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkalite.state import _BROKER_TO_TOPIC, BrokerState

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_LOGGER_RESOURCE = 8

DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# Kafka topic configs storage does not interpret but that Kafka accepts (kept and echoed back).
EXTRA_TOPIC_CONFIGS = frozenset({
    "message.downconversion.enable", "message.format.version", "message.timestamp.difference.max.ms",
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "local.retention.ms", "local.retention.bytes", "remote.storage.enable", "remote.log.copy.disable",
    "remote.log.delete.on.disable",
})

_TYPES = {bool: 1, str: 2, int: 5, float: 6}
_INT_NAMES = frozenset({"index.interval.bytes", "max.message.bytes", "min.insync.replicas", "segment.bytes",
                        "segment.index.bytes"})
_TOPIC_TO_BROKER = {v: k for k, v in _BROKER_TO_TOPIC.items()} | {"retention.ms": "log.retention.ms",
                                                                   "segment.ms": "log.roll.ms"}


# Kafka's ServerTopicConfigSynonyms: the broker settings that supply a topic config's default, in precedence order
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "preallocate": ("log.preallocate",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "min.insync.replicas": ("min.insync.replicas",),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    config_type: int
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, int], ...] = ()  # (name, value, source), winning one first

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


def known_topic_config(name: str) -> bool:
    from storage import LogConfig

    return name in LogConfig.names() or name in EXTRA_TOPIC_CONFIGS


def validate_topic_configs(state: BrokerState, overrides: Mapping[str, str | None]) -> str | None:
    """An error message if ``overrides`` has an unknown name or a bad value, else None."""
    for name in overrides:
        if not known_topic_config(name):
            return f"Unknown topic config name: {name}"
    try:
        state.log_config_for({k: v for k, v in overrides.items() if v is not None})
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _config_type(name: str, value: object) -> int:
    if name in _INT_NAMES:
        return 3
    if name == "cleanup.policy":
        return 7
    return _TYPES.get(type(value), 2)


def describe_topic(state: BrokerState, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    cfg = state.log_config_for(overrides)
    props = cfg.to_props()
    typed = {name: getattr(cfg, name.replace(".", "_"), None) for name in props}
    from kafkalite.config import DEFAULTS

    out = []
    for name, value in sorted(props.items()):
        syn: list[tuple[str, str | None, int]] = [(name, value, DYNAMIC_TOPIC_CONFIG)] if name in overrides else []
        broker_names = _SYNONYMS.get(name) or ((_TOPIC_TO_BROKER[name],) if name in _TOPIC_TO_BROKER else ())
        for bn in broker_names:
            if bn in state.config.values:
                syn.append((bn, state.config.values[bn], STATIC_BROKER_CONFIG))
            elif DEFAULTS.get(bn):
                syn.append((bn, DEFAULTS[bn], DEFAULT_CONFIG))
        source = syn[0][2] if syn else DEFAULT_CONFIG
        out.append(ConfigEntry(name, value, source, _config_type(name, typed.get(name)), synonyms=tuple(syn)))
    return out


def describe_broker(state: BrokerState) -> list[ConfigEntry]:
    from kafkalite.config import DEFAULTS

    out = []
    for name in sorted(set(DEFAULTS) | set(state.config.values)):
        value = state.config.get_str(name)
        source = STATIC_BROKER_CONFIG if name in state.config.values else DEFAULT_CONFIG
        out.append(ConfigEntry(name, value, source, 2, read_only=True))
    return out
