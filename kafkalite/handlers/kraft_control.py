"""The KRaft controller's admin APIs a Kafka 4.x broker forwards to its controller, answered here as Kafka 4.4's
controller answers them (probed against the reference broker: one node formatted ``--standalone`` and the
harness's three-node static quorum):

- UnregisterBroker (key 64): v0 (``kafka-cluster unregister --id N``, ``Admin.unregisterBroker``).
- UnregisterController (key 94): v0 (4.4, KIP-1xxx's ``Admin.unregisterController``).
- AddRaftVoter (key 80): v0–v1, RemoveRaftVoter (key 81): v0 (KIP-853, ``kafka-metadata-quorum
  add-controller`` / ``remove-controller``).

Authorization (``ControllerApis``): ALTER on the cluster for all four, else CLUSTER_AUTHORIZATION_FAILED with
Kafka's default message ("Cluster authorization failed.").

The registered brokers and controllers are ``kafkalite.metadata.registrations``: every node of the cluster (a
single broker: itself), running or stopped, less the stopped ones unregistered. Kafka lets UnregisterBroker
remove a *running* broker too (NONE; the broker then drops out of Metadata until it restarts, and a lone node
leaves a cluster with no broker at all); kafkalite answers NONE and keeps it: a running kafkalite broker is
always registered (it has no registration to lose). The same holds for UnregisterController of a running
controller that is not the active one.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import registrations
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import UnregisterBrokerRequest, UnregisterBrokerResponse


@handler(UnregisterBrokerRequest, min_version=0, max_version=0)
async def unregister_broker(ctx: RequestContext, req: UnregisterBrokerRequest) -> UnregisterBrokerResponse:
    """``ClusterControlManager.unregisterBroker``: BROKER_ID_NOT_REGISTERED with Kafka's message for an id that
    is not registered, else the registration is removed (a stopped broker's; see the module's note)."""
    state = ctx.broker
    if authz.cluster_error(ctx, authz.Op.ALTER):
        return UnregisterBrokerResponse(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                        error_message=authz.CLUSTER_DENIED_MESSAGE)
    nodes = state.placement.nodes()
    reg = registrations.of(state.metadata)
    if req.broker_id not in reg.registered_brokers(nodes):
        return UnregisterBrokerResponse(throttle_time_ms=0, error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
                                        error_message=f"Broker ID {req.broker_id} is not currently registered")
    if not nodes[req.broker_id]:
        reg.unregister_broker(req.broker_id)
    return UnregisterBrokerResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="")
