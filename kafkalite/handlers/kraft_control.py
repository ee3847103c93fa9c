"""The KRaft controller's admin APIs a Kafka 4.x broker forwards to its controller, answered here as Kafka 4.4's
controller answers them (probed against the reference broker: one node formatted ``--standalone`` and the
harness's three-node static quorum):

- UnregisterBroker (key 64): v0 (``kafka-cluster unregister --id N``, ``Admin.unregisterBroker``).
- UnregisterController (key 94): v0 (new in Kafka 4.4; its spec is in the 4.5.0-SNAPSHOT specs).
- AddRaftVoter (key 80): v0–v1, RemoveRaftVoter (key 81): v0 (KIP-853, ``kafka-metadata-quorum
  add-controller`` / ``remove-controller``).

Authorization (``ControllerApis``): ALTER on the cluster for all four, else CLUSTER_AUTHORIZATION_FAILED with
Kafka's default message ("Cluster authorization failed.").

The registered brokers and controllers are ``kafkalite.metadata.registrations``: every node of the cluster (a
single broker: itself), running or stopped, less the stopped ones unregistered. Kafka lets UnregisterBroker
remove a *running* broker too (NONE; the broker then drops out of Metadata until it restarts, and a lone node
leaves a cluster with no broker at all); kafkalite answers NONE and keeps it: a running kafkalite broker is
always registered (it has no registration to lose). A running controller that is not the active one is
unregistered with NONE and registers again at once, as Kafka's does (probed: NONE, and NONE again when asked
again).
"""
from __future__ import annotations

import struct
import uuid

import trio

