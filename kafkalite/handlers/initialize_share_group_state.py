"""InitializeShareGroupState (key 83): v0, the share coordinator sets (or resets) a share-partition's state: a new
state epoch and start offset (Kafka's group coordinator sends it when a share group first reads a partition and
for AlterShareGroupOffsets / DeleteShareGroupOffsets).

As ``KafkaApis.handleInitializeShareGroupStateRequest`` and ``ShareCoordinatorService.initializeState``:
CLUSTER_ACTION on the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED; no share coordinator:
COORDINATOR_NOT_AVAILABLE for every partition; an empty group id or no topics: an empty answer; each partition
at its coordinator (``coordinator.share.coordinator_state``, checks in ``coordinator.share.shard.initialize``).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.share import shard
from kafkalite.coordinator.share.coordinator_state import NOT_AVAILABLE, every_partition, keys_by_topic, run
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import InitializeShareGroupStateRequest, InitializeShareGroupStateResponse

R = InitializeShareGroupStateResponse
OP = "initialize share group state"


def _all_error(req: InitializeShareGroupStateRequest, code: int, message: str) -> InitializeShareGroupStateResponse:
    return every_partition(R, R.InitializeStateResult, req, code, message)


@handler(InitializeShareGroupStateRequest, min_version=0, max_version=0)
async def initialize_share_group_state(ctx: RequestContext, req: InitializeShareGroupStateRequest
                                       ) -> InitializeShareGroupStateResponse:
    if not authz.cluster_allowed(ctx, authz.Op.CLUSTER_ACTION):
        return _all_error(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if ctx.broker.shares is None:
        return _all_error(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)
    if not req.group_id or not req.topics:
        return R(results=[])
    asked = {(t.topic_id, p.partition): p for t in req.topics for p in t.partitions}
    topics = keys_by_topic(req.group_id, req.topics)
    got = await run(ctx.broker, OP, [k for _, ks in topics for k in ks], lambda sh, k, known, now: (
        shard.initialize(sh, k, asked[(k.topic_id, k.partition)].state_epoch,
                         asked[(k.topic_id, k.partition)].start_offset, now, known), None))
    return R(results=[R.InitializeStateResult(topic_id=tid, partitions=[
        R.PartitionResult(partition=k.partition, error_code=got[k][0].error_code,
                          error_message=got[k][0].error_message) for k in keys]) for tid, keys in topics])
