"""OffsetFetch (key 9): v0–v10.

- v0–v7: one group. Topics null (v2+) means "every committed offset of the group". A group-level
  error is in the top-level ErrorCode from v2; v0–v1 put it on every requested partition.
- v5 adds CommittedLeaderEpoch; v7 RequireStable (partitions with pending transactional commits get
  UNSTABLE_OFFSET_COMMIT); v8 batches several groups (each with its own error); v9 adds member
  id/epoch, which only KIP-848 groups check (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH unless the epoch is the
  member's current one; member epoch -1 without a member id is an admin fetch). v10 names topics by id
  (KIP-848): an id no topic has answers UNKNOWN_TOPIC_ID on its partitions; asking for all topics leaves out
  offsets of topics that no longer exist (they have no id to name them by).
- Partitions without a committed offset answer offset -1, metadata "" and no error, whatever the
  group state (Kafka answers offsets "blindly": a group may use Kafka only to store offsets).
- Authorization: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED), DESCRIBE on each named topic (else
  TOPIC_AUTHORIZATION_FAILED on its partitions); asking for all topics leaves out those it may not describe.
"""
from __future__ import annotations

import uuid
from typing import Any

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import OffsetFetchRequest, OffsetFetchResponse

R = OffsetFetchResponse


_CHUNK = 1024   # partitions looked up per slice


async def _fetch(ctx: RequestContext, group_id: str, topics: list | None, require_stable: bool,
                 work: Slices) -> tuple[int, list[list]]:
    """The group's offsets for ``topics`` (None: all), as rows in chunks. A request may list a million
    partitions, so they are looked up ``_CHUNK`` at a time, in slices (the lookup only reads), and no list of
    them all is made: building one, and freeing it and the rows in one go, held the loop ~130 ms each
    (fuzz seed 7 frames 58286, 107748: a 4 MB OffsetFetch of a million partitions)."""
    state = ctx.broker
    svc = state.groups
    if svc is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, [[(t.name, p, None, ErrorCode.COORDINATOR_NOT_AVAILABLE)
                                                      for t in topics or [] for p in t.partition_indexes]]
    group_err = authz.group_error(ctx, authz.Op.DESCRIBE, group_id)
    if group_err:
        return group_err, [[(t.name, p, None, group_err) for t in topics or [] for p in t.partition_indexes]]
    if topics is None:
        err, rows = svc.fetch_offsets(group_id, None, require_stable)
        if state.authorizer is not None:   # all topics: those it may not describe are left out
            hidden = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (r[0] for r in rows))
            rows = [r for r in rows if r[0] not in hidden]
        return err, [rows]
    denied = authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, (t.name for t in topics))
    chunks: list[list] = [[(t.name, p, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                           for t in topics if t.name in denied for p in t.partition_indexes]] if denied else []
    batch: list = []
    err = ErrorCode.NONE
    for t in topics:
        if t.name in denied:
            continue
        for p in t.partition_indexes:
            batch.append((t.name, p))
            if len(batch) == _CHUNK:
                err, part = svc.fetch_offsets(group_id, batch, require_stable)
                chunks.append(part)
                batch = []
                if err != ErrorCode.NONE:
                    return err, chunks
                await work.pause()
    if batch or not chunks:
        err, part = svc.fetch_offsets(group_id, batch, require_stable)
        chunks.append(part)
    return err, chunks


async def _topics(chunks: list[list], work: Slices, topic_cls: Any, partition_cls: Any) -> list:
    """Response topics for rows (topic, partition, offset-and-metadata | None, error), built in slices; each
    chunk of rows is dropped (freed) once used."""
    grouped: dict[str, list] = {}
    for i in range(len(chunks)):
        rows, chunks[i] = chunks[i], []
        for topic, partition, om, err in rows:
            if work.due():
                await work.pause()
            grouped.setdefault(topic, []).append(partition_cls(
                partition_index=partition, committed_offset=om.offset if om else -1,
                committed_leader_epoch=om.leader_epoch if om else -1, metadata=om.metadata if om else "",
                error_code=err))
        del rows
    return [topic_cls(name=topic, partitions=parts) for topic, parts in grouped.items()]


_UNKNOWN = "\0unknown-topic-id:"   # the row name of a topic asked for by an id no topic has (v10+)


def _by_id(state: Any, topics: list[Any] | None) -> list[Any] | None:
    """v10+: name the requested topics from their ids; an unknown id gets a name no topic can have."""
    if topics is None:
        return None
    for t in topics:
        info = state.topics_by_id.get(t.topic_id)
        t.name = info.name if info is not None else f"{_UNKNOWN}{t.topic_id}"
    return topics


def _with_ids(state: Any, topics: list[Any]) -> list[Any]:
    """v10+: each response topic carries its id; unknown ids their error, topics gone (no id) are left out."""
    out = []
    for t in topics:
        if t.name.startswith(_UNKNOWN):
            t.topic_id = uuid.UUID(t.name[len(_UNKNOWN):])
            for p in t.partitions:
                p.error_code, p.committed_offset, p.committed_leader_epoch = ErrorCode.UNKNOWN_TOPIC_ID, -1, -1
            t.name = ""
        else:
            info = state.topics.get(t.name)
            if info is None:
                continue
            t.topic_id = info.topic_id
        out.append(t)
    return out


@handler(OffsetFetchRequest, min_version=0, max_version=10)
async def offset_fetch(ctx: RequestContext, req: OffsetFetchRequest) -> OffsetFetchResponse:
    state = ctx.broker
    v = ctx.version
    work = Slices()
    if v >= 8:
        groups = []
        for g in req.groups:
            svc = state.groups
            if v >= 9 and svc is not None:   # KIP-848/1071: a member's epoch must be current
                bad = svc.consumer.coordinator.validate_offset_fetch(g.group_id, g.member_id, g.member_epoch) \
                    or svc.streams.coordinator.offset_fetch_error(g.group_id, g.member_id, g.member_epoch)
                if bad:
                    groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=bad))
                    continue
            wanted = _by_id(state, g.topics) if v >= 10 else g.topics
            err, rows = await _fetch(ctx, g.group_id, wanted, req.require_stable, work)
            found = await _topics(rows, work, R.OffsetFetchResponseTopics, R.OffsetFetchResponsePartitions)
            groups.append(R.OffsetFetchResponseGroup(group_id=g.group_id, error_code=err,
                                                     topics=_with_ids(state, found) if v >= 10 else found))
        return R(throttle_time_ms=0, groups=groups)
    topics = req.topics if (v >= 2 or req.topics is not None) else []
    err, rows = await _fetch(ctx, req.group_id, topics, req.require_stable if v >= 7 else False, work)
    if err != ErrorCode.NONE and v < 2:
        rows = [[(t.name, p, None, err) for t in topics or [] for p in t.partition_indexes]]
    return R(throttle_time_ms=0, error_code=err if v >= 2 else 0, topics=await _topics(
        rows, work, R.OffsetFetchResponseTopic, R.OffsetFetchResponsePartition))
