"""Metadata (key 3): v0–v13 (v13 adds a top-level ErrorCode, KIP-1102: REBOOTSTRAP_REQUIRED when a broker wants
its clients to re-bootstrap; kafkalite never does, so it is always NONE).

- This broker is the only node: it leads every partition (at the log's latest leader epoch, 0 for new logs) and is the sole replica and ISR member;
  the broker list holds the advertised address of the listener the client came in on.
- Several brokers (``kafkalite.cluster``): every running broker, and each partition's leader, epoch, replicas,
  ISR and offline replicas from the shared metadata (``kafkalite.cluster.views``); no live leader:
  LEADER_NOT_AVAILABLE.
- Topics: null (v1+) or an empty list at v0 means "all topics". From v10 a topic may be named by id alone;
  an unknown id answers UNKNOWN_TOPIC_ID.
- Unknown topics are auto-created with ``num.partitions`` when ``auto.create.topics.enable`` is on and the
  request allows it (AllowAutoTopicCreation, v4+; always before v4). The request that creates a topic is
  answered UNKNOWN_TOPIC_OR_PARTITION for it, as a KRaft Kafka answers while its controller creates the topic
  (AutoTopicCreationManager.sendCreateTopicRequest; checked against Kafka 4.4 at v1, v3 and v12); the next
  Metadata request finds it (we create it synchronously). Clients retry that error; one that does not (kafkajs
  2.2.4's consumer.subscribe) fails the same way on both brokers. Illegal names answer
  INVALID_TOPIC_EXCEPTION, others UNKNOWN_TOPIC_OR_PARTITION.
- v10+ carries non-zero topic ids, which lets Java/librdkafka use Fetch v13+ (topic ids instead of names).
- v10 and v11 let a topic name be null on the wire but may not use it (nor a non-zero topic id): Kafka
  refuses the request with INVALID_REQUEST, answering every requested topic with that error, a null name as
  "" (``MetadataRequest.getErrorResponse``); the response cannot carry a null name before v12.
- Authorization (KafkaApis.handleTopicMetadataRequest): an all-topics request leaves out the topics the
  principal may not DESCRIBE; a named one answers them TOPIC_AUTHORIZATION_FAILED (by id: the id, no name).
  Auto-creation needs CREATE on the cluster or on the topic (else TOPIC_AUTHORIZATION_FAILED). Authorized
  operations (v8+, when asked) are the principal's; without an authorizer every supported operation.
"""
from __future__ import annotations

import uuid

import trio

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import RESERVED_TOPICS, TopicInfo, invalid_topic_name
from kafkalite.runtime.slices import Slices
from kafkalite.state import BrokerState
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import MetadataRequest, MetadataResponse

# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation codes 3-8, 10, 11)
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# + CLUSTER_ACTION(9), IDEMPOTENT_WRITE(12), ALTER/DESCRIBE, CREATE
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
_ZERO_UUID = uuid.UUID(int=0)
_AUTHORIZED_OPS_UNSET = -2147483648
BIG_METADATA_PARTITIONS = 5000   # an all-topics answer larger than this is built in a worker thread


def topic_metadata(state: BrokerState, info: TopicInfo, include_ops: bool) -> MetadataResponse.MetadataResponseTopic:
    """A topic's partitions as ``state.placement`` places them (no live leader: LEADER_NOT_AVAILABLE)."""
    P = MetadataResponse.MetadataResponsePartition
    partitions = [
        P(error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p,
          leader_id=leader, leader_epoch=epoch, replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline)
        for p, (leader, epoch, replicas, isr, offline) in enumerate(state.placement.partitions(info.name,
                                                                                               info.partitions))
    ]
    return MetadataResponse.MetadataResponseTopic(
        error_code=ErrorCode.NONE, name=info.name, topic_id=info.topic_id, is_internal=info.internal,
        partitions=partitions,
        topic_authorized_operations=TOPIC_OPERATIONS if include_ops else _AUTHORIZED_OPS_UNSET)


