"""ListPartitionReassignments (key 46): v0 (flexible).

A one-node Kafka never has a reassignment in progress (one reassigning to the only broker completes at
once), so the answer lists no topic: for a null topic list (everything) and for named topics alike
(Kafka's controller skips topics it does not know and partitions that are not reassigning).
"""
from __future__ import annotations

from kafkalite.handlers.registry import RequestContext, handler
from wire.errors import ErrorCode
from wire.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse


@handler(ListPartitionReassignmentsRequest, min_version=0, max_version=0)
async def list_partition_reassignments(ctx: RequestContext,
                                       req: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                                              topics=[])
