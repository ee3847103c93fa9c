"""Topic and broker config descriptions shared by CreateTopics, DescribeConfigs and the Alter*Configs APIs.

Config sources (DescribeConfigs v1+ ``ConfigSource``): 1 DYNAMIC_TOPIC_CONFIG (a topic override),
2 DYNAMIC_BROKER_CONFIG / 3 DYNAMIC_DEFAULT_BROKER_CONFIG (AlterConfigs on BROKER resource "<node id>" / ""),
4 STATIC_BROKER_CONFIG (set in server.properties / overrides), 5 DEFAULT_CONFIG. Config types (v3+): 1 BOOLEAN,
2 STRING, 3 INT, 5 LONG, 6 DOUBLE, 7 LIST.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafkalite.config.broker_describe import default_of, describe_broker_configs, synonyms_of
from kafkalite.config.defs import check_topic_configs, topic_defs
from kafkalite.config.entries import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    ConfigEntry,
)
from kafkalite.config.topic_defs import DYNAMIC_BROKER_CONFIGS, INTERNAL_SEGMENT_BYTES
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_LOGGER_RESOURCE = 8


_TYPE_IDS = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7, "class": 8,
             "password": 9}

# Kafka's ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS: a topic config -> the broker setting that gives its
# default (the first of its synonyms; the others follow from broker_describe.synonyms_of, e.g. log.retention.ms
# -> .minutes, .hours). Topic configs without one (throttled replicas, remote.storage.enable, ...) list none.
_PRIMARY: dict[str, str] = {
    "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms", "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.index.bytes": "log.index.size.max.bytes", "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms", "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms", "max.message.bytes": "message.max.bytes",
    "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio", "cleanup.policy": "log.cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "min.insync.replicas": "min.insync.replicas", "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level", "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level", "preallocate": "log.preallocate",
    "message.format.version": "log.message.format.version",
    "message.downconversion.enable": "log.message.downconversion.enable",
    "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "local.retention.ms": "log.local.retention.ms", "local.retention.bytes": "log.local.retention.bytes",
    "remote.copy.lag.ms": "log.remote.copy.lag.ms", "remote.copy.lag.bytes": "log.remote.copy.lag.bytes",
    "max.decompressed.message.bytes": "max.decompressed.message.bytes",
}


def known_topic_config(name: str, release: str = "3.9") -> bool:
    return name in topic_defs(release)


def validate_topic_configs(state: BrokerState, overrides: Mapping[str, str | None]) -> str | None:
    """An error message if ``overrides`` has an unknown name or a bad value, else None.

    The one gate for topic configs: CreateTopics (also with validate_only), AlterConfigs and
    IncrementalAlterConfigs call it before anything is applied. Each value is checked against its
    definition (Kafka's type and range for the profile's release, ``kafkalite.config.defs.topic_defs``), then
    the whole set against storage's own rules on top of the broker's defaults, so nothing that passes here can
    fail later when the logs are created or reconfigured."""
    why = check_topic_configs(overrides, state.config.release)
    if why is not None:
        return why
    try:
        state.configs.log_config_for({k: v for k, v in overrides.items() if v is not None})
    except (ValueError, TypeError, OverflowError) as exc:
        return str(exc)
    return None


def describe_topic(state: BrokerState, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config of the profile's release, as Kafka's ``ConfigHelper.createTopicConfigEntry`` lists it:
    the effective value (the override, else the broker setting behind it, else the default); synonyms: the
    override (DYNAMIC_TOPIC_CONFIG), then the broker settings behind the default level by level (dynamic
    per-broker, dynamic cluster default, static, default) cut before the first one named as the primary
    (``dropWhile``: retention.ms lists nothing while log.retention.ms is unset, even with log.retention.hours
    at its default); the source is the first synonym's, DEFAULT_CONFIG when there is none."""
    release = state.config.release
    defs = topic_defs(release)
    shown = {k: v for k, v in overrides.items() if k != INTERNAL_SEGMENT_BYTES}
    props = state.configs.log_config_for(shown).to_props()   # the values storage applies
    effective = state.configs.effective()
    out = []
    for name, d in defs.items():
        if name == INTERNAL_SEGMENT_BYTES and name not in overrides:
            continue   # internal: listed only when set
        primary = _PRIMARY.get(name)
        if name in props:
            value: str | None = props[name]
        elif name in overrides:
            value = overrides[name]
        else:
            value = (effective.get(primary) or None) if primary else None
            if value is None and primary:
                value = default_of(primary, release)
            if value is None:
                value = d.default
        if d.type == "boolean" and value is not None:
            value = value.strip().lower()
        syn: list[tuple[str, str | None, int]] = [(name, value, DYNAMIC_TOPIC_CONFIG)] if name in overrides else []
        if primary is not None:
            syn += _broker_synonyms(state, primary, release)
        source = syn[0][2] if syn else DEFAULT_CONFIG
        out.append(ConfigEntry(name, value, source, _TYPE_IDS.get(d.type, 2), synonyms=tuple(syn)))
    return out


def _broker_synonyms(state: BrokerState, primary: str, release: str) -> list[tuple[str, str | None, int]]:
    """Kafka's ``configSynonyms(primary, brokerConfigSynonyms(primary))``: level by level, then ``dropWhile``."""
    names = synonyms_of(primary)
    dyn = state.configs.by_resource
    levels: list[tuple[Mapping[str, str], int]] = [
        (dyn.get(str(state.node_id), {}), DYNAMIC_BROKER_CONFIG), (dyn.get("", {}), DYNAMIC_DEFAULT_BROKER_CONFIG),
        (state.config.values, STATIC_BROKER_CONFIG)]
    out: list[tuple[str, str | None, int]] = []
    for values, source in levels:
        out += [(n, values[n], source) for n in names if n in values]
    for n in names:
        default = default_of(n, release)
        if default is not None:
            out.append((n, default, DEFAULT_CONFIG))
    while out and out[0][0] != primary:
        out.pop(0)
    return out


def describe_broker(state: BrokerState, resource: str | None = None) -> list[ConfigEntry]:
    """Every broker config as the profile's Kafka release lists it (``kafkalite.config.broker_describe``);
    ``resource`` "" lists only the cluster-wide dynamic defaults."""
    return describe_broker_configs(state.node_id, state.config.values, state.configs.by_resource,
                                   DYNAMIC_BROKER_CONFIGS, per_broker=resource != "", release=state.config.release)


def check_broker_configs(state: BrokerState, resource: str, values: Mapping[str, str]) -> tuple[int, str | None]:
    """(error code, message) for making ``values`` the dynamic settings of BROKER ``resource``."""
    if resource not in ("", str(state.node_id)):
        return ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {state.node_id} or empty string"
    for name in values:
        if name not in state.config.defaults:
            return ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {name}"
    static = sorted(n for n in values if n not in DYNAMIC_BROKER_CONFIGS)
    if static:
        return ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: [{', '.join(static)}]"
    try:
        state.configs.check(resource, values)
    except ValueError as exc:
        return ErrorCode.INVALID_CONFIG, f"Invalid value for broker config: {exc}"
    return ErrorCode.NONE, None
