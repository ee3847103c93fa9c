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

import uuid

from kafkalite import authz
from kafkalite.handlers.describe_quorum import _directory_id
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import registrations
from kafkalite_storage.checkpoints import uuid_to_base64
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
    UnregisterBrokerRequest,
    UnregisterBrokerResponse,
    UnregisterControllerRequest,
    UnregisterControllerResponse,
)

#: metadata.version 4.4-IV2, the first that supports controller unregistration
#: (``MetadataVersion.isControllerUnregistrationSupported``)
CONTROLLER_UNREGISTRATION_MV = 33
ZERO_UUID = uuid.UUID(int=0)


def _replica_key(voter_id: int, directory_id: uuid.UUID) -> str:
    """Kafka's ``ReplicaKey.toString``: the zero directory id is no directory id."""
    shown = "<undefined>" if directory_id == ZERO_UUID else uuid_to_base64(directory_id)
    return f"ReplicaKey(id={voter_id}, directoryId={shown})"


def voters(ctx: RequestContext) -> list[tuple[int, uuid.UUID]]:
    """The voter set, as DescribeQuorum reports it (``describe_quorum``): this node, with its log dir's
    directory id (kafkalite keeps no metadata log to replicate to other voters)."""
    state = ctx.broker
    return [(state.node_id, _directory_id(str(state.log_dir)))]


def _kraft_version(ctx: RequestContext) -> int:
    """The finalized kraft.version ApiVersions reports (1, a dynamic quorum, in every 4.x profile)."""
    return ctx.broker.features.finalized().get("kraft.version", 0)


def _cluster_id_error(ctx: RequestContext, cluster_id: str | None) -> str | None:
    """``KafkaRaftClient.hasValidClusterId``: a null cluster id passes; any other must be this cluster's."""
    ours = ctx.broker.cluster_id
    if cluster_id is None or cluster_id == ours:
        return None
    return f'The given id "{cluster_id}" doesn\'t match the cluster id "{ours}"'


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


@handler(UnregisterControllerRequest, min_version=0, max_version=0)
async def unregister_controller(ctx: RequestContext,
                                req: UnregisterControllerRequest) -> UnregisterControllerResponse:
    """``QuorumController.unregisterController`` then ``ClusterControlManager.unregisterController``: the active
    controller may not unregister itself (INVALID_REQUEST), a metadata.version below 4.4-IV2 cannot
    (UNSUPPORTED_VERSION), an id that is not registered is CONTROLLER_ID_NOT_REGISTERED, each with Kafka's
    message. Every kafkalite node is a combined broker and controller; the active one is the cluster's
    controller (DescribeCluster's ControllerId)."""
    state = ctx.broker

    def answer(code: int, message: str) -> UnregisterControllerResponse:
        return UnregisterControllerResponse(throttle_time_ms=0, error_code=code, error_message=message)

    if authz.cluster_error(ctx, authz.Op.ALTER):
        return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if req.controller_id == state.placement.controller():
        return answer(ErrorCode.INVALID_REQUEST, "Controller cannot unregister itself while it is active.")
    if state.features.finalized().get("metadata.version", 0) < CONTROLLER_UNREGISTRATION_MV:
        return answer(ErrorCode.UNSUPPORTED_VERSION,
                      "The current MetadataVersion is too old to support controller unregistration.")
    nodes = state.placement.nodes()
    reg = registrations.of(state.metadata)
    if req.controller_id not in reg.registered_controllers(nodes):
        return answer(ErrorCode.CONTROLLER_ID_NOT_REGISTERED,
                      f"Controller ID {req.controller_id} is not currently registered.")
    if not nodes[req.controller_id]:
        reg.unregister_controller(req.controller_id)
    return answer(ErrorCode.NONE, "")


@handler(RemoveRaftVoterRequest, min_version=0, max_version=0)
async def remove_raft_voter(ctx: RequestContext, req: RemoveRaftVoterRequest) -> RemoveRaftVoterResponse:
    """``KafkaRaftClient.handleRemoveVoterRequest`` and ``RemoveVoterHandler``, in their order: the cluster id
    (INCONSISTENT_CLUSTER_ID), a valid voter key (an id >= 0 and a directory id: INVALID_REQUEST), kraft.version
    1 (UNSUPPORTED_VERSION), then the voter set without it, which must not be empty (VOTER_NOT_FOUND). With the
    one voter kafkalite has, every well-formed request ends there: the voter is not in the set, or it is the
    last one."""
    def answer(code: int, message: str | None) -> RemoveRaftVoterResponse:
        return RemoveRaftVoterResponse(throttle_time_ms=0, error_code=code, error_message=message)

    if authz.cluster_error(ctx, authz.Op.ALTER):
        return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if (why := _cluster_id_error(ctx, req.cluster_id)) is not None:
        return answer(ErrorCode.INCONSISTENT_CLUSTER_ID, why)
    if req.voter_id < 0 or req.voter_directory_id == ZERO_UUID:
        return answer(ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter")
    if (level := _kraft_version(ctx)) < 1:
        return answer(ErrorCode.UNSUPPORTED_VERSION,
                      f"Cluster doesn't support removing voter because the kraft.version feature is {level}")
    current = voters(ctx)
    # VoterSet.removeVoter: the key must match a voter's id and directory id, and a voter must remain
    listed = ", ".join(_replica_key(i, d) for i, d in current)
    return answer(ErrorCode.VOTER_NOT_FOUND, f"Cannot remove voter {_replica_key(req.voter_id, req.voter_directory_id)} "
                                             f"from the set of voters [{listed}]")
