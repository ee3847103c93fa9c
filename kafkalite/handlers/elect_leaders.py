"""ElectLeaders (key 43): v0–v2 (v1 adds ElectionType and the top-level ErrorCode; v2 is flexible).

Kafka 3.9's controller (``ReplicationControlManager.electLeaders``) on one node: every partition's only
replica is its preferred leader and leads, so a PREFERRED election answers ELECTION_NOT_NEEDED ("Leader
election not needed for topic partition."), and an UNCLEAN one too (the partition has a leader). A topic
or partition that does not exist answers UNKNOWN_TOPIC_OR_PARTITION with Kafka's message ("No such topic as
t" / "No such partition as t-p"). A null topic list means every partition of every topic; Kafka then leaves
out the partitions whose election is not needed, so each topic comes back with an empty result list. An
unknown election type is INVALID_REQUEST ("Unknown election type N") for every listed partition.

Authorization (Kafka's ``ControllerApis.handleElectLeaders``): ALTER on the cluster, else the whole request
fails as ``ElectLeadersRequest.getErrorResponse`` builds it: CLUSTER_AUTHORIZATION_FAILED at top level and
for every listed partition (no results for a null topic list).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state.placement import ELECTION_NOT_NEEDED_MESSAGE
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ElectLeadersRequest, ElectLeadersResponse

R = ElectLeadersResponse


@handler(ElectLeadersRequest, min_version=0, max_version=2)
async def elect_leaders(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    state = ctx.broker
    election_type = req.election_type if ctx.version >= 1 else 0
    if err := authz.cluster_error(ctx, authz.Op.ALTER):
        msg = authz.CLUSTER_DENIED_MESSAGE
        return R(throttle_time_ms=0, error_code=err, replica_election_results=[
            R.ReplicaElectionResult(topic=t.topic, partition_result=[
                R.PartitionResult(partition_id=p, error_code=err, error_message=msg) for p in t.partitions])
            for t in req.topic_partitions or []])
    if req.topic_partitions is None:
        # every partition needs no election: topics listed, partitions left out (as Kafka's controller does)
        results = [R.ReplicaElectionResult(topic=name, partition_result=[]) for name in state.topics]
        return R(throttle_time_ms=0, error_code=ErrorCode.NONE, replica_election_results=results)
    bad_type = election_type not in (0, 1)
    results = []
    work = Slices()   # a request may name a million partitions: walked in slices
    for t in req.topic_partitions:
        info = state.topics.get(t.topic)
        parts = []
        for p in t.partitions:
            if work.due():
                await work.pause()
            if bad_type:
                code, msg = ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}"
            elif info is None:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {t.topic}"
            elif not 0 <= p < info.partitions:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {t.topic}-{p}"
            else:
                code, msg = ErrorCode.ELECTION_NOT_NEEDED, ELECTION_NOT_NEEDED_MESSAGE
            parts.append(R.PartitionResult(partition_id=p, error_code=code, error_message=msg))
        results.append(R.ReplicaElectionResult(topic=t.topic, partition_result=parts))
    top = ErrorCode.INVALID_REQUEST if bad_type else ErrorCode.NONE
    return R(throttle_time_ms=0, error_code=top, replica_election_results=results)
