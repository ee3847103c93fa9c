"""CreatePartitions (key 37): v0–v3.

Raises a topic's partition count to ``Count``. Errors per topic: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS
(count not above the current one), INVALID_REPLICA_ASSIGNMENT (Kafka 3.9 controller's checks and messages:
as many assignments as new partitions, each naming registered brokers, i.e. this node, once; ``[[1]]`` on
node 1 is accepted), INVALID_REQUEST (a topic named twice, or an internal topic). ValidateOnly checks without changing
anything. A request adding more than 10,000 partitions in all fails whole with POLICY_VIOLATION, as Kafka's
controller answers it (``kafkalite.handlers.limits``).

The internal topics (``__consumer_offsets``, ``__transaction_state``) keep the partition count the broker gave
them: a group's or transactional id's partition is ``hash(id) % count``, so a new count would move every
group's state to a partition that holds none of it. Kafka 3.9 (KRaft) does not stop a client with cluster
rights from doing it; kafkalite refuses with INVALID_REQUEST, the code Kafka uses for an operation on an
internal topic it prohibits (CreateTopics of ``__cluster_metadata``).

New partition directories are made in a worker thread while the topic is reserved (a second CreatePartitions
or a DeleteTopics of it meanwhile answers as if it were being created); a topic whose new partitions cannot
all be made answers KAFKA_STORAGE_ERROR and keeps its old count, with nothing half-made left behind.
- Authorization: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.
- controller_mutation_rate: v3+ answers THROTTLING_QUOTA_EXCEEDED while the quota is used up (kafkalite.quotas).
"""
from __future__ import annotations

import logging
from collections import Counter

import trio

from kafkalite import authz
from kafkalite.errors import error_code_for
from kafkalite.handlers.limits import EXCESSIVE_BATCH_MESSAGE, MAX_RECORDS_PER_USER_OP
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import INTERNAL_TOPICS
from kafkalite.state.placement import check_manual_assignment
from kafkalite_storage.errors import StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import CreatePartitionsRequest, CreatePartitionsResponse

log = logging.getLogger(__name__)
_Result = CreatePartitionsResponse.CreatePartitionsTopicResult


@handler(CreatePartitionsRequest, min_version=0, max_version=3)
async def create_partitions(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    state = ctx.broker
    counts = Counter(t.name for t in req.topics)
    new = 0   # PartitionRecords Kafka would write: bounded per request, the whole request fails beyond it
    for t in req.topics:
        info = state.topics.get(t.name)
        if info is not None and not info.internal and t.count > info.partitions:
            new += t.count - info.partitions
    if new > MAX_RECORDS_PER_USER_OP:
        return CreatePartitionsResponse(throttle_time_ms=0, results=[
            _Result(name=t.name, error_code=ErrorCode.POLICY_VIOLATION, error_message=EXCESSIVE_BATCH_MESSAGE)
            for t in req.topics])
    results = []
    denied = authz.denied(ctx, authz.Op.ALTER, authz.TOPIC, counts)
    for t in req.topics:
        info = state.topics.get(t.name)
        if counts[t.name] > 1:
            code, msg = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
        elif t.name in denied:
            code, msg = ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
        elif info is None:
            code, msg = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None   # Kafka's controller sets no message
        elif info.internal or t.name in INTERNAL_TOPICS:
            code, msg = ErrorCode.INVALID_REQUEST, (
                f"The partition count of internal topic {t.name} cannot be changed (the broker manages it).")
        elif t.name in state.pending_topics:
            code, msg = ErrorCode.REASSIGNMENT_IN_PROGRESS, "The topic is being changed by another request."
        elif t.count <= info.partitions:
            code, msg = ErrorCode.INVALID_PARTITIONS, (
                f"The topic {t.name} currently has {info.partitions} partition(s); {t.count} would not be an "
                "increase." if t.count < info.partitions else f"Topic already has {info.partitions} partition(s).")
        elif t.assignments is not None and (why := _check_assignments(
                [list(a.broker_ids) for a in t.assignments], t.count - info.partitions, info.partitions,
                state.node_id)):
            code, msg = ErrorCode.INVALID_REPLICA_ASSIGNMENT, why
        elif state.quotas.active and not req.validate_only and state.quotas.mutation_refused(
                ctx, t.count - info.partitions, ctx.version >= 3):
            code, msg = ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded."
        else:
            code, msg = ErrorCode.NONE, None
            if not req.validate_only and info is not None:
                state.pending_topics.add(t.name)
                try:
                    await trio.to_thread.run_sync(state.topics.create_logs, t.name, t.count, info.config,
                                                  info.topic_id, info.partitions)
                    old, info.partitions = info.partitions, t.count
                    state.placement.register_partitions(t.name, t.count, old)   # replicas and leaders
                except StorageError as exc:
                    log.error("cannot add partitions to %s: %s", t.name, exc)
                    code, msg = error_code_for(exc), str(exc)
                finally:
                    state.pending_topics.discard(t.name)
        results.append(_Result(name=t.name, error_code=code, error_message=msg))
    return CreatePartitionsResponse(
        throttle_time_ms=state.quotas.mutation_throttle(ctx) if state.quotas.active else 0, results=results)


def _check_assignments(assignments: list[list[int]], additional: int, first_new: int, node_id: int) -> str | None:
    """Kafka 3.9's ReplicationControlManager checks of manual assignments, with its messages: one per new
    partition, each valid for the topic's replication factor (1 here) (``kafkalite.state.placement``)."""
    if len(assignments) != additional:
        return (f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified.")
    for replicas in assignments:
        why = check_manual_assignment(replicas, node_id, 1)
        if why is not None:
            return why
    return None
