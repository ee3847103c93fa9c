"""ReadShareGroupStateSummary (key 87): v0-v1, the share coordinator's summary of a share-partition's persisted
state (Kafka's persister sends it for DescribeShareGroupOffsets; v1 adds DeliveryCompleteCount, KIP-1226).

As ``KafkaApis.handleReadShareGroupStateSummaryRequest`` and ``ShareCoordinatorService.readStateSummary``:
CLUSTER_ACTION on the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED; no share coordinator
(share groups off): COORDINATOR_NOT_AVAILABLE for every partition; an empty group id, no topics or a topic
without partitions: an empty answer; each partition's answer from ``coordinator.share.coordinator_reads``.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.share.coordinator_reads import read_summaries
from kafkalite.coordinator.share.coordinator_state import NOT_AVAILABLE, every_partition
from kafkalite.coordinator.share.records import ShareKey
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse

R = ReadShareGroupStateSummaryResponse
OP = "read share group state summary"


def _all_error(req: ReadShareGroupStateSummaryRequest, code: int, message: str) -> ReadShareGroupStateSummaryResponse:
    return every_partition(R, R.ReadStateSummaryResult, req, code, message)


@handler(ReadShareGroupStateSummaryRequest, min_version=0, max_version=1)
async def read_share_group_state_summary(ctx: RequestContext, req: ReadShareGroupStateSummaryRequest
                                         ) -> ReadShareGroupStateSummaryResponse:
    if not authz.cluster_allowed(ctx, authz.Op.CLUSTER_ACTION):
        return _all_error(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if ctx.broker.shares is None:
        return _all_error(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)
    if not req.group_id or not req.topics or any(not t.partitions for t in req.topics):
        return R(results=[])
    keys = [ShareKey(req.group_id, t.topic_id, p.partition) for t in req.topics for p in t.partitions]
    got = await read_summaries(ctx.broker, keys, OP)
    results = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            s = got[ShareKey(req.group_id, t.topic_id, p.partition)]
            parts.append(R.PartitionResult(partition=p.partition, error_code=s.error_code,
                                           error_message=s.error_message, state_epoch=s.state_epoch,
                                           leader_epoch=s.leader_epoch, start_offset=s.start_offset,
                                           delivery_complete_count=s.delivery_complete_count))
        results.append(R.ReadStateSummaryResult(topic_id=t.topic_id, partitions=parts))
    return R(results=results)
