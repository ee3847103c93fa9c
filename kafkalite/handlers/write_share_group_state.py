"""WriteShareGroupState (key 85): v0-v1, a share-partition's leader writes its state to the share coordinator:
the start offset and the changed state batches, under its state epoch and leader epoch (v1 adds
DeliveryCompleteCount, KIP-1226).

As ``KafkaApis.handleWriteShareGroupStateRequest`` and ``ShareCoordinatorService.writeState``: CLUSTER_ACTION on
the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED; no topics, a topic without partitions
or an empty group id: an empty answer; no share coordinator: COORDINATOR_NOT_AVAILABLE for every partition;
each partition at its coordinator (``coordinator.share.coordinator_state``, checks and records in
``coordinator.share.shard.write``: FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, a write before Initialize is
INVALID_REQUEST).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.share import shard
from kafkalite.coordinator.share.coordinator_state import NOT_AVAILABLE, every_partition, keys_by_topic, run
from kafkalite.coordinator.share.partition import StateBatch
from kafkalite.coordinator.share.records import ShareKey
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import WriteShareGroupStateRequest, WriteShareGroupStateResponse

R = WriteShareGroupStateResponse
OP = "write share group state"


def _all_error(req: WriteShareGroupStateRequest, code: int, message: str) -> WriteShareGroupStateResponse:
    return every_partition(R, R.WriteStateResult, req, code, message)


@handler(WriteShareGroupStateRequest, min_version=0, max_version=1)
async def write_share_group_state(ctx: RequestContext, req: WriteShareGroupStateRequest
                                  ) -> WriteShareGroupStateResponse:
    if not authz.cluster_allowed(ctx, authz.Op.CLUSTER_ACTION):
        return _all_error(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if not req.topics or any(not t.partitions for t in req.topics) or not req.group_id:
        return R(results=[])
    svc = ctx.broker.shares
    if svc is None:
        return _all_error(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)
    asked = {(t.topic_id, p.partition): p for t in req.topics for p in t.partitions}
    per_snapshot = max(svc.config.updates_per_snapshot, 1)

    def write(sh: shard.Shard, k: ShareKey, known: bool, now: int) -> tuple[shard.Outcome, None]:
        p = asked[(k.topic_id, k.partition)]
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                   for b in p.state_batches]
        return shard.write(sh, k, leader_epoch=p.leader_epoch, state_epoch=p.state_epoch, start=p.start_offset,
                           delivery_complete_count=p.delivery_complete_count, batches=batches, now=now,
                           known=known, updates_per_snapshot=per_snapshot), None

    topics = keys_by_topic(req.group_id, req.topics)
    got = await run(ctx.broker, OP, [k for _, ks in topics for k in ks], write)
    return R(results=[R.WriteStateResult(topic_id=tid, partitions=[
        R.PartitionResult(partition=k.partition, error_code=got[k][0].error_code,
                          error_message=got[k][0].error_message) for k in keys]) for tid, keys in topics])
