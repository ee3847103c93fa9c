"""CreateTopics (key 19): v0–v7.

- NumPartitions / ReplicationFactor of -1 (v4+) mean the broker defaults (``num.partitions``, 1). Explicit
  Assignments fix the partition count and must list only this broker (INVALID_REPLICA_ASSIGNMENT).
- Errors per topic: INVALID_TOPIC_EXCEPTION (illegal name, or one that differs from an existing topic only by
  '.' vs '_', which collide in metric names), TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS (< 1),
  INVALID_REPLICATION_FACTOR (anything but 1: there is one broker), INVALID_CONFIG (unknown name / bad value),
  INVALID_REQUEST (the same topic twice in one request).
- The internal topics (``__consumer_offsets``, ``__transaction_state``) are created by the broker only, with
  its own partition count and configs (their partition count decides which partition holds a group's or a
  transactional id's state). Kafka 3.9 in KRaft mode lets a client create them (ControllerApis.createTopics
  prohibits only ``__cluster_metadata``, with INVALID_REQUEST "Creation of internal topic ... is prohibited."),
  and a client-made ``__consumer_offsets`` of 1 partition then sends most group requests to partitions that
  do not exist. kafkalite answers a client's creation of either internal topic the way Kafka answers it for
  its own internal topic: INVALID_REQUEST with that message (TOPIC_ALREADY_EXISTS once it exists, like any
  topic).
- ValidateOnly (v1+) runs every check and creates nothing.
- v5+ echo the resulting partition count, replication factor and full config list; v7+ the topic id.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.state import INTERNAL_TOPICS, BrokerState, invalid_topic_name
from kafkalite.topic_configs import describe_topic, validate_topic_configs
from wire.errors import ErrorCode
from wire.messages import CreateTopicsRequest, CreateTopicsResponse

_Result = CreateTopicsResponse.CreatableTopicResult


def _check(state: BrokerState, t: Any, node: int) -> tuple[ErrorCode, str | None, int]:
    if (why := invalid_topic_name(t.name)) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, why, 0
    if t.name in state.topics:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.", 0
    if t.name in INTERNAL_TOPICS:
        return (ErrorCode.INVALID_REQUEST,
                f"Creation of internal topic {t.name} is prohibited (the broker creates it when it is needed).", 0)
    collides = next((n for n in state.topics if n.replace(".", "_") == t.name.replace(".", "_")), None)
    if collides is not None:
        return (ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{t.name}' collides with existing topic: {collides}", 0)
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            return (ErrorCode.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set.", 0)
        indexes = sorted(a.partition_index for a in t.assignments)
        if indexes != list(range(len(indexes))):
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0..n-1", 0
        if any(list(a.broker_ids) != [node] for a in t.assignments):
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"the only broker is {node}", 0
        partitions = len(indexes)
    else:
        partitions = state.config.num_partitions if t.num_partitions == -1 else t.num_partitions
        if partitions < 1:
            return ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.", 0
        rf = 1 if t.replication_factor == -1 else t.replication_factor
        if rf < 1:
            return ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.", 0
        if rf > 1:
            return (ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                    "cannot be reached because only 1 broker(s) are registered.", 0)
    overrides = {c.name: c.value for c in t.configs}
    if (why := validate_topic_configs(state, overrides)) is not None:
        return ErrorCode.INVALID_CONFIG, why, 0
    return ErrorCode.NONE, None, partitions


@handler(CreateTopicsRequest, min_version=0, max_version=7)
async def create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    state = ctx.broker
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(_Result(name=t.name, error_code=ErrorCode.INVALID_REQUEST,
                                   error_message="Create topics request from client contains a duplicate topic",
                                   configs=None))
            continue
        code, message, partitions = _check(state, t, state.node_id)
        if code != ErrorCode.NONE:
            results.append(_Result(name=t.name, error_code=code, error_message=message, configs=None))
            continue
        overrides = {c.name: c.value for c in t.configs if c.value is not None}
        topic_id = None
        if not req.validate_only:
            topic_id = state.create_topic(t.name, partitions, overrides).topic_id
        configs = [CreateTopicsResponse.CreatableTopicConfigs(
            name=e.name, value=e.value, read_only=e.read_only, config_source=e.source, is_sensitive=e.sensitive)
            for e in describe_topic(state, overrides)]
        res = _Result(name=t.name, error_code=ErrorCode.NONE, error_message=None, num_partitions=partitions,
                      replication_factor=1, configs=configs)
        if topic_id is not None:
            res.topic_id = topic_id
        results.append(res)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)
