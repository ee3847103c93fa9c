"""ReadShareGroupState (key 84): v0, a share-partition's leader reads its persisted state from the share
coordinator when it initialises the share-partition: state epoch, start offset and state batches.

As ``KafkaApis.handleReadShareGroupStateRequest`` and ``ShareCoordinatorService.readState``: CLUSTER_ACTION on
the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED; no topics, a topic without partitions
or an empty group id: an empty answer; no share coordinator: COORDINATOR_NOT_AVAILABLE for every partition;
each partition at its coordinator (``coordinator.share.coordinator_state``, checks in
``coordinator.share.shard.read``): a share-partition without state is INVALID_REQUEST, a leader epoch below the
recorded one FENCED_LEADER_EPOCH, and a read at a new leader epoch records it.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.share import shard
from kafkalite.coordinator.share.coordinator_state import NOT_AVAILABLE, every_partition, keys_by_topic, run
from kafkalite.coordinator.share.records import ShareKey
from kafkalite.coordinator.share.state import PersistedState
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ReadShareGroupStateRequest, ReadShareGroupStateResponse

R = ReadShareGroupStateResponse
OP = "read share group state"


def _all_error(req: ReadShareGroupStateRequest, code: int, message: str) -> ReadShareGroupStateResponse:
    return every_partition(R, R.ReadStateResult, req, code, message)


def _result(k: ShareKey, outcome: shard.Outcome, st: PersistedState | None) -> R.PartitionResult:
    if outcome.error_code or st is None:
        return R.PartitionResult(partition=k.partition, error_code=outcome.error_code,
                                 error_message=outcome.error_message)
    return R.PartitionResult(partition=k.partition, state_epoch=st.state_epoch, start_offset=st.start,
                             state_batches=[R.StateBatch(first_offset=b.first, last_offset=b.last,
                                                         delivery_state=b.state, delivery_count=b.count)
                                            for b in st.batches()])


@handler(ReadShareGroupStateRequest, min_version=0, max_version=0)
async def read_share_group_state(ctx: RequestContext, req: ReadShareGroupStateRequest
                                 ) -> ReadShareGroupStateResponse:
    if not authz.cluster_allowed(ctx, authz.Op.CLUSTER_ACTION):
        return _all_error(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, authz.CLUSTER_DENIED_MESSAGE)
    if not req.topics or any(not t.partitions for t in req.topics) or not req.group_id:
        return R(results=[])
    svc = ctx.broker.shares
    if svc is None:
        return _all_error(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)
    asked = {(t.topic_id, p.partition): p.leader_epoch for t in req.topics for p in t.partitions}
    per_snapshot = max(svc.config.updates_per_snapshot, 1)
    topics = keys_by_topic(req.group_id, req.topics)
    got = await run(ctx.broker, OP, [k for _, ks in topics for k in ks], lambda sh, k, known, now: shard.read(
        sh, k, asked[(k.topic_id, k.partition)], now, known, per_snapshot))
    return R(results=[R.ReadStateResult(topic_id=tid, partitions=[_result(k, *got[k]) for k in keys])
                      for tid, keys in topics])
