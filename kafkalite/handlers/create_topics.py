"""CreateTopics (key 19): v0–v7.

- NumPartitions / ReplicationFactor of -1 (v4+) mean the broker defaults (``num.partitions``, 1). Explicit
  Assignments fix the partition count and must list only this broker (INVALID_REPLICA_ASSIGNMENT).
- Errors per topic: INVALID_TOPIC_EXCEPTION (illegal name, or one that differs from an existing topic only by
  '.' vs '_', which collide in metric names), TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS (< 1),
  INVALID_REPLICATION_FACTOR (anything but 1: there is one broker), INVALID_CONFIG (unknown name / bad value /
  a null value, with the config's own message),
  INVALID_REQUEST (the same topic twice in one request).
- The internal topics (``__consumer_offsets``, ``__transaction_state``) are created by the broker only, with
  its own partition count and configs (their partition count decides which partition holds a group's or a
  transactional id's state). Kafka 3.9 in KRaft mode lets a client create them (ControllerApis.createTopics
  prohibits only ``__cluster_metadata``, with INVALID_REQUEST "Creation of internal topic ... is prohibited."),
  and a client-made ``__consumer_offsets`` of 1 partition then sends most group requests to partitions that
  do not exist. kafkalite answers a client's creation of either internal topic the way Kafka answers it for
  its own internal topic: INVALID_REQUEST with that message (TOPIC_ALREADY_EXISTS once it exists, like any
  topic). ``__cluster_metadata`` (the KRaft metadata log, never a topic) answers exactly as Kafka: INVALID_REQUEST
  "Creation of internal topic __cluster_metadata is prohibited.", whether or not the name is otherwise valid.
- A request whose valid topics add up to more than 10,000 metadata records (a topic, its partitions and its
  configs; ``kafkalite.handlers.limits``) fails whole: every topic answers POLICY_VIOLATION "Unable to perform
  excessively large batch operation.", as Kafka's controller answers it.
- ValidateOnly (v1+) runs every check and creates nothing.
- v5+ echo the resulting partition count, replication factor and full config list (an error result carries
  an empty list, as Kafka's); v7+ the topic id, for ValidateOnly too (the id the topic would have had).
- The topics are checked in slices (each one on its own, as Kafka's controller checks them: 2,000 topics held
  the loop ~0.1 s), each valid name reserved as it passes; the name-collision map is rebuilt after a pause
  in which other requests created or deleted topics. Partition directories are made in a worker thread, one
  topic at a time, each published as soon as its logs exist, so a request for thousands of topics never
  holds the event loop. The names are reserved first: a
  concurrent CreateTopics of one of them answers TOPIC_ALREADY_EXISTS, as does a topic still being deleted
  (Kafka: "marked for deletion"). A topic whose partitions cannot all be made (out of descriptors or disk)
  answers KAFKA_STORAGE_ERROR and leaves nothing behind (Kafka marks such a log dir offline with that code).
- Authorization: CREATE on the cluster, or else CREATE on each topic (TOPIC_AUTHORIZATION_FAILED); without
  DESCRIBE_CONFIGS on the topic its configs are left out (topic_config_error_code TOPIC_AUTHORIZATION_FAILED).
- controller_mutation_rate (kafkalite.quotas): v6+ answers THROTTLING_QUOTA_EXCEEDED for a topic while the
  quota is used up; older versions are throttled afterwards (throttle_time_ms).
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter
from typing import Any

import trio

from kafkalite import authz
from kafkalite.config.describe import describe_topic, validate_topic_configs
from kafkalite.errors import error_code_for
from kafkalite.handlers.limits import EXCESSIVE_BATCH_MESSAGE, MAX_RECORDS_PER_USER_OP, topic_records
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import INTERNAL_TOPICS, METADATA_TOPIC, METADATA_TOPIC_PROHIBITED, invalid_topic_name
from kafkalite.runtime.gcpolicy import freeze_long_lived
from kafkalite.runtime.slices import Slices
from kafkalite.state import BrokerState
from kafkalite_storage.errors import StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import CreateTopicsRequest, CreateTopicsResponse

log = logging.getLogger(__name__)
_Result = CreateTopicsResponse.CreatableTopicResult
#: requests naming more topics than this are checked in slices
SLICE_AFTER = 128


def _check(state: BrokerState, t: Any, node: int, taken: dict[str, str]) -> tuple[ErrorCode, str | None, int]:
    """Kafka's per-topic checks; ``taken`` maps the '.'→'_' form of every existing or reserved name to it."""
    if t.name == METADATA_TOPIC:   # checked before anything else (ControllerApis.createTopics)
        return ErrorCode.INVALID_REQUEST, METADATA_TOPIC_PROHIBITED, 0
    if (why := invalid_topic_name(t.name)) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, why, 0
    if t.name in state.topics:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.", 0
    if t.name in INTERNAL_TOPICS:
        return (ErrorCode.INVALID_REQUEST,
                f"Creation of internal topic {t.name} is prohibited (the broker creates it when it is needed).", 0)
    if t.name in state.pending_topics:
        return (ErrorCode.TOPIC_ALREADY_EXISTS,
                f"Topic '{t.name}' is being created or is marked for deletion.", 0)
    collides = taken.get(t.name.replace(".", "_"))
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
        rf = 1 if t.replication_factor == -1 else t.replication_factor
        if rf < 1:   # ReplicationControlManager checks the factor first
            return (ErrorCode.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0, or -1 to use the default value.", 0)
        if partitions < 1:
            return ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.", 0
        if rf > 1 and not state.placement.replicated:   # several brokers: capped at their number
            cordoned = "" if state.config.release == "3.9" else \
                " or some brokers have all their log directories cordoned"   # 4.x's StripedReplicaPlacer
            return (ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                    f"cannot be reached because only 1 broker(s) are registered{cordoned}.", 0)
    if nulls := [c.name for c in t.configs if c.value is None]:   # ReplicationControlManager's wording
        return ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}", 0
    overrides = {c.name: c.value for c in t.configs}
    if (why := validate_topic_configs(state, overrides)) is not None:
        return ErrorCode.INVALID_CONFIG, why, 0
    return ErrorCode.NONE, None, partitions


