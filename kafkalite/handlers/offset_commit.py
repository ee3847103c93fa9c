"""OffsetCommit (key 8): v0–v10.

- v0 has no generation/member (a "simple" commit); v1 adds GenerationId, MemberId and a per-partition
  CommitTimestamp; v2–v4 carry RetentionTimeMs (an explicit expiry; -1 = broker default); v5 drops
  it; v6 adds CommittedLeaderEpoch; v7 GroupInstanceId; v8 is flexible; v9 (KIP-848) renames the
  generation to a member epoch, which for classic groups still means the generation. For a KIP-848
  consumer group the member must exist (UNKNOWN_MEMBER_ID), commit with v9+ (UNSUPPORTED_VERSION) and
  send its current member epoch (STALE_MEMBER_EPOCH); epoch -1 commits only to an empty group. v10 names
  topics by id (KIP-848): an id no topic has answers UNKNOWN_TOPIC_ID for its partitions; the answer names
  topics by id.
- Partitions of topics the broker does not know get UNKNOWN_TOPIC_OR_PARTITION (as Kafka's
  metadata-cache check); the rest go to the coordinator, which accepts generation -1 commits only for
  an Empty (or new) group and accepts member commits in Stable and PreparingRebalance.
- A null metadata is stored as "".
- Any int64 the client sends is accepted, as Kafka does: a commit timestamp or retention that would put the
  expiry past the int64 range (Java's long addition wraps there) saturates at the int64 maximum instead, so the
  offset commit record can still be written (before, the encoder failed and the connection was closed).
- A group id longer than a record key's int16 string (32,767 UTF-8 bytes) cannot be stored in
  ``__consumer_offsets``: the coordinator answers INVALID_GROUP_ID (``kafkalite.coordinator.common.keys``).
- Authorization: READ on the group (else GROUP_AUTHORIZATION_FAILED on every partition), READ on each topic
  (else TOPIC_AUTHORIZATION_FAILED on its partitions).
"""
from __future__ import annotations

from typing import Any

from kafkalite import authz
from kafkalite.coordinator.classic.group import OffsetAndMetadata
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import OffsetCommitRequest, OffsetCommitResponse

Resp = OffsetCommitResponse
_INT64_MAX = 2**63 - 1


def _expiry(base_ms: int, retention_ms: int) -> int:
    return min(base_ms + retention_ms, _INT64_MAX)


def resolve_topic_ids(state: object, topics: list[Any]) -> set[int]:
    """Name each topic entry named by id (v10+, Kafka's ``topic.setName``); the positions of unknown ids."""
    by_id = state.topics_by_id  # type: ignore[attr-defined]
    unknown = set()
    for i, t in enumerate(topics):
        info = by_id.get(t.topic_id)
        if info is None:
            unknown.add(i)
        else:
            t.name = info.name
    return unknown


@handler(OffsetCommitRequest, min_version=0, max_version=10)
async def offset_commit(ctx: RequestContext, req: OffsetCommitRequest) -> OffsetCommitResponse:
    state = ctx.broker
    v = ctx.version
    svc = state.groups
    now = ctx.now_ms()
    retention_ms = svc.config.offsets_retention_ms if svc is not None else 0
    errors: dict[tuple[str, int], int] = {}
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    unknown_ids = resolve_topic_ids(state, req.topics) if v >= 10 else set()
    group_err = authz.group_error(ctx, authz.Op.READ, req.group_id)
    denied = authz.denied(ctx, authz.Op.READ, authz.TOPIC, (t.name for i, t in enumerate(req.topics)
                                                             if i not in unknown_ids)) if not group_err else ()
    for ti, t in enumerate(req.topics):
        if ti in unknown_ids:
            continue
        known = t.name in state.topics
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            if svc is None:
                errors[tp] = ErrorCode.COORDINATOR_NOT_AVAILABLE
            elif group_err:
                errors[tp] = group_err
            elif t.name in denied:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not known:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                commit_ts, expire = now, None
                if v == 1 and p.commit_timestamp >= 0:
                    commit_ts, expire = p.commit_timestamp, _expiry(p.commit_timestamp, retention_ms)
                elif 2 <= v <= 4 and req.retention_time_ms >= 0:
                    expire = _expiry(now, req.retention_time_ms)
                offsets[tp] = OffsetAndMetadata(
                    offset=p.committed_offset, leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
                    metadata=p.committed_metadata or "", commit_timestamp=commit_ts, expire_timestamp=expire)
    if offsets and svc is not None:
        generation = req.generation_id_or_member_epoch if v >= 1 else -1
        member_id = req.member_id if v >= 1 else ""
        instance = req.group_instance_id if v >= 7 else None
        errors.update(svc.commit_offsets(req.group_id, member_id, instance, generation, offsets, version=v))
    topics = []
    for ti, t in enumerate(req.topics):
        topics.append(Resp.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            Resp.OffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=ErrorCode.UNKNOWN_TOPIC_ID if ti in unknown_ids
                else errors.get((t.name, p.partition_index), ErrorCode.NONE))
            for p in t.partitions]))
    return Resp(throttle_time_ms=0, topics=topics)
