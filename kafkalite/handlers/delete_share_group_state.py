"""DeleteShareGroupState (key 86): v0, the share coordinator forgets a share-partition's state (a tombstone; Kafka's
group coordinator sends it when a share group, or its offsets for a topic, are deleted).

As ``KafkaApis.handleDeleteShareGroupStateRequest`` and ``ShareCoordinatorService.deleteState``: CLUSTER_ACTION on
the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED; no share coordinator:
COORDINATOR_NOT_AVAILABLE for every partition; an empty group id, no topics or a topic without partitions: an
empty answer; each partition at its coordinator (``coordinator.share.coordinator_state``, checks in
``coordinator.share.shard.delete``); a share-partition without state is deleted without a record.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.share import shard
from kafkalite.coordinator.share.coordinator_state import NOT_AVAILABLE, every_partition, keys_by_topic, run
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DeleteShareGroupStateRequest, DeleteShareGroupStateResponse

R = DeleteShareGroupStateResponse
OP = "delete share group state"


def _all_error(req: DeleteShareGroupStateRequest, code: int, message: str) -> DeleteShareGroupStateResponse:
    return every_partition(R, R.DeleteStateResult, req, code, message)


@handler(DeleteShareGroupStateRequest, min_version=0, max_version=0)
async def delete_share_group_state(ctx: RequestContext, req: DeleteShareGroupStateRequest
                                   ) -> DeleteShareGroupStateResponse:
    if not authz.cluster_allowed(ctx, authz.Op.CLUSTER_ACTION):
        return _all_error(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if ctx.broker.shares is None:
        return _all_error(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)
    if not req.group_id or not req.topics or any(not t.partitions for t in req.topics):
        return R(results=[])
    topics = keys_by_topic(req.group_id, req.topics)
    got = await run(ctx.broker, OP, [k for _, ks in topics for k in ks],
                    lambda sh, k, known, now: (shard.delete(sh, k, known), None))
    return R(results=[R.DeleteStateResult(topic_id=tid, partitions=[
        R.PartitionResult(partition=k.partition, error_code=got[k][0].error_code,
                          error_message=got[k][0].error_message) for k in keys]) for tid, keys in topics])