@handler(CreateTopicsRequest, min_version=0, max_version=7)
async def create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    state = ctx.broker
    counts = Counter(t.name for t in req.topics)
    taken = _taken(state)
    results = []
    todo: list[tuple[int, str, int, dict[str, str], uuid.UUID]] = []
    records = 0   # metadata records Kafka would write for the valid topics (bounded per request)
    described: list[tuple[Any, dict[str, str]]] = []   # valid topics' results, their configs listed below
    denied = authz.create_denied(ctx, (t.name for t in req.topics))
    work = Slices() if len(req.topics) >= SLICE_AFTER else None
    for t in req.topics:
        if work is not None and work.due():
            try:
                seen = (len(state.topics), len(state.pending_topics))
                await work.pause()
            except BaseException:   # cancelled (connection closed, shutdown): the names are free again
                for _i, name, *_rest in todo:
                    state.pending_topics.discard(name)
                raise
            if (len(state.topics), len(state.pending_topics)) != seen:   # others created or deleted meanwhile
                taken = _taken(state)
        if counts[t.name] > 1:
            results.append(_Result(name=t.name, error_code=ErrorCode.INVALID_REQUEST,
                                   error_message="Create topics request from client contains a duplicate topic",
                                   configs=[]))
            continue
        if t.name in denied:
            results.append(_Result(name=t.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   error_message="Authorization failed.", configs=[]))
            continue
        code, message, partitions = _check(state, t, state.node_id, taken)
        if code != ErrorCode.NONE:
            results.append(_Result(name=t.name, error_code=code, error_message=message, configs=[]))
            continue
        if state.quotas.active and not req.validate_only and state.quotas.mutation_refused(
                ctx, partitions, ctx.version >= 6):
            results.append(_Result(name=t.name, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                                   error_message="The throttling quota has been exceeded.", configs=[]))
            continue
        records += topic_records(partitions, len(t.configs))
        if records > MAX_RECORDS_PER_USER_OP:
            break
        overrides = {c.name: c.value for c in t.configs if c.value is not None}
        topic_id = uuid.uuid4()   # validate_only too: Kafka answers the id the topic would have had (v7+)
        res = _Result(name=t.name, error_code=ErrorCode.NONE, error_message=None, configs=[], topic_id=topic_id)
        if authz.allowed(ctx, authz.Op.DESCRIBE_CONFIGS, authz.TOPIC, t.name):
            res.num_partitions = partitions
            res.replication_factor = state.placement.replication_factor(t.name, t.replication_factor)
            described.append((res, overrides))
        else:   # created, but its configs and sizes are not shown (v5+ topic_config_error_code, as Kafka)
            res.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if not req.validate_only:
            state.pending_topics.add(t.name)   # reserved before any await: no second creator can pass _check
            state.placement.plan_replication(t.name, t.replication_factor)
            taken[t.name.replace(".", "_")] = t.name
            todo.append((len(results), t.name, partitions, overrides, topic_id))
        results.append(res)
    if records > MAX_RECORDS_PER_USER_OP:   # nothing was created yet: give the reservations back
        for _i, name, *_rest in todo:
            state.pending_topics.discard(name)
        return CreateTopicsResponse(throttle_time_ms=0, topics=[
            _Result(name=t.name, error_code=ErrorCode.POLICY_VIOLATION, error_message=EXCESSIVE_BATCH_MESSAGE,
                    configs=[]) for t in req.topics])
    try:
        await _describe(state, described)
    except BaseException:   # cancelled (connection closed, shutdown): the names are free again
        for _i, name, *_rest in todo:
            state.pending_topics.discard(name)
        raise
    if todo:
        await _create(state, todo, results)
    return CreateTopicsResponse(throttle_time_ms=state.quotas.mutation_throttle(ctx) if state.quotas.active else 0,
                                topics=results)


