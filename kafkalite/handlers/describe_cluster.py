"""DescribeCluster (key 60): v0–v2 (v1 must be offered: kafka-python 3.0's describe_cluster() breaks on v0 only).
v2 (KIP-1073) may ask for fenced brokers too and marks each broker IsFenced: a running kafkalite broker is never
fenced; a stopped broker of a cluster is, as a Kafka broker after its controlled shutdown, until UnregisterBroker
removes its registration (``kafkalite.metadata.registrations``).

One broker, which is also reported as the controller. EndpointType (v1+): 1 = brokers (answered), 2 = controllers:
MISMATCHED_ENDPOINT_TYPE (this is a broker endpoint; clients must ask a controller's, and we have none separately),
any other UNSUPPORTED_ENDPOINT_TYPE, each with Kafka's message and the response's defaults (AuthHelper).
- Authorized operations (when asked): the principal's cluster operations, 0 without DESCRIBE on the cluster.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import registrations
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeClusterRequest, DescribeClusterResponse


@handler(DescribeClusterRequest, min_version=0, max_version=2)
async def describe_cluster(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    state = ctx.broker
    endpoint_type = req.endpoint_type if ctx.version >= 1 else 1
    if endpoint_type != 1:
        if endpoint_type == 2:
            code, msg = (ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                         "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
        else:
            code, msg = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"
        return DescribeClusterResponse(throttle_time_ms=0, error_code=code, error_message=msg, endpoint_type=1,
                                       cluster_id="", controller_id=-1, brokers=[])
    brokers = [DescribeClusterResponse.DescribeClusterBroker(broker_id=n, host=h, port=p, rack=None)
               for n, h, p in state.placement.brokers(ctx.listener)]   # the running ones, in a cluster
    if ctx.version >= 2 and req.include_fenced_brokers:
        registered = registrations.of(state.metadata).registered_brokers(state.placement.nodes())
        brokers += [DescribeClusterResponse.DescribeClusterBroker(broker_id=n, host=h, port=p, rack=None, is_fenced=True)
                    for n, h, p in state.placement.stopped_brokers(ctx.listener) if n in registered]
        brokers.sort(key=lambda x: x.broker_id)
    controller = state.placement.controller()
    return DescribeClusterResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, endpoint_type=1,
        cluster_id=state.cluster_id, controller_id=controller,
        brokers=brokers,
        cluster_authorized_operations=((authz.cluster_ops(ctx) if authz.cluster_allowed(ctx, authz.Op.DESCRIBE)
                                        else 0) if req.include_cluster_authorized_operations else -2147483648))
