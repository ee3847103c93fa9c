"""DescribeConfigs (key 32): v0–v4.

Resources: TOPIC (2) — every topic config of the profile's Kafka release with its effective value and source (1
topic override, 2/3 dynamic broker setting, 4 static broker setting, 5 default); BROKER (4) — every broker config
the profile's Kafka release lists (3.9's, or 4.3's / 4.4's as captured from the real brokers), with
Kafka's sources, synonyms, types, sensitivity and read-only flags (``kafkalite.config.broker_describe``; resource
name = our node id, or "" for the cluster-wide dynamic defaults only); BROKER_LOGGER (8) — every logger of the
process with its level (``kafkalite.loggers``, Kafka's answers and messages);
GROUP (32) — every group config (``kafkalite.metadata.group_configs``): an override with source DYNAMIC_GROUP_CONFIG,
else the broker's default with DEFAULT_CONFIG, whether or not the group exists.
ConfigurationKeys (nullable) filters by name. A result without a message carries "" (never null), as Kafka's:
success, and an unknown topic (ConfigHelper sets no message there). v0 reports IsDefault instead of ConfigSource;
Synonyms (v1+) are returned when asked for (a topic config: its override, then the broker settings that give its default,
e.g. retention.ms -> log.retention.ms/.minutes/.hours where set, cut as Kafka cuts them; a broker config: itself);
ConfigType (v3+) carries the type; Documentation (v3+, IncludeDocumentation) a doc line per broker config.
Resources are described one by one in slices (``kafkalite.runtime.slices``): a request can name a million of them.
- Authorization: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for broker and broker-logger
  resources, on the cluster (CLUSTER_AUTHORIZATION_FAILED), or on the group (GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import Any

from kafkalite import authz, loggers
from kafkalite.config.describe import (
    BROKER_LOGGER_RESOURCE,
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    describe_broker,
    describe_topic,
)
from kafkalite.config.entries import ConfigEntry
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata.group_configs import GROUP_RESOURCE, describe_group
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeConfigsRequest, DescribeConfigsResponse

_Result = DescribeConfigsResponse.DescribeConfigsResult
_Entry = DescribeConfigsResponse.DescribeConfigsResourceResult


def _entry(e: ConfigEntry, synonyms: bool, documentation: bool, broker: bool) -> Any:
    # exactly Kafka's synonyms (possibly none: an unset log.retention.ms, a topic's retention.ms at its default)
    syn = [DescribeConfigsResponse.DescribeConfigsSynonym(name=n, value=v, source=s) for n, v, s in e.synonyms] \
        if synonyms else []
    return _Entry(name=e.name, value=e.value, read_only=e.read_only, is_default=e.is_default,
                  config_source=e.source, is_sensitive=e.sensitive, synonyms=syn, config_type=e.config_type,
                  documentation=e.documentation if documentation else None)


@handler(DescribeConfigsRequest, min_version=0, max_version=4)
async def describe_configs(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    state = ctx.broker
    synonyms = ctx.version >= 1 and bool(req.include_synonyms)
    documentation = ctx.version >= 3 and bool(req.include_documentation)
    results = []
    work = Slices()
    for r in req.resources:
        if work.due():
            await work.pause()
        entries: list[ConfigEntry] | None = None
        code, msg = authz.config_error(ctx, authz.Op.DESCRIBE_CONFIGS, r.resource_type, r.resource_name)
        if code:
            pass
        elif r.resource_type == TOPIC_RESOURCE:
            info = state.topics.get(r.resource_name)
            if info is None:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""   # Kafka's ConfigHelper sets no message
            else:
                entries = describe_topic(state, info.config)
        elif r.resource_type == BROKER_RESOURCE:
            if r.resource_name not in ("", str(state.node_id)):
                code, msg = ErrorCode.INVALID_REQUEST, f"Unexpected broker id {r.resource_name}"
            else:
                entries = describe_broker(state, r.resource_name)
        elif r.resource_type == BROKER_LOGGER_RESOURCE:
            code, msg = loggers.node_id_error(r.resource_name, state.node_id, describing=True)
            if code == ErrorCode.NONE:
                entries = [ConfigEntry(name=n, value=v, source=loggers.DYNAMIC_BROKER_LOGGER_CONFIG, config_type=0,
                                       documentation="") for n, v in loggers.describe(r.configuration_keys)]
        elif r.resource_type == GROUP_RESOURCE:
            code, msg, entries = describe_group(state, r.resource_name)
        else:
            code, msg = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}"
        configs = []
        if entries is not None:
            keys = set(r.configuration_keys) if r.configuration_keys else None
            broker = r.resource_type == BROKER_RESOURCE
            configs = [_entry(e, synonyms, documentation, broker) for e in entries if keys is None or e.name in keys]
        results.append(_Result(error_code=code, error_message="" if msg is None else msg, resource_type=r.resource_type,
                               resource_name=r.resource_name, configs=configs))
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)
