"""DescribeTopicPartitions (key 75): v0 (flexible). Java Admin's describeTopics(names) uses it when offered,
else falls back to Metadata.

- An empty Topics list means every topic. Topics are answered in name order, partition by partition, at most
  ResponsePartitionLimit partitions (capped at 2000, Kafka's max.request.partition.size.limit) per response;
  when more remain, NextCursor names the topic and partition to continue from, and a request with that
  Cursor resumes there.
- Unknown topics answer UNKNOWN_TOPIC_OR_PARTITION (no partitions). Never auto-creates.
- One broker: leader = replicas = ISR = this node, at the log's leader epoch; ELR lists empty (not null:
  Java 3.9's Admin dereferences them). A cluster: EligibleLeaderReplicas and LastKnownElr as its controller
  keeps them (KIP-966, ``kafkalite.cluster.elr``); Metadata reports neither.
- Authorization: DESCRIBE on each topic: named ones answer TOPIC_AUTHORIZATION_FAILED, a listing of all topics
  leaves them out; topic_authorized_operations are the principal's.
"""
from __future__ import annotations

from typing import Any

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse

MAX_PARTITIONS = 2000
R = DescribeTopicPartitionsResponse


@handler(DescribeTopicPartitionsRequest, min_version=0, max_version=0)
async def describe_topic_partitions(ctx: RequestContext,
                                    req: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    state = ctx.broker
    names = sorted({t.name for t in req.topics}) if req.topics else sorted(state.topics)
    denied = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, names)
    if denied and not req.topics:   # all topics: those it may not describe are left out
        names = [n for n in names if n not in denied]
    limit = max(1, min(req.response_partition_limit, MAX_PARTITIONS))
    start_topic, start_partition = (req.cursor.topic_name, req.cursor.partition_index) if req.cursor else ("", 0)
    topics: list[Any] = []
    next_cursor = None
    budget = limit
    for name in names:
        if name < start_topic:
            continue
        info = state.topics.get(name)
        if name in denied:
            topics.append(R.DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, partitions=[]))
            continue
        if info is None:
            topics.append(R.DescribeTopicPartitionsResponseTopic(   # Kafka fills in the operations here too
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, partitions=[],
                topic_authorized_operations=authz.topic_ops(ctx, name)))
            continue
        first = start_partition if name == start_topic else 0
        if budget == 0:
            next_cursor = R.Cursor(topic_name=name, partition_index=first)
            break
        last = min(info.partitions, first + budget)
        P = R.DescribeTopicPartitionsResponsePartition
        elr_of = state.placement.eligible_leaders
        parts = []
        for p, (leader, epoch, replicas, isr, offline) in enumerate(state.placement.partitions(name, last, first),
                                                                    start=first):
            elr, last_known = elr_of(name, p)
            parts.append(P(error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                           partition_index=p, leader_id=leader, leader_epoch=epoch, replica_nodes=replicas,
                           isr_nodes=isr, eligible_leader_replicas=elr, last_known_elr=last_known,
                           offline_replicas=offline))
        budget -= len(parts)
        topics.append(R.DescribeTopicPartitionsResponseTopic(
            error_code=ErrorCode.NONE, name=name, topic_id=info.topic_id, is_internal=info.internal,
            partitions=parts, topic_authorized_operations=authz.topic_ops(ctx, name)))
        if last < info.partitions:
            next_cursor = R.Cursor(topic_name=name, partition_index=last)
            break
    return R(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)