def _error_topic(name: str | None, code: ErrorCode, topic_id: uuid.UUID = _ZERO_UUID
                 ) -> MetadataResponse.MetadataResponseTopic:
    return MetadataResponse.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[])


@handler(MetadataRequest, min_version=0, max_version=13)
async def metadata(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    state = ctx.broker
    version = ctx.version
    include_ops = version >= 8 and bool(req.include_topic_authorized_operations)
    if version < 12 and req.topics and any(t.name is None or t.topic_id != _ZERO_UUID for t in req.topics):
        return MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id=state.cluster_id,
                                controller_id=state.node_id, topics=[
            _error_topic(t.name or "", ErrorCode.INVALID_REQUEST, t.topic_id) for t in req.topics])
    topics: list[MetadataResponse.MetadataResponseTopic] = []
    work = Slices()   # all topics, or a request naming 100,000: built in slices (each topic on its own)
    if req.topics is None or (version == 0 and not req.topics):
        infos = list(state.topics.values())
        if sum(i.partitions for i in infos) > BIG_METADATA_PARTITIONS:   # build it off the event loop
            built = await trio.to_thread.run_sync(
                lambda: [(info, topic_metadata(state, info, include_ops)) for info in infos])
            topics = [md for info, md in built if state.topics.get(info.name) is info]   # not deleted meanwhile
        else:
            for info in infos:
                if work.due():
                    await work.pause()
                if state.topics.get(info.name) is info:   # not deleted meanwhile
                    topics.append(topic_metadata(state, info, include_ops))
        if state.authorizer is not None:
            hidden = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in topics))
            topics = [t for t in topics if t.name not in hidden]
    else:
        allow_create = state.config.auto_create_topics and (version < 4 or req.allow_auto_topic_creation)
        denied = () if state.authorizer is None else authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (
            t.name or getattr(state.topics_by_id.get(t.topic_id), "name", None) for t in req.topics))
        for t in req.topics:
            if work.due():
                await work.pause()
            name = t.name
            if name is None or (name == "" and version >= 10 and t.topic_id != _ZERO_UUID):
                info = state.topics_by_id.get(t.topic_id)
                if info is None:
                    topics.append(_error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, t.topic_id))
                elif info.name in denied:
                    topics.append(_error_topic(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, t.topic_id))
                else:
                    topics.append(topic_metadata(state, info, include_ops))
                continue
            if name in denied:
                topics.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            info = state.topics.get(name)
            if info is None:
                if invalid_topic_name(name):
                    topics.append(_error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
                    continue
                if not allow_create or name in RESERVED_TOPICS:
                    topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                    continue
                if state.authorizer is not None and not authz.may_create_topic(ctx, name):
                    topics.append(_error_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                if name in state.pending_topics:   # being created or deleted in a worker thread
                    topics.append(_error_topic(name, ErrorCode.LEADER_NOT_AVAILABLE))
                    continue
                state.topics.ensure(name)
                topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))   # Kafka's KRaft answer
                continue
            topics.append(topic_metadata(state, info, include_ops))

    if include_ops and state.authorizer is not None:
        for t in topics:
            if t.topic_authorized_operations != _AUTHORIZED_OPS_UNSET and t.name:
                t.topic_authorized_operations = authz.topic_ops(ctx, t.name)
    include_cluster_ops = 8 <= version <= 10 and bool(req.include_cluster_authorized_operations)
    brokers = [MetadataResponse.MetadataResponseBroker(node_id=n, host=h, port=p, rack=None)
               for n, h, p in state.placement.brokers(ctx.listener)]
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=state.cluster_id,
        controller_id=state.placement.controller(),
        topics=topics,
        cluster_authorized_operations=(authz.cluster_ops(ctx) if authz.cluster_allowed(ctx, authz.Op.DESCRIBE) else 0)
        if include_cluster_ops else _AUTHORIZED_OPS_UNSET,
    )
