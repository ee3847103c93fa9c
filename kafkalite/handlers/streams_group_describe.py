"""StreamsGroupDescribe (key 89): v0-v1 -- KIP-1071 streams groups.

Per group: state (Empty, NotReady, Assigning, Reconciling, Stable), group epoch, target assignment epoch, the
topology as the members sent it (Kafka shows the stored topology record, not the configured one), and per member its epochs, client, process, endpoint, client
tags, task offsets, current and target tasks. v1 (KIP-1331/KIP-1357): TopologyDescriptionStatus (1 NOT_STORED
when asked for: kafkalite stores no topology description) and AssignorName ("sticky"). An unknown group, or
another kind of group, is GROUP_ID_NOT_FOUND; while ``__consumer_offsets`` loads, COORDINATOR_LOAD_IN_PROGRESS.

Authorization (Kafka 4.x ``KafkaApis.handleStreamsGroupDescribe``): DESCRIBE on each group, else that group
answers GROUP_AUTHORIZATION_FAILED; AuthorizedOperations (when asked for) are the principal's operations on the
group; a group whose topology names a source or internal topic the principal may not DESCRIBE answers
TOPIC_AUTHORIZATION_FAILED with no members.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.coordinator.streams.model import StreamsGroup, TaskMap, Tasks
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.streams_group_heartbeat import streams_enabled
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import StreamsGroupDescribeRequest, StreamsGroupDescribeResponse

R = StreamsGroupDescribeResponse
NOT_REQUESTED = -(2**31)
HIDDEN_TOPICS = "The described group uses topics that the client is not authorized to describe."
NOT_STORED = 1


def _ids(m: TaskMap) -> list[R.TaskIds]:
    return [R.TaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(m.items()) if ps]


def _assignment(t: Tasks) -> R.Assignment:
    return R.Assignment(active_tasks=_ids(t.active), standby_tasks=_ids(t.standby), warmup_tasks=_ids(t.warmup))


def _info(i: tuple[str, int, int, dict[str, str]]) -> R.TopicInfo:
    name, parts, rf, cfg = i
    return R.TopicInfo(name=name, partitions=parts, replication_factor=rf,
                       topic_configs=[R.KeyValue(key=k, value=v) for k, v in sorted(cfg.items())])


def _topology(g: StreamsGroup) -> R.Topology | None:
    """The topology as the members sent it (Kafka's StreamsGroupTopologyValue), not as configured."""
    if g.topology is None:
        return None
    return R.Topology(epoch=g.topology.epoch, subtopologies=[R.Subtopology(
        subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
        repartition_sink_topics=list(s.repartition_sink_topics),
        state_changelog_topics=[_info(i) for i in s.state_changelog_topics],
        repartition_source_topics=[_info(i) for i in s.repartition_source_topics])
        for s in sorted(g.topology.subtopologies, key=lambda x: x.subtopology_id)])


def _topics(g: StreamsGroup) -> set[str]:
    if g.topology is None:
        return set()
    out: set[str] = set()
    for s in g.topology.subtopologies:
        out.update(s.source_topics, s.repartition_sink_topics)
        out.update(n for n, *_ in s.repartition_source_topics)
        out.update(n for n, *_ in s.state_changelog_topics)
    return out


@handler(StreamsGroupDescribeRequest, min_version=0, max_version=1)
async def streams_group_describe(ctx: RequestContext, req: StreamsGroupDescribeRequest) -> R:
    svc = ctx.broker.groups
    out = []
    work = Slices()   # a request may name a million groups: answered in slices of the event loop
    for gid in req.group_ids:
        if work.due():
            await work.pause()
        if not streams_enabled(ctx):
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.UNSUPPORTED_VERSION))
            continue
        if err := authz.group_error(ctx, authz.Op.DESCRIBE, gid):
            out.append(R.DescribedGroup(group_id=gid, error_code=err))
            continue
        if svc is None:
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
            continue
        coord = svc.streams.coordinator
        if svc.coordinator.loading:
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            continue
        g = coord.groups.get(gid)
        if g is None:
            other = gid in svc.coordinator.groups or gid in svc.consumer.coordinator.groups
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=(
                f"Group {gid} is not a streams group." if other else f"Group {gid} not found.")))
            continue
        if authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, _topics(g)):
            out.append(R.DescribedGroup(group_id=gid, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                        error_message=HIDDEN_TOPICS))
            continue
        ops = authz.group_ops(ctx, gid) if req.include_authorized_operations else NOT_REQUESTED
        d = R.DescribedGroup(
            group_id=gid, group_state=g.state(), group_epoch=g.group_epoch, assignment_epoch=g.target_epoch,
            topology=_topology(g), authorized_operations=ops, members=[R.Member(
                member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
                client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch,
                process_id=m.process_id,
                user_endpoint=R.Endpoint(host=m.user_endpoint[0], port=m.user_endpoint[1]) if m.user_endpoint
                else None,
                client_tags=[R.KeyValue(key=k, value=v) for k, v in sorted(m.client_tags.items())],
                task_offsets=[R.TaskOffset(subtopology_id=s, partition=p, offset=o) for s, p, o in m.task_offsets],
                task_end_offsets=[R.TaskOffset(subtopology_id=s, partition=p, offset=o)
                                  for s, p, o in m.task_end_offsets],
                assignment=_assignment(m.assigned), target_assignment=_assignment(g.target.get(m.member_id, Tasks())))
                for _mid, m in sorted(g.members.items())])
        if ctx.version >= 1:
            d.assignor_name = "sticky"
            d.topology_description_status = NOT_STORED if req.include_topology_description else 0
        out.append(d)
    return R(throttle_time_ms=0, groups=out)
