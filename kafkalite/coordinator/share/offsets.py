"""Share group offsets admin (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets) on a
``ShareService``: the group's coordinator answers, and the share-partitions are with each partition's leader
(the coordinator itself on a single broker; see ``cluster.py``)."""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.share.cluster import adopt
from kafkalite.coordinator.share.records import ShareKey

TP = tuple[uuid.UUID, int]
UNKNOWN_TOPIC_ID = 100
NO_OFFSETS = 3   # UNKNOWN_TOPIC_OR_PARTITION: a topic the group has no share-partition state of


def owner_of(svc: Any, tid: uuid.UUID, p: int) -> Any:
    """The ShareService keeping the share-partitions of a topic-partition: its leader's (this one alone)."""
    return svc if svc.cluster is None else svc.cluster.owner(svc, svc.topic_name(tid), p)


def keys_of(svc: Any, group: str, partitions: Sequence[TP] | None) -> list[ShareKey]:
    """The share-partitions asked for; None: those the group has state for (in a cluster the state is with
    each partition's leader: the group coordinator's list of them, ShareGroupStatePartitionMetadata)."""
    if partitions is not None:
        return [ShareKey(group, tid, p) for tid, p in partitions]
    known = {(k.topic_id, k.partition) for k in svc.states.keys(group)}
    known |= {(tid, p) for tid, (_n, ps) in svc.membership.initialized_parts.get(group, {}).items() for p in ps}
    return [ShareKey(group, tid, p) for tid, p in sorted(known, key=lambda k: (str(k[0]), k[1]))]


async def adopt_at_owners(svc: Any, keys: Sequence[ShareKey]) -> None:
    """In a cluster: each partition leader takes the latest persisted state of its share-partitions among
    ``keys`` first (``cluster.adopt``), so that the answer is not from a copy older than a leader move."""
    if svc.cluster is None:
        return
    by_owner: dict[int, tuple[Any, list[ShareKey]]] = {}
    for k in keys:
        owner = owner_of(svc, k.topic_id, k.partition)
        by_owner.setdefault(id(owner), (owner, []))[1].append(k)
    for owner, ks in by_owner.values():
        await adopt(owner, ks)


def describe_offsets(svc: Any, group: str, partitions: Sequence[TP] | None) -> list[tuple[TP, int, int]]:
    """(partition, start offset or -1, lag or -1) — Kafka's DescribeShareGroupOffsets: the share-partition
    start offset, and (v1) the records not yet delivered completely."""
    keys = keys_of(svc, group, partitions)
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
    if any(code == E.NONE for code in out.values()):
        # Kafka creates an unknown group here: its share-partition records bring it into being on replay
        # (with no partition to initialise it writes nothing and the group is not created)
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
        # in a cluster a leader may have dropped (or never loaded) a share-partition: tombstones for every
        # one the coordinator lists as initialised as well (a tombstone of unknown state changes nothing)
        listed = {ShareKey(group, tid, p) for p in svc.membership.initialized_parts.get(group, {}).get(tid, ("", ()))[1]
                  if 0 <= p < parts}
        if not listed and not any(k.topic_id == tid for o in owners.values() for k in o.states.keys(group)):
            out[tid] = NO_OFFSETS   # Kafka: "There is no offset information to delete."
            continue
        for owner in owners.values():
            mine = {k for k in listed if owner_of(svc, tid, k.partition) is owner}
            for k in sorted(set(owner.states.keys(group)) | mine, key=lambda k: k.partition):
                if k.topic_id == tid:
                    try:
                        owner.states.delete(k)
                    except E.AppendError:
                        code = E.KAFKA_STORAGE_ERROR
        out[tid] = code
    svc.membership.forget(group, set(topic_ids))
    return E.NONE, out
