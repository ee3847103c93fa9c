"""StreamsGroupHeartbeat (key 88): v0-v1 -- KIP-1071 streams groups (Kafka Streams ``group.protocol=streams``).

- A member joins with MemberEpoch 0, its client-generated member id, its topology (epoch and subtopologies),
  process id, rebalance timeout and empty task lists; later heartbeats send only what changed (null =
  unchanged), the tasks it owns among them; it leaves with epoch -1 (static members -2).
- The response carries the member epoch, the heartbeat interval, the acceptable recovery lag and task offset
  interval, the group's statuses (missing or mis-partitioned topics, a stale topology, a shutdown request),
  the member's tasks when they changed, and the partitions by user endpoint (interactive queries) when the
  member's endpoint information epoch is behind the group's.
- v1 (KIP-1331): AcceptableRecoveryLag is an int64 (v0's int32 field is AcceptableRecoveryLagLegacy), and
  TopologyDescriptionRequired (always false here: no topology description plugin).
The group logic lives in ``kafkalite/coordinator/streams/``.

While ``streams.version`` is not finalized at 1 or above (UpdateFeatures can take it to 0), the request is
UNSUPPORTED_VERSION, as Kafka's ``KafkaApis.isStreamsGroupProtocolEnabled`` answers.

Authorization (Kafka 4.x ``KafkaApis.handleStreamsGroupHeartbeat``): READ on the group, else
GROUP_AUTHORIZATION_FAILED; DESCRIBE on the topology's source topics, else TOPIC_AUTHORIZATION_FAILED; internal
topics are created only with CREATE on the cluster or the topic (else the MISSING_INTERNAL_TOPICS status says
"Unauthorized to CREATE on topics ...").
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.streams.coordinator import HeartbeatRequest
from kafkalite.coordinator.streams.model import Subtopology, TaskMap, Topology
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse

R = StreamsGroupHeartbeatResponse
Q = StreamsGroupHeartbeatRequest


def _tasks(ts: list[Q.TaskIds] | None) -> TaskMap | None:
    if ts is None:
        return None
    out: TaskMap = {}
    for t in ts:
        out.setdefault(t.subtopology_id, set()).update(t.partitions)
    return out


def _offsets(ts: list[Q.TaskOffset] | None) -> list[tuple[str, int, int]] | None:
    return None if ts is None else [(t.subtopology_id, t.partition, t.offset) for t in ts]


def _topology(t: Q.Topology | None) -> Topology | None:
    if t is None:
        return None
    return Topology(t.epoch, [Subtopology(
        s.subtopology_id, list(s.source_topics), list(s.source_topic_regex), list(s.repartition_sink_topics),
        [(i.name, i.partitions, i.replication_factor, {kv.key: kv.value for kv in i.topic_configs})
         for i in s.repartition_source_topics],
        [(i.name, i.partitions, i.replication_factor, {kv.key: kv.value for kv in i.topic_configs})
         for i in s.state_changelog_topics],
        [(list(c.source_topics), list(c.source_topic_regex), list(c.repartition_source_topics))
         for c in s.copartition_groups]) for s in t.subtopologies])


def _task_ids(m: TaskMap) -> list[R.TaskIds]:
    return [R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(m.items()) if ps]


def _tps(m: dict[str, set[int]]) -> list[R.TopicPartition]:
    return [R.TopicPartition(topic=t, partitions=sorted(ps)) for t, ps in sorted(m.items()) if ps]


def streams_enabled(ctx: RequestContext) -> bool:
    """``streams.version`` >= 1 (finalized), as Kafka 4.4 requires for the streams group APIs."""
    features = getattr(ctx.broker, "features", None)
    return features is not None and int(features.finalized().get("streams.version", 0)) >= 1


@handler(StreamsGroupHeartbeatRequest, min_version=0, max_version=1)
async def streams_group_heartbeat(ctx: RequestContext, req: StreamsGroupHeartbeatRequest) -> R:
    svc = ctx.broker.groups
    if svc is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not streams_enabled(ctx):
        return R(error_code=ErrorCode.UNSUPPORTED_VERSION)
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return R(error_code=err)
    if req.topology is not None:
        sources = [t for s in req.topology.subtopologies for t in s.source_topics]
        if sources and authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, sources):
            return R(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ep = req.user_endpoint
    hb = HeartbeatRequest(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        endpoint_information_epoch=req.endpoint_information_epoch, instance_id=req.instance_id,
        rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms, topology=_topology(req.topology),
        active_tasks=_tasks(req.active_tasks), standby_tasks=_tasks(req.standby_tasks),
        warmup_tasks=_tasks(req.warmup_tasks), process_id=req.process_id,
        user_endpoint=(ep.host, ep.port) if ep is not None else None,
        client_tags=None if req.client_tags is None else {kv.key: kv.value for kv in req.client_tags},
        shutdown_application=req.shutdown_application,
        task_offsets=_offsets(req.task_offsets), task_end_offsets=_offsets(req.task_end_offsets), client_id=ctx.client_id or "",
        client_host=f"/{ctx.client_host}")
    res = await svc.streams.heartbeat(hb, lambda names: sorted(authz.create_denied(ctx, names)))
    if res.error_code:
        return R(error_code=res.error_code, error_message=res.error_message)
    out = R(error_code=0, member_id=res.member_id, member_epoch=res.member_epoch,
            heartbeat_interval_ms=res.heartbeat_interval_ms, task_offset_interval_ms=res.task_offset_interval_ms,
            endpoint_information_epoch=res.endpoint_information_epoch,
            status=[R.Status(status_code=c, status_detail=d) for c, d in res.statuses or []])
    if ctx.version >= 1:   # v0's AcceptableRecoveryLagLegacy stays 0, as Kafka 4.4 answers it
        out.acceptable_recovery_lag = res.acceptable_recovery_lag
    if res.tasks is not None:
        out.active_tasks = _task_ids(res.tasks.active)
        out.standby_tasks = _task_ids(res.tasks.standby)
        out.warmup_tasks = _task_ids(res.tasks.warmup)
    if res.endpoints is not None:
        out.partitions_by_user_endpoint = [
            R.EndpointToPartitions(user_endpoint=R.Endpoint(host=h, port=p), active_partitions=_tps(a),
                                   standby_partitions=_tps(s)) for (h, p), a, s in res.endpoints]
    return out
