"""AlterPartitionReassignments (key 45): v0–v1 (flexible; v1, KIP-860, may forbid a change of replication
factor: the only valid target, this node, never changes it; the flag is echoed in the response).

Kafka 3.9's controller (``ReplicationControlManager.alterPartitionReassignment``) on one node:

* a missing topic or partition: UNKNOWN_TOPIC_OR_PARTITION ("Unable to find a topic named t." /
  "Unable to find partition t:p.");
* target replicas checked as a manual assignment (``kafkalite.state.placement``): ``[node_id]`` is the current
  assignment, so the reassignment completes at once (no change record) and answers NONE; other broker
  ids, an empty list or a broker twice answer INVALID_REPLICA_ASSIGNMENT with Kafka's messages;
* null replicas cancel a reassignment: none is ever in progress, so NO_REASSIGNMENT_IN_PROGRESS with no message
  (clients show the error's own, "No partition reassignment is in progress.").

Authorization (``ControllerApis.handleAlterPartitionReassignments``): ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED at top level and for every listed partition (``getErrorResponse``).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state.placement import check_manual_assignment
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse

R = AlterPartitionReassignmentsResponse


@handler(AlterPartitionReassignmentsRequest, min_version=0, max_version=1)
async def alter_partition_reassignments(ctx: RequestContext,
                                        req: AlterPartitionReassignmentsRequest) -> AlterPartitionReassignmentsResponse:
    state = ctx.broker
    if err := authz.cluster_error(ctx, authz.Op.ALTER):
        denied = authz.CLUSTER_DENIED_MESSAGE
        return R(throttle_time_ms=0, error_code=err, error_message=denied,
                 allow_replication_factor_change=req.allow_replication_factor_change, responses=[
            R.ReassignableTopicResponse(name=t.name, partitions=[R.ReassignablePartitionResponse(
                partition_index=p.partition_index, error_code=err, error_message=denied) for p in t.partitions])
            for t in req.topics])
    responses = []
    work = Slices()   # a request may name a million partitions: walked in slices
    for t in req.topics:
        info = state.topics.get(t.name)
        parts = []
        for p in t.partitions:
            if work.due():
                await work.pause()
            code: int = ErrorCode.NONE
            msg: str | None = None   # NO_REASSIGNMENT_IN_PROGRESS: none, clients show the error's own
            if info is None:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {t.name}."
            elif not 0 <= p.partition_index < info.partitions:
                code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, (
                    f"Unable to find partition {t.name}:{p.partition_index}.")
            elif p.replicas is None:
                code, msg = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None   # no message: clients show the error's own
            else:
                why = check_manual_assignment(list(p.replicas), state.node_id, None)
                if why is not None:
                    code, msg = ErrorCode.INVALID_REPLICA_ASSIGNMENT, why
            parts.append(R.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=code,
                                                         error_message=msg))
        responses.append(R.ReassignableTopicResponse(name=t.name, partitions=parts))
    return R(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
             allow_replication_factor_change=req.allow_replication_factor_change, responses=responses)
