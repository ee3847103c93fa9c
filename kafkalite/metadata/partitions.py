"""Where partitions and coordinators live in a cluster: Kafka's rules, made deterministic for tests.

Replica assignment (Kafka's ``StripedReplicaPlacer`` / the old ``AdminUtils.assignReplicasToBrokers`` without
racks): partition ``p``'s first replica (its preferred leader) is broker ``(start + p) % n`` of the sorted
broker list, and the other replicas follow it at a shift that grows by one each time the partitions wrap
around the brokers, so leadership and followers both spread evenly. Kafka picks ``start`` and the first shift at
random; here both are 0, so partition 0 is led by the lowest node id, partition 1 by the next, and so on.

Coordinators: a group id (transactional id) belongs to partition ``abs(hashCode(key)) % partitions`` of
``__consumer_offsets`` (``__transaction_state``), and its coordinator is that partition's leader.
"""
from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"
INTERNAL = frozenset({OFFSETS_TOPIC, TXN_TOPIC, "__share_group_state"})


def assign(node_ids: list[int], partitions: int, replication_factor: int, first_partition: int = 0,
           start: int = 0, shift: int = 0) -> list[list[int]]:
    """Replica lists (preferred leader first) for partitions ``first_partition..partitions-1``."""
    nodes = sorted(node_ids)
    n = len(nodes)
    rf = max(1, min(replication_factor, n))
    out: list[list[int]] = []
    for p in range(first_partition, partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [nodes[first]]
        for j in range(rf - 1):
            replicas.append(nodes[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append(replicas)
    return out


def coordinator_topic(kind: str) -> str:
    if kind == "group":
        return OFFSETS_TOPIC
    if kind == "transaction":
        return TXN_TOPIC
    raise ValueError(f"coordinator kind must be 'group' or 'transaction', not {kind!r}")


def coordinator_partition(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions`` (Utils.abs maps Integer.MIN_VALUE to 0)."""
    return partition_for(key, partitions)


def java_string_hash(s: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int = 50) -> int:
    """``__consumer_offsets`` partition of a group: Utils.abs(groupId.hashCode) % n.

    Kafka's Utils.abs is Math.abs except that Integer.MIN_VALUE maps to 0.
    """
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions
