"""Topic and broker config descriptions shared by CreateTopics, DescribeConfigs and the Alter*Configs APIs.

Config sources (DescribeConfigs v1+ ``ConfigSource``): 1 DYNAMIC_TOPIC_CONFIG (a topic override),
2 DYNAMIC_BROKER_CONFIG / 3 DYNAMIC_DEFAULT_BROKER_CONFIG (AlterConfigs on BROKER resource "<node id>" / ""),
4 STATIC_BROKER_CONFIG (set in server.properties / overrides), 5 DEFAULT_CONFIG. Config types (v3+): 1 BOOLEAN,
2 STRING, 3 INT, 5 LONG, 6 DOUBLE, 7 LIST.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafkalite.config.broker import DEFAULTS
from kafkalite.config.broker_describe import describe_broker_configs
from kafkalite.config.defs import TOPIC, check_topic_configs
from kafkalite.config.entries import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    ConfigEntry,
)
from kafkalite.config.topic_defs import BROKER_TO_TOPIC, DYNAMIC_BROKER_CONFIGS
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_LOGGER_RESOURCE = 8


# Kafka topic configs storage does not interpret but that Kafka accepts (kept and echoed back).
EXTRA_TOPIC_CONFIGS = frozenset({
    "message.downconversion.enable", "message.format.version",
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "local.retention.ms", "local.retention.bytes", "remote.storage.enable", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
})

_TYPES = {bool: 1, str: 2, int: 5, float: 6}
_INT_NAMES = frozenset({"index.interval.bytes", "max.message.bytes", "min.insync.replicas", "segment.bytes",
                        "segment.index.bytes"})
_TOPIC_TO_BROKER = {v: k for k, v in BROKER_TO_TOPIC.items()} | {"retention.ms": "log.retention.ms",
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
    "message.timestamp.difference.max.ms": ("log.message.timestamp.difference.max.ms",),
    "min.insync.replicas": ("min.insync.replicas",),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
}


def known_topic_config(name: str) -> bool:
    return name in TOPIC


def validate_topic_configs(state: BrokerState, overrides: Mapping[str, str | None]) -> str | None:
    """An error message if ``overrides`` has an unknown name or a bad value, else None.

    The one gate for topic configs: CreateTopics (also with validate_only), AlterConfigs and
    IncrementalAlterConfigs call it before anything is applied. Each value is checked against its
    definition (Kafka's type and range, ``kafkalite.config.defs.TOPIC``), then the whole set against
    storage's own rules on top of the broker's defaults, so nothing that passes here can fail later when
    the logs are created or reconfigured."""
    why = check_topic_configs(overrides)
    if why is not None:
        return why
    try:
        state.configs.log_config_for({k: v for k, v in overrides.items() if v is not None})
    except (ValueError, TypeError, OverflowError) as exc:
        return str(exc)
    return None


def _config_type(name: str, value: object) -> int:
    if name in _INT_NAMES:
        return 3
    if name == "cleanup.policy":
        return 7
    return _TYPES.get(type(value), 2)


def describe_topic(state: BrokerState, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    cfg = state.configs.log_config_for(overrides)
    props = cfg.to_props()
    typed = {name: getattr(cfg, name.replace(".", "_"), None) for name in props}
    out = []
    for name, value in sorted(props.items()):
        syn: list[tuple[str, str | None, int]] = [(name, value, DYNAMIC_TOPIC_CONFIG)] if name in overrides else []
        broker_names = _SYNONYMS.get(name) or ((_TOPIC_TO_BROKER[name],) if name in _TOPIC_TO_BROKER else ())
        for bn in broker_names:
            syn += _broker_synonyms(state, bn, DEFAULTS)
        source = syn[0][2] if syn else DEFAULT_CONFIG
        out.append(ConfigEntry(name, value, source, _config_type(name, typed.get(name)), synonyms=tuple(syn)))
    return out


def _broker_synonyms(state: BrokerState, name: str, defaults: Mapping[str, str]) -> list[tuple[str, str | None, int]]:
    """Where broker setting ``name`` has a value, highest precedence first (Kafka's DynamicBrokerConfig order)."""
    out: list[tuple[str, str | None, int]] = []
    dyn = state.configs.by_resource
    for where, source in ((str(state.node_id), DYNAMIC_BROKER_CONFIG), ("", DYNAMIC_DEFAULT_BROKER_CONFIG)):
        if name in dyn.get(where, {}):
            out.append((name, dyn[where][name], source))
    if name in state.config.values:
        out.append((name, state.config.values[name], STATIC_BROKER_CONFIG))
    elif defaults.get(name):
        out.append((name, defaults[name], DEFAULT_CONFIG))
    return out


def describe_broker(state: BrokerState, resource: str | None = None) -> list[ConfigEntry]:
    """Every broker config as Kafka 3.9 lists it (``kafkalite.config.broker_describe``); ``resource`` "" lists only
    the cluster-wide dynamic defaults."""
    return describe_broker_configs(state.node_id, state.config.values, state.configs.by_resource,
                                   DYNAMIC_BROKER_CONFIGS, per_broker=resource != "")


def check_broker_configs(state: BrokerState, resource: str, values: Mapping[str, str]) -> tuple[int, str | None]:
    """(error code, message) for making ``values`` the dynamic settings of BROKER ``resource``."""
    if resource not in ("", str(state.node_id)):
        return ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {state.node_id} or empty string"
    for name in values:
        if name not in DEFAULTS and name not in DYNAMIC_BROKER_CONFIGS:
            return ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {name}"
    static = sorted(n for n in values if n not in DYNAMIC_BROKER_CONFIGS)
    if static:
        return ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: {', '.join(static)}"
    try:
        state.configs.check(resource, values)
    except ValueError as exc:
        return ErrorCode.INVALID_CONFIG, f"Invalid value for broker config: {exc}"
    return ErrorCode.NONE, None