def _taken(state: BrokerState) -> dict[str, str]:
    """The '.'->'_' form of every existing or reserved topic name, to the name."""
    return {n.replace(".", "_"): n for n in (*state.topics, *state.pending_topics)}


async def _describe(state: BrokerState, described: list[tuple[Any, dict[str, str]]]) -> None:
    """List each valid topic's resulting configs in its result, in slices: ~40 entries with synonyms per topic,
    ~0.1 ms each, so 2,000 topics held the loop ~0.2 s (bench_hostile create_topics_2000)."""
    work = Slices()
    for res, overrides in described:
        if work.due():
            await work.pause()
        res.configs = [CreateTopicsResponse.CreatableTopicConfigs(
            name=e.name, value=e.value, read_only=e.read_only, config_source=e.source, is_sensitive=e.sensitive)
            for e in describe_topic(state, overrides)]


async def _create(state: BrokerState, todo: list[tuple[int, str, int, dict[str, str], uuid.UUID]],
                  results: list[Any]) -> None:
    """Make each reserved topic's logs in a worker thread and publish it; release every reservation."""
    with_configs = False
    try:
        for i, name, partitions, overrides, topic_id in todo:
            try:
                await trio.to_thread.run_sync(state.topics.create_logs, name, partitions, overrides, topic_id)
            except StorageError as exc:
                log.error("cannot create topic %s: %s", name, exc)
                results[i] = _Result(name=name, error_code=error_code_for(exc), error_message=str(exc),
                                     configs=[])
            else:
                state.topics.register(name, partitions, overrides, topic_id, write_configs=False)
                with_configs = with_configs or bool(overrides)
                if partitions > 100:
                    freeze_long_lived()   # before the next topic's objects make a full collection long
            finally:
                state.pending_topics.discard(name)
    finally:
        for _i, name, *_rest in todo:
            state.pending_topics.discard(name)
        if with_configs:
            state.metadata.write_topic_configs()