from kafkalite import authz
from kafkalite.handlers.describe_quorum import _directory_id
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import registrations
from kafkalite_storage.checkpoints import uuid_to_base64
from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError, ErrorCode
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import (
    AddRaftVoterRequest,
    AddRaftVoterResponse,
    ApiVersionsRequest,
    ApiVersionsResponse,
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
#: Kafka's controller.quorum.request.timeout.ms default: how long the leader waits for the new voter's ApiVersions
RAFT_REQUEST_TIMEOUT_S = 2.0
#: the largest ApiVersions answer read from a would-be voter
MAX_API_VERSIONS_FRAME = 1 << 20


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


def _java_hash(s: str) -> int:
    """``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _hashmap_order(keys: list[str], initial: int) -> list[str]:
    """The iteration order of a ``java.util.HashMap(initial)`` the (distinct) ``keys`` were put into in this
    order: buckets by the spread hash, insertion order within one (a resize keeps it)."""
    cap = 1
    while cap < initial:
        cap <<= 1
    threshold = int(cap * 0.75)
    for size in range(1, len(keys) + 1):
        if size > threshold:
            cap <<= 1
            threshold = threshold << 1 if cap > 16 else int(cap * 0.75)

    def bucket(k: str) -> int:
        h = _java_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    return sorted(keys, key=bucket)   # stable: insertion order within a bucket


def _endpoints(listeners: list[AddRaftVoterRequest.Listener]) -> dict[str, tuple[str, int]]:
    """``Endpoints.fromAddVoterRequest``: listener name (normalised: upper case) -> (host, port)."""
    out: dict[str, tuple[str, int]] = {}
    for lst in listeners:
        out[(lst.name or "").upper()] = (lst.host or "", lst.port)
    return out


def _endpoints_text(endpoints: dict[str, tuple[str, int]], count: int) -> str:
    """``Endpoints.toString``: a HashMap of unresolved addresses, in HashMap order."""
    shown = ", ".join(f"ListenerName({name})={endpoints[name][0]}/<unresolved>:{endpoints[name][1]}"
                      for name in _hashmap_order(list(endpoints), count))
    return f"Endpoints(endpoints={{{shown}}})"


async def _api_versions(host: str, port: int) -> ApiVersionsResponse | str:
    """The new voter's ApiVersions answer, or the name of the error the leader's network client would report:
    BROKER_NOT_AVAILABLE when it cannot connect or the connection drops, REQUEST_TIMED_OUT past the raft
    request timeout."""
    with trio.move_on_after(RAFT_REQUEST_TIMEOUT_S):
        try:
            stream = await trio.open_tcp_stream(host, port)
        except OSError:
            return "BROKER_NOT_AVAILABLE"
        async with stream:
            try:
                await stream.send_all(api.encode_request(
                    RequestHeader(18, 4, 1, "raft-client"),
                    ApiVersionsRequest(client_software_name="apache-kafka-java", client_software_version="4.4.0")))
                buf = bytearray()
                while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
                    if len(buf) >= 4 and not 0 <= struct.unpack(">i", buf[:4])[0] <= MAX_API_VERSIONS_FRAME:
                        return "BROKER_NOT_AVAILABLE"
                    data = await stream.receive_some(65536)
                    if not data:
                        return "BROKER_NOT_AVAILABLE"
                    buf += data
                size = struct.unpack(">i", buf[:4])[0]
                _cid, resp = api.parse_response(18, 4, bytes(buf[4:4 + size]))
                return resp  # type: ignore[no-any-return]
            except (OSError, trio.BrokenResourceError, DecodeError):
                return "BROKER_NOT_AVAILABLE"
    return "REQUEST_TIMED_OUT"


@handler(AddRaftVoterRequest, min_version=0, max_version=1)
async def add_raft_voter(ctx: RequestContext, req: AddRaftVoterRequest) -> AddRaftVoterResponse:
    """``KafkaRaftClient.handleAddVoterRequest`` and ``AddVoterHandler``, in their order: the cluster id
    (INCONSISTENT_CLUSTER_ID), a valid voter key (INVALID_REQUEST), an endpoint for the default listener
    (INVALID_REQUEST; kafkalite's is the listener DescribeQuorum lists for its voter: the one the client
    reached, as it has no CONTROLLER listener), kraft.version 1 (UNSUPPORTED_VERSION), an id not already a voter
    (DUPLICATE_VOTER). Then, as Kafka's leader does, an ApiVersions request to the new voter at that endpoint:
    an error aborts (REQUEST_TIMED_OUT, "... returned an error BROKER_NOT_AVAILABLE" when it cannot be
    reached), a kraft.version range without the finalized level is INVALID_REQUEST; a voter that answers is
    then found lagging behind (REQUEST_TIMED_OUT): Kafka adds a voter only once it has fetched the metadata log
    up to the leader's end, and kafkalite keeps no metadata log that another node could fetch. So no voter is
    ever added, which keeps the quorum DescribeQuorum reports true.

    Not emulated: Kafka's leader remembers a failed connection for its reconnect backoff and answers a repeated
    request at once with "New voter ... is not ready to receive requests"; kafkalite tries again."""
    state = ctx.broker

    def answer(code: int, message: str | None) -> AddRaftVoterResponse:
        return AddRaftVoterResponse(throttle_time_ms=0, error_code=code, error_message=message)

    if authz.cluster_error(ctx, authz.Op.ALTER):
        return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if (why := _cluster_id_error(ctx, req.cluster_id)) is not None:
        return answer(ErrorCode.INCONSISTENT_CLUSTER_ID, why)
    if req.voter_id < 0 or req.voter_directory_id == ZERO_UUID:
        return answer(ErrorCode.INVALID_REQUEST, "Add voter request didn't include a valid voter")
    endpoints = _endpoints(req.listeners)
    default = state.advertised_for(ctx.listener).name.upper()
    if default not in endpoints:
        return answer(ErrorCode.INVALID_REQUEST, f"Add voter request didn't include the endpoint "
                      f"({_endpoints_text(endpoints, len(req.listeners))}) for the default listener ListenerName({default})")
    if (level := _kraft_version(ctx)) < 1:
        return answer(ErrorCode.UNSUPPORTED_VERSION,
                      f"Cluster doesn't support adding voter because the kraft.version feature is {level}")
    current = voters(ctx)
    key = _replica_key(req.voter_id, req.voter_directory_id)
    if req.voter_id in {i for i, _d in current}:
        listed = ", ".join(_replica_key(i, d) for i, d in current)
        return answer(ErrorCode.DUPLICATE_VOTER,
                      f"The voter id for {key} is already part of the set of voters [{listed}].")
    got = await _api_versions(*endpoints[default])
    if isinstance(got, str) or got.error_code:
        error = got if isinstance(got, str) else ErrorCode.from_code(got.error_code)
        name = error if isinstance(error, str) else getattr(error, "name", str(error))
        return answer(ErrorCode.REQUEST_TIMED_OUT,
                      f"Aborted add voter operation for since API_VERSIONS returned an error {name}")
    kraft = next((f for f in got.supported_features if f.name == "kraft.version"), None)
    if kraft is None or not kraft.min_version <= level <= kraft.max_version:
        shown = "(min: 0, max: 0)" if kraft is None else f"(min: {kraft.min_version}, max: {kraft.max_version}"
        return answer(ErrorCode.INVALID_REQUEST, f"Aborted add voter operation for {key} since the kraft.version "
                                                 f"range {shown} doesn't support the finalized version {level}")
    return answer(ErrorCode.REQUEST_TIMED_OUT, f"Aborted add voter operation for {key} since it is lagging behind")
