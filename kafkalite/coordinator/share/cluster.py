"""Share groups in a ``kafkalite.cluster`` (several brokers in one process), as Kafka splits the work:

- The share group coordinator (membership, assignment: ShareGroupHeartbeat, ShareGroupDescribe and the
  offsets admin requests) is the broker leading the group's ``__consumer_offsets`` partition, as for every
  group; a heartbeat sent elsewhere is answered NOT_COORDINATOR (Kafka's ``isGroupLocal``) and the client
  looks the coordinator up again (FindCoordinator, key type 0).
- A share-partition lives with the topic-partition's leader (Kafka's ``SharePartitionManager``): ShareFetch
  and ShareAcknowledge for a partition this broker does not lead answer NOT_LEADER_OR_FOLLOWER, and the
  client refreshes its metadata.
- The leader persists the share-partition's state in ``__share_group_state`` through the broker leading the
  state partition of ``group:topic:partition`` (Kafka's persister sending WriteShareGroupState to the share
  coordinator): in one process that is a direct append to the leader's log, which its followers copy.
- The group coordinator keeps the group's ShareGroupStatePartitionMetadata (which share-partitions have
  state): a leader initialising a share-partition tells it.

Not covered yet: a partition leader moving (the new leader starts from what its replica of
``__share_group_state`` held at its start, not from the latest state) and pruning ``__share_group_state``
(each broker only knows the snapshots of its own share-partitions, so no broker prunes in a cluster).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class ShareClusterLinks:
    """What a broker's ShareService needs to know of the cluster (``ShareService.cluster``; None alone)."""

    owns: Callable[[str], bool]                 # does this broker coordinate the group
    leads: Callable[[str, int], bool]           # does this broker lead the topic-partition
    peer: Callable[[str, int], Any]             # the ShareService of the broker leading an internal partition
    group_partition: Callable[[str], int]       # the group's __consumer_offsets partition

    @classmethod
    def of(cls, state: Any) -> ShareClusterLinks | None:
        """The links of a broker in a cluster (``state.cluster``, the runtime, is set before any service is
        built), None for a broker on its own."""
        runtime = getattr(state, "cluster", None)
        if runtime is None:
            return None
        from kafkalite.cluster import placement

        def group_partition(group: str) -> int:
            info = state.topics.get(placement.OFFSETS_TOPIC)
            return placement.coordinator_partition(group, info.partitions if info is not None else 50)

        def owns(group: str) -> bool:   # as the group coordinators' test (cluster.coordinators.install)
            tp = (placement.OFFSETS_TOPIC, group_partition(group))
            ps = runtime.meta.partitions.get(tp)
            return ps is None or ps.leader == state.node_id and tp not in runtime.loading.get(state.node_id, ())

        def peer(topic: str, p: int) -> Any:
            other = runtime.state_of(runtime.leader_of(topic, p))
            return getattr(other, "shares", None) if other is not None else None

        return cls(owns=owns, leads=state.leads, peer=peer, group_partition=group_partition)

    def group_service(self, group: str) -> Any:
        """The ShareService coordinating ``group`` (None: no live leader)."""
        from kafkalite.coordinator.config import OFFSETS_TOPIC

        return self.peer(OFFSETS_TOPIC, self.group_partition(group))

    def owner(self, svc: Any, topic: str | None, p: int) -> Any:
        """The ShareService of the topic-partition's leader (``svc`` when it leads, or none does)."""
        if topic is None or self.leads(topic, p):
            return svc
        peer = self.peer(topic, p)
        return svc if peer is None else peer
