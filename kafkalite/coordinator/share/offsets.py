"""Share group offsets admin (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) on a
``ShareService``: the group's coordinator answers, and the share-partitions are with each partition's leader
(the coordinator itself on a single broker; see ``cluster.py``)."""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.coordinator import errors as E
from kafkalite.coordinator.share.records import ShareKey

TP = tuple[uuid.UUID, int]
UNKNOWN_TOPIC_ID = 100


def owner_of(svc: Any, tid: uuid.UUID, p: int) -> Any:
    """The ShareService keeping the share-partitions of a topic-partition: its leader's (this one alone)."""
    return svc if svc.cluster is None else svc.cluster.owner(svc, svc.topic_name(tid), p)


def describe_offsets(svc: Any, group: str, partitions: Sequence[TP] | None) -> list[tuple[TP, int, int]]:
    """(partition, start offset or -1, lag or -1) — Kafka's DescribeShareGroupOffsets: the share-partition
    start offset, and (v1) the records not yet delivered completely."""
    if partitions is not None:
        keys = [ShareKey(group, tid, p) for tid, p in partitions]
    else:   # in a cluster the state is with each partition's leader: the group's list of them
        known = {(k.topic_id, k.partition) for k in svc.states.keys(group)}
        known |= {(tid, p) for tid, (_n, ps) in svc.membership.initialized_parts.get(group, {}).items()
                  for p in ps}
        keys = [ShareKey(group, tid, p) for tid, p in sorted(known, key=lambda k: (str(k[0]), k[1]))]
    out = []
    for k in keys:
        owner = owner_of(svc, k.topic_id, k.partition)
        start = owner.states.start_of(k)
        lag = -1
        sp = owner.states.parts.get(k)
        name = svc.topic_name(k.topic_id)
        plog = owner.state.get_log(name, k.partition) if name is not None and owner.state is not None else None
        if start >= 0 and plog is not None:
            done = sp.delivery_complete_count() if sp is not None else 0
            lag = max(plog.high_watermark - start - done, 0)
        out.append(((k.topic_id, k.partition), start, lag))
    return out


def alter_offsets(svc: Any, group: str, offsets: Mapping[TP, int]) -> tuple[int, dict[TP, int]]:
    """AlterShareGroupOffsets: only while the group has no members (NON_EMPTY_GROUP otherwise)."""
    g = svc.groups.groups.get(group)
    if g is not None and g.members:
        return E.NON_EMPTY_GROUP, {}
    now = svc.now_ms()
    out = {}
    for (tid, p), offset in offsets.items():
        if svc.topic_name(tid) is None:
            out[(tid, p)] = UNKNOWN_TOPIC_ID
            continue
        try:
            owner_of(svc, tid, p).states.alter_start(ShareKey(group, tid, p), offset, now)
            out[(tid, p)] = E.NONE
            svc.membership.initialized(group, tid, p)
        except E.AppendError:
            out[(tid, p)] = E.KAFKA_STORAGE_ERROR
    svc.groups.ensure_group(group)
    return E.NONE, out


def delete_offsets(svc: Any, group: str, topic_ids: Sequence[uuid.UUID]) -> tuple[int, dict[uuid.UUID, int]]:
    """DeleteShareGroupOffsets: forget the group's state for whole topics (only while it is empty)."""
    g = svc.groups.groups.get(group)
    if g is not None and g.members:
        return E.NON_EMPTY_GROUP, {}
    out = {}
    for tid in topic_ids:
        code = E.NONE
        name = svc.topic_name(tid)
        parts = svc.state.topics[name].partitions if name is not None and svc.state is not None else 0
        owners = {id(o): o for o in (owner_of(svc, tid, p) for p in range(parts))}
        owners.setdefault(id(svc), svc)
        for owner in owners.values():
            for k in owner.states.keys(group):
                if k.topic_id == tid:
                    try:
                        owner.states.delete(k)
                    except E.AppendError:
                        code = E.KAFKA_STORAGE_ERROR
        out[tid] = code
    svc.membership.forget(group, set(topic_ids))
    return E.NONE, out
