"""Server-side assignors (``group.consumer.assignors``, a member's ServerAssignor): ``uniform`` and ``range``.

Both take the members' subscribed topic ids (in member-id order), the partition counts of the subscribed topics
and the current target assignment, and return a new target: member id -> {topic id: set of partitions}.

* ``uniform`` (Kafka's UniformAssignor, the default): every partition of every subscribed topic to one of the
  members subscribed to its topic, balanced (member counts differ by at most one when subscriptions are equal)
  and sticky: a partition stays with its current target owner unless that owner is over its share.
* ``range`` (Kafka's RangeAssignor): per topic, the members subscribed to it in member-id order get contiguous
  ranges of partitions, the first ``partitions % members`` of them one more, so co-partitioned topics are
  assigned alike.

Facts from Kafka 4.3's ``org.apache.kafka.coordinator.group.assignor`` (names and behaviour; our own code).
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping

Assignment = dict[uuid.UUID, set[int]]

UNIFORM = "uniform"
RANGE = "range"
ASSIGNORS = (UNIFORM, RANGE)


def assign(name: str, subscriptions: Mapping[str, set[uuid.UUID]], partitions: Mapping[uuid.UUID, int],
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    if name == RANGE:
        return range_assign(subscriptions, partitions)
    return uniform_assign(subscriptions, partitions, current)


def range_assign(subscriptions: Mapping[str, set[uuid.UUID]],
                 partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in subscriptions}
    for tid in sorted(partitions, key=str):
        members = sorted(m for m, subs in subscriptions.items() if tid in subs)
        if not members:
            continue
        n, extra = divmod(partitions[tid], len(members))
        start = 0
        for i, m in enumerate(members):
            count = n + (1 if i < extra else 0)
            if count:
                out[m][tid] = set(range(start, start + count))
            start += count
    return out


def uniform_assign(subscriptions: Mapping[str, set[uuid.UUID]], partitions: Mapping[uuid.UUID, int],
                   current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    out: dict[str, Assignment] = {m: {} for m in members}
    if not members:
        return out
    count = dict.fromkeys(members, 0)
    all_tps = [(tid, p) for tid in sorted(partitions, key=str) for p in range(partitions[tid])]
    eligible = {tid: [m for m in members if tid in subscriptions[m]] for tid in partitions}
    # each member's fair share: its eligible partitions spread over the members that could take them
    share: dict[str, float] = dict.fromkeys(members, 0.0)
    for tid, ms in eligible.items():
        for m in ms:
            share[m] += partitions[tid] / len(ms)
    quota = {m: int(share[m]) + (1 if share[m] % 1 else 0) for m in members}
    homogeneous = len({frozenset(subscriptions[m]) for m in members}) == 1
    if homogeneous:   # exact: floor for everyone, one more for the first `extra` (those keeping the most)
        total = len([tp for tp in all_tps if eligible[tp[0]]])
        base, extra = divmod(total, len(members))
        kept = {m: sum(len(ps & set(range(partitions.get(t, 0)))) for t, ps in current.get(m, {}).items()
                       if t in subscriptions[m]) for m in members}
        ranked = sorted(members, key=lambda m: (-kept[m], m))
        quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(ranked)}
    unassigned: list[tuple[uuid.UUID, int]] = []
    owners = {(t, p): m for m in members for t, ps in current.get(m, {}).items() for p in ps}
    for tid, p in all_tps:
        owner = owners.get((tid, p))
        if owner is not None and tid in subscriptions[owner] and count[owner] < quota[owner]:
            out[owner].setdefault(tid, set()).add(p)
            count[owner] += 1
        elif eligible[tid]:
            unassigned.append((tid, p))
    for tid, p in unassigned:   # to the least loaded eligible member (a heap per topic would scale better)
        m = min(eligible[tid], key=lambda x: (count[x] >= quota[x], count[x], x))
        out[m].setdefault(tid, set()).add(p)
        count[m] += 1
    return out
