"""Server-side assignors (``group.consumer.assignors``, a member's ServerAssignor): ``uniform`` and ``range``.

Both take the members' subscribed topic ids (in member-id order), the partition counts of the subscribed topics
and the current target assignment, and return a new target: member id -> {topic id: set of partitions}.

* ``uniform`` (Kafka's UniformAssignor, the default): every partition of every subscribed topic to one of the
  members subscribed to its topic, balanced (member counts differ by at most one when subscriptions are equal)
  and sticky: a partition stays with its current target owner unless that owner is over its share.
* ``range`` (Kafka's RangeAssignor): per topic, the members subscribed to it in member-id order get contiguous
  ranges of partitions, the first ``partitions % members`` of them one more, so co-partitioned topics are
  assigned alike.

Rack awareness (``client.rack`` -> the heartbeat's RackId; partition racks = the racks of the brokers holding its
replicas), as KIP-881 defines it for the client-side assignors and KAFKA-19909 proposes for the uniform assignor
(Kafka 4.3's built-in server-side assignors still ignore racks): balance first, then locality, then stickiness.
The rack strategy is used only when some member has a rack, the members' racks meet the partitions' racks, and not
every partition has the same set of racks (otherwise locality cannot differ between members). Then ``uniform``
lets a member keep a partition only if the partition has a replica on its rack, gives unassigned partitions to
the least loaded member on one of their racks (partitions with the fewest such members first), and the rest to
the least loaded member; ``range`` gives each member, in order, the lowest partitions on its rack up to its range
size, then fills every member's range size with the remaining partitions in order. On one broker (every
partition on the same racks, or none) both are exactly the rack-less assignors.

Facts from Kafka 4.3's ``org.apache.kafka.coordinator.group.assignor`` (names and behaviour; our own code).
"""
from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

Assignment = dict[uuid.UUID, set[int]]

UNIFORM = "uniform"
RANGE = "range"
ASSIGNORS = (UNIFORM, RANGE)

#: (topic id, partition) -> the racks of the brokers holding its replicas (empty: unknown)
PartitionRacks = Callable[[uuid.UUID, int], frozenset[str]]


class Racks:
    """The rack strategy's inputs, or None from :meth:`build` when it does not apply (see the module doc)."""

    def __init__(self, member_racks: dict[str, str], partition_racks: dict[tuple[uuid.UUID, int], frozenset[str]]):
        self.member = member_racks
        self.partition = partition_racks

    @classmethod
    def build(cls, member_racks: Mapping[str, str | None] | None, racks_of: PartitionRacks | None,
              partitions: Mapping[uuid.UUID, int]) -> Racks | None:
        members = {m: r for m, r in (member_racks or {}).items() if r}
        if not members or racks_of is None:
            return None
        per = {(t, p): frozenset(racks_of(t, p)) for t in partitions for p in range(partitions[t])}
        every = set().union(*per.values()) if per else set()
        if not every & set(members.values()) or len(set(per.values())) <= 1:
            return None
        return cls(members, per)

    def local(self, member: str, t: uuid.UUID, p: int) -> bool:
        """True unless the member has a rack and the partition has no replica there."""
        rack = self.member.get(member)
        racks = self.partition.get((t, p), frozenset())
        return rack is None or not racks or rack in racks

    def matches(self, member: str, t: uuid.UUID, p: int) -> bool:
        rack = self.member.get(member)
        return rack is not None and rack in self.partition.get((t, p), frozenset())


def assign(name: str, subscriptions: Mapping[str, set[uuid.UUID]], partitions: Mapping[uuid.UUID, int],
           current: Mapping[str, Assignment], member_racks: Mapping[str, str | None] | None = None,
           partition_racks: PartitionRacks | None = None) -> dict[str, Assignment]:
    racks = Racks.build(member_racks, partition_racks, partitions)
    if name == RANGE:
        return range_assign(subscriptions, partitions, racks)
    return uniform_assign(subscriptions, partitions, current, racks)


def range_assign(subscriptions: Mapping[str, set[uuid.UUID]], partitions: Mapping[uuid.UUID, int],
                 racks: Racks | None = None) -> dict[str, Assignment]:
    out: dict[str, Assignment] = {m: {} for m in subscriptions}
    for tid in sorted(partitions, key=str):
        members = sorted(m for m, subs in subscriptions.items() if tid in subs)
        if not members:
            continue
        n, extra = divmod(partitions[tid], len(members))
        sizes = {m: n + (1 if i < extra else 0) for i, m in enumerate(members)}
        if racks is None:
            start = 0
            for m in members:
                if sizes[m]:
                    out[m][tid] = set(range(start, start + sizes[m]))
                start += sizes[m]
            continue
        free = list(range(partitions[tid]))
        for m in members:   # first the partitions on the member's rack, lowest first, up to its range size
            mine = [p for p in free if racks.matches(m, tid, p)][:sizes[m]]
            if mine:
                out[m][tid] = set(mine)
                taken = set(mine)
                free = [p for p in free if p not in taken]
        for m in members:   # then the rest in order
            want = sizes[m] - len(out[m].get(tid, ()))
            if want > 0:
                out[m].setdefault(tid, set()).update(free[:want])
                free = free[want:]
    return out


def uniform_assign(subscriptions: Mapping[str, set[uuid.UUID]], partitions: Mapping[uuid.UUID, int],
                   current: Mapping[str, Assignment], racks: Racks | None = None) -> dict[str, Assignment]:
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
        if owner is not None and tid in subscriptions[owner] and count[owner] < quota[owner] and (
                racks is None or racks.local(owner, tid, p)):
            out[owner].setdefault(tid, set()).add(p)
            count[owner] += 1
        elif eligible[tid]:
            unassigned.append((tid, p))
    if racks is not None:   # locality: partitions with the fewest same-rack members first
        local = {tp: [m for m in eligible[tp[0]] if racks.matches(m, *tp)] for tp in unassigned}
        rest = []
        for tid, p in sorted(unassigned, key=lambda tp: (len(local[tp]), str(tp[0]), tp[1])):
            free = [m for m in local[(tid, p)] if count[m] < quota[m]]
            if not free:
                rest.append((tid, p))
                continue
            m = min(free, key=lambda x: (count[x], x))
            out[m].setdefault(tid, set()).add(p)
            count[m] += 1
        unassigned = sorted(rest, key=lambda tp: (str(tp[0]), tp[1]))
    for tid, p in unassigned:   # to the least loaded eligible member (a heap per topic would scale better)
        prev = owners.get((tid, p))
        m = min(eligible[tid], key=lambda x: (count[x] >= quota[x], count[x], x != prev, x))
        out[m].setdefault(tid, set()).add(p)
        count[m] += 1
    return out
