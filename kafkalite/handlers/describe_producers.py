"""DescribeProducers (key 61): v0 (flexible).

The active idempotent/transactional producers of each partition, from storage's producer state (what
Kafka's ``UnifiedLog.activeProducers`` reports): producer id, epoch, last sequence, last timestamp,
coordinator epoch (of the last transaction marker, -1 before one) and the first offset of the open
transaction (-1 when none). A topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION with Kafka's default
message (KafkaApis checks the metadata first); a partition of a known topic that does not exist:
UNKNOWN_TOPIC_OR_PARTITION without a message (``ReplicaManager.activeProducerState``).

Authorization (``KafkaApis.handleDescribeProducersRequest``): READ on each topic, checked before its
existence; without it every listed partition answers TOPIC_AUTHORIZATION_FAILED with Kafka's default
message, so a principal learns nothing of topics it may not read.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeProducersRequest, DescribeProducersResponse

R = DescribeProducersResponse
UNKNOWN_MESSAGE = "This server does not host this topic-partition."


@handler(DescribeProducersRequest, min_version=0, max_version=0)
async def describe_producers(ctx: RequestContext, req: DescribeProducersRequest) -> DescribeProducersResponse:
    state = ctx.broker
    topics = []
    work = Slices()   # a request may name a million partitions: walked in slices
    refused = authz.denied(ctx, authz.Op.READ, authz.TOPIC, (t.name for t in req.topics))
    for t in req.topics:
        info = state.topics.get(t.name)
        parts = []
        for p in t.partition_indexes:
            if work.due():
                await work.pause()
            plog = state.get_log(t.name, p) if info is not None and 0 <= p < info.partitions else None
            if t.name in refused:
                parts.append(R.PartitionResponse(partition_index=p, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                 error_message=authz.TOPIC_DENIED_MESSAGE))
            elif info is None:
                parts.append(R.PartitionResponse(partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                 error_message=UNKNOWN_MESSAGE))
            elif plog is None:
                parts.append(R.PartitionResponse(partition_index=p, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                active = [R.ProducerState(producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq,
                                          last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                                          current_txn_start_offset=e.current_txn_first_offset)
                          for pid, e in sorted(plog.producer_state.producers.items())]
                parts.append(R.PartitionResponse(partition_index=p, error_code=ErrorCode.NONE,
                                                 active_producers=active))
        topics.append(R.TopicResponse(name=t.name, partitions=parts))
    return R(throttle_time_ms=0, topics=topics)
