"""DescribeShareGroupOffsets (key 90): v0–v1 (v1 adds Lag, KIP-1226).

Per group and partition: the share-partition start offset (-1 where the group has no state for it yet), the
leader epoch, and (v1) the lag — records from the start offset to the high watermark whose delivery is not
complete (-1 when unknown). Null Topics means every partition the group has state for or was assigned (Kafka 4.x
initialises a share-partition at assignment with start offset -1, resolved by the first ShareFetch: -1 and lag -1
until then). A group id no share group has answers as Kafka 4.4 reads absent state: no error, each named
partition with start offset -1, leader epoch 0 and lag -1 (a classic group's id: GROUP_ID_NOT_FOUND); in an
existing group an unknown topic's partitions carry UNKNOWN_TOPIC_OR_PARTITION.

Authorization (``KafkaApis.handleDescribeShareGroupOffsetsRequest``): DESCRIBE on each group (else
GROUP_AUTHORIZATION_FAILED); a named topic without DESCRIBE answers TOPIC_AUTHORIZATION_FAILED per partition
(start offset -1, Kafka's message), and null Topics (all) leaves such topics out.
"""
from __future__ import annotations

import uuid

from kafkalite import authz
from kafkalite.coordinator.common.keys import group_id_error
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.share_group_heartbeat import classic_group_exists
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse

_Resp = DescribeShareGroupOffsetsResponse


def _topic_id(state: object, name: str) -> uuid.UUID:
    info = state.topics.get(name)  # type: ignore[attr-defined]
    return info.topic_id if info is not None else uuid.UUID(int=0)


@handler(DescribeShareGroupOffsetsRequest, min_version=0, max_version=1)
async def describe_share_group_offsets(ctx: RequestContext,
                                       req: DescribeShareGroupOffsetsRequest) -> DescribeShareGroupOffsetsResponse:
    state = ctx.broker
    svc = state.shares
    out = []
    for g in req.groups:
        def error(code: int, gid: str = g.group_id) -> _Resp.DescribeShareGroupOffsetsResponseGroup:
            return _Resp.DescribeShareGroupOffsetsResponseGroup(group_id=gid, topics=[], error_code=code)
        if err := authz.group_error(ctx, authz.Op.DESCRIBE, g.group_id):
            out.append(error(err))
            continue
        if svc is None:
            out.append(error(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            continue
        if group_id_error(g.group_id) is not None:
            out.append(error(ErrorCode.INVALID_GROUP_ID))
            continue
        if svc.loading:
            out.append(error(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            continue
        if classic_group_exists(ctx, g.group_id):
            out.append(error(ErrorCode.GROUP_ID_NOT_FOUND))
            continue
        if g.group_id not in svc.groups.groups:   # Kafka 4.4 reads the (absent) state: no error, nothing known
            out.append(_Resp.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, error_code=0, topics=[
                _Resp.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=t.topic_name, topic_id=_topic_id(state, t.topic_name), partitions=[
                        _Resp.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=-1,
                                                                         leader_epoch=0, lag=-1, error_code=0)
                        for p in t.partitions])
                for t in g.topics or []]))
            continue
        topics: dict = {}
        if g.topics is None:
            rows = await svc.describe_offsets(g.group_id, None)
        else:
            wanted = []
            hidden = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.topic_name for t in g.topics))
            for t in g.topics:
                info = state.topics.get(t.topic_name)
                if t.topic_name in hidden:
                    topics[t.topic_name] = _Resp.DescribeShareGroupOffsetsResponseTopic(
                        topic_name=t.topic_name, partitions=[_Resp.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p, start_offset=-1, leader_epoch=-1, lag=-1,
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            error_message=authz.TOPIC_DENIED_MESSAGE) for p in t.partitions])
                    continue
                if info is None or info.internal:
                    topics[t.topic_name] = _Resp.DescribeShareGroupOffsetsResponseTopic(
                        topic_name=t.topic_name, partitions=[_Resp.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p, start_offset=-1, leader_epoch=-1, lag=-1,
                            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in t.partitions])
                    continue
                wanted += [(info.topic_id, p) for p in t.partitions]
            rows = await svc.describe_offsets(g.group_id, wanted)
        for (tid, p), start, lag in rows:
            name = svc.topic_name(tid)
            if name is None or not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, name):
                continue
            info = state.topics[name]
            ok = 0 <= p < info.partitions
            part = _Resp.DescribeShareGroupOffsetsResponsePartition(
                partition_index=p, start_offset=start if ok else -1,
                leader_epoch=state.leader_epoch_of(name, p) if ok else -1, lag=lag if ok else -1,
                error_code=0 if ok else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            topics.setdefault(name, _Resp.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=tid, partitions=[])).partitions.append(part)
        out.append(_Resp.DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=list(topics.values())))
    return _Resp(throttle_time_ms=0, groups=out)
