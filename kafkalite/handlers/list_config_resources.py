"""ListConfigResources (key 74): v0–v1 (flexible; Kafka 4.1+, KIP-1142; v0 was 3.7-4.0's
ListClientMetricsResources with the same bytes).

Kafka's ``KafkaApis.handleListConfigResources``: v0 knows only CLIENT_METRICS (16); v1 TOPIC (2), BROKER (4),
BROKER_LOGGER (8), CLIENT_METRICS (16) and GROUP (32). An empty ResourceTypes list means every type the
version knows; a type it does not know answers UNSUPPORTED_VERSION with no resources. Resources are listed
type by type in Kafka's order: groups with configs, client-metrics subscriptions, the broker (as
BROKER_LOGGER and as BROKER, named by its id), then every topic (internal ones included). kafkalite has no
group configs and no client-metrics subscriptions, so those types list nothing.

Authorization (``KafkaApis.handleListConfigResources``): DESCRIBE_CONFIGS on the cluster, else a top-level
CLUSTER_AUTHORIZATION_FAILED and no resources, checked before the resource types.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ListConfigResourcesRequest, ListConfigResourcesResponse

R = ListConfigResourcesResponse
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@handler(ListConfigResourcesRequest, min_version=0, max_version=1)
async def list_config_resources(ctx: RequestContext, req: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
    state = ctx.broker
    if err := authz.cluster_error(ctx, authz.Op.DESCRIBE_CONFIGS):
        return R(throttle_time_ms=0, error_code=err, config_resources=[])
    supported = {CLIENT_METRICS} if ctx.version == 0 else {TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP}
    wanted = set(req.resource_types or []) if ctx.version >= 1 else set()
    if not wanted:
        wanted = supported
    if not wanted <= supported:
        return R(throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    out: list[R.ConfigResource] = []
    for rtype in (BROKER_LOGGER, BROKER):
        if rtype in wanted:
            out.append(R.ConfigResource(resource_name=str(state.node_id), resource_type=rtype))
    if TOPIC in wanted:
        out.extend(R.ConfigResource(resource_name=name, resource_type=TOPIC) for name in state.topics)
    return R(throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=out)
