"""ListPartitionReassignments (key 46): v0 (flexible).

A one-node Kafka never has a reassignment in progress (one reassigning to the only broker completes at
once), so the answer lists no topic: for a null topic list (everything) and for named topics alike
(Kafka's controller skips topics it does not know and partitions that are not reassigning).

Authorization (``ControllerApis.handleListPartitionReassignments``): DESCRIBE on the cluster, else
CLUSTER_AUTHORIZATION_FAILED at top level, the listed topics echoed with their partition indexes and no
replicas (``ListPartitionReassignmentsRequest.getErrorResponse``).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse


@handler(ListPartitionReassignmentsRequest, min_version=0, max_version=0)
async def list_partition_reassignments(ctx: RequestContext,
                                       req: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    R = ListPartitionReassignmentsResponse
    if err := authz.cluster_error(ctx, authz.Op.DESCRIBE):
        return R(throttle_time_ms=0, error_code=err, error_message=authz.CLUSTER_DENIED_MESSAGE, topics=[
            R.OngoingTopicReassignment(name=t.name, partitions=[
                R.OngoingPartitionReassignment(partition_index=p, replicas=[], adding_replicas=[],
                                               removing_replicas=[]) for p in t.partition_indexes])
            for t in req.topics or []])
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                                              topics=[])
