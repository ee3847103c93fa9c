"""AlterConfigs (key 33): v0–v2.

TOPIC resources: the given configs *replace* all of the topic's overrides (legacy, non-incremental
semantics); unknown names or bad values answer INVALID_CONFIG. BROKER resources ("" = cluster default, or
our node id): the same replace semantics for the dynamic settings (the log.* defaults of topics); static-only
settings answer INVALID_REQUEST. GROUP resources (32): the given configs replace the group's overrides
(``kafkalite.metadata.group_configs``). ValidateOnly checks without applying. Everything persists across restarts.
Each resource is handled on its own (as Kafka does), in slices (``kafkalite.runtime.slices``): a 10 MB request can name
a million resources.
- Authorization: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or the cluster for broker resources
  (CLUSTER_AUTHORIZATION_FAILED), or the group (GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.config.describe import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    check_broker_configs,
    validate_topic_configs,
)
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import elr_configs
from kafkalite.metadata.group_configs import GROUP_RESOURCE, alter_group
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AlterConfigsRequest, AlterConfigsResponse

_Result = AlterConfigsResponse.AlterConfigsResourceResponse


@handler(AlterConfigsRequest, min_version=0, max_version=2)
async def alter_configs(ctx: RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse:
    state = ctx.broker
    results = []
    work = Slices()
    for r in req.resources:
        if work.due():
            await work.pause()
        code, msg = authz.config_error(ctx, authz.Op.ALTER_CONFIGS, r.resource_type, r.resource_name)
        if code:
            pass
        elif r.resource_type == TOPIC_RESOURCE:
            if r.resource_name not in state.topics:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{r.resource_name}' does not exist."
            else:
                overrides = {c.name: c.value for c in r.configs if c.value is not None}
                why = validate_topic_configs(state, overrides)
                if why is not None:
                    code, msg = ErrorCode.INVALID_CONFIG, why
                elif not req.validate_only:
                    min_isr = state.topics[r.resource_name].config.get(elr_configs.MIN_ISR)
                    state.topics.set_config(r.resource_name, overrides)
                    if overrides.get(elr_configs.MIN_ISR) != min_isr:
                        elr_configs.min_isr_altered(state, r.resource_name)
        elif r.resource_type == BROKER_RESOURCE:
            values = {c.name: c.value for c in r.configs if c.value is not None}
            code, msg = check_broker_configs(state, r.resource_name, values)
            if code == ErrorCode.NONE:   # the cluster-level min.insync.replicas ELR relies on (KIP-966)
                code, msg = elr_configs.alter_error(state, r.resource_name, values) or (code, msg)
            if code == ErrorCode.NONE and not req.validate_only:
                state.configs.set(r.resource_name, values)
                if elr_configs.MIN_ISR in values:   # Kafka writes every key again: each one is a change
                    elr_configs.min_isr_altered(state, None)
        elif r.resource_type == GROUP_RESOURCE:
            code, msg = alter_group(state, r.resource_name, {c.name: c.value for c in r.configs if c.value is not None},
                                    req.validate_only)
        elif r.resource_type == 8:   # BROKER_LOGGER: only IncrementalAlterConfigs changes loggers (Kafka's wording)
            code, msg = ErrorCode.INVALID_REQUEST, f"Unknown resource type {r.resource_type}"
        else:
            code, msg = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}"
        results.append(_Result(error_code=code, error_message=msg, resource_type=r.resource_type,
                               resource_name=r.resource_name))
    await state.group_config_store.flush()
    return AlterConfigsResponse(throttle_time_ms=0, responses=results)
