"""IncrementalAlterConfigs (key 44): v0–v1.

TOPIC resources, per config: SET (0) sets the override, DELETE (1) removes it (back to the default),
APPEND (2) / SUBTRACT (3) add to / remove from a list-valued config (cleanup.policy and the other
comma-separated ones). Unknown names, bad values, or list operations on non-list configs answer
INVALID_CONFIG; the same name twice in one resource answers INVALID_REQUEST. BROKER resources ("" = cluster
default, or our node id) take the same operations on the dynamic settings (the log.* topic defaults, applied
to every log at once and persisted); static-only settings answer INVALID_REQUEST. GROUP resources (32) take
SET / DELETE on the group configs (``kafkalite.metadata.group_configs``: Kafka 4.3's names, bounds and messages; APPEND /
SUBTRACT answer INVALID_CONFIG, none is a list), persisted once per request. BROKER_LOGGER resources (8, our node
id) take SET / DELETE of a logger's level (``kafkalite.loggers``: in memory, as Kafka). ValidateOnly checks without
applying.
- Authorization: ALTER_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or the cluster for broker resources
  (CLUSTER_AUTHORIZATION_FAILED), or the group (GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kafkalite import authz, loggers
from kafkalite.config.describe import (
    BROKER_LOGGER_RESOURCE,
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    check_broker_configs,
    validate_topic_configs,
)
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import elr_configs
from kafkalite.metadata.group_configs import GROUP_RESOURCE, alter_group
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

_Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
BROKER_LIST_CONFIGS = frozenset({"log.cleanup.policy"})
LIST_CONFIGS = frozenset({"cleanup.policy", "follower.replication.throttled.replicas",
                          "leader.replication.throttled.replicas"}) | BROKER_LIST_CONFIGS


def _apply(current: dict[str, str], configs: list, defaults: dict[str, str]) -> tuple[ErrorCode, str | None]:
    seen: set[str] = set()
    for c in configs:
        if c.name in seen:
            return ErrorCode.INVALID_REQUEST, f"Duplicate config {c.name} in request"
        seen.add(c.name)
        if c.config_operation == SET:
            if c.value is None:
                return ErrorCode.INVALID_CONFIG, f"Null value not supported for {c.name}"
            current[c.name] = c.value
        elif c.config_operation == DELETE:
            current.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            if c.name not in LIST_CONFIGS:
                op = "APPEND" if c.config_operation == APPEND else "SUBTRACT"
                return ErrorCode.INVALID_CONFIG, f"Can't {op} to key {c.name} because its type is not LIST."
            base = current.get(c.name, defaults.get(c.name, ""))
            items = [x for x in base.split(",") if x]
            for v in (c.value or "").split(","):
                v = v.strip()
                if not v:
                    continue
                if c.config_operation == APPEND and v not in items:
                    items.append(v)
                elif c.config_operation == SUBTRACT and v in items:
                    items.remove(v)
            current[c.name] = ",".join(items)
        else:
            return ErrorCode.INVALID_REQUEST, f"Unknown config operation {c.config_operation}"
    return ErrorCode.NONE, None


@handler(IncrementalAlterConfigsRequest, min_version=0, max_version=1)
async def incremental_alter_configs(ctx: RequestContext,
                                    req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    state = ctx.broker
    results = []
    for r in req.resources:
        code, msg = authz.config_error(ctx, authz.Op.ALTER_CONFIGS, r.resource_type, r.resource_name)
        if code:
            pass
        elif r.resource_type == TOPIC_RESOURCE:
            info = state.topics.get(r.resource_name)
            if info is None:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{r.resource_name}' does not exist."
            else:
                updated = dict(info.config)
                code, msg = _apply(updated, list(r.configs), state.configs.default_log_config.to_props())
                if code == ErrorCode.NONE:
                    why = validate_topic_configs(state, updated)
                    if why is not None:
                        code, msg = ErrorCode.INVALID_CONFIG, why
                    elif not req.validate_only:
                        min_isr = info.config.get(elr_configs.MIN_ISR)
                        state.topics.set_config(r.resource_name, updated)
                        if updated.get(elr_configs.MIN_ISR) != min_isr:
                            elr_configs.min_isr_altered(state, r.resource_name)
        elif r.resource_type == BROKER_RESOURCE:
            current = dict(state.configs.by_resource.get(r.resource_name, {}))
            effective = state.configs.effective()
            code, msg = _apply(current, list(r.configs), {k: effective.get_str(k) for k in BROKER_LIST_CONFIGS})
            if code == ErrorCode.NONE:
                code, msg = check_broker_configs(state, r.resource_name, current)
                if code == ErrorCode.NONE:   # the cluster-level min.insync.replicas ELR relies on (KIP-966)
                    code, msg = elr_configs.alter_error(state, r.resource_name, current) or (code, msg)
                if code == ErrorCode.NONE and not req.validate_only:
                    state.configs.set(r.resource_name, current)
                    if any(c.name == elr_configs.MIN_ISR for c in r.configs):
                        elr_configs.min_isr_altered(state, None)
        elif r.resource_type == BROKER_LOGGER_RESOURCE:
            code, msg = loggers.node_id_error(r.resource_name, state.node_id, describing=False)
            if code == ErrorCode.NONE:
                code, msg = loggers.alter(list(r.configs), req.validate_only)
        elif r.resource_type == GROUP_RESOURCE:
            ops = list(r.configs)
            code, msg = alter_group(state, r.resource_name, None, req.validate_only,
                                    lambda current, ops=ops: _apply(current, ops, {}))
        else:
            code, msg = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}"
        results.append(_Result(error_code=code, error_message=msg, resource_type=r.resource_type,
                               resource_name=r.resource_name))
    await state.group_config_store.flush()
    return IncrementalAlterConfigsResponse(throttle_time_ms=0, responses=results)
