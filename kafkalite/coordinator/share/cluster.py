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

- Leadership moves (``leader_moved``, called by the runtime whenever a partition's leader changes: a
  ``move_leader``, a broker stopping or coming back). The old leader drops its share-partitions of that
  topic-partition (Kafka's ``SharePartitionManager`` removes them on ``onBecomingFollower``): what its members
  had acquired and not acknowledged was never persisted, so it is available again at the new leader with its
  last persisted delivery count, as after a Kafka leader change. A share-partition is only served once it was
  initialised, under the partition's current leader epoch, from the latest persisted state (``adopt``): the
  ShareSnapshot and ShareUpdates of ``group:topic:partition`` replayed from the log of the *current* leader of
  its ``__share_group_state`` partition — Kafka's ReadShareGroupState at the share coordinator, which has
  every acknowledgement — never from the copy this broker read at its own start. So an acknowledged record is
  never delivered again, whichever way leadership (of the partition or of its state partition) moved.
  Acknowledgements for records acquired under an earlier leadership answer INVALID_RECORD_STATE.

Not covered yet: pruning ``__share_group_state`` (each broker only knows the snapshots of its own
share-partitions, so no broker prunes in a cluster).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.coordinator.classic.records import iter_records
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.common.internal_topics import read_chunks
from kafkalite.coordinator.share.config import STATE_TOPIC
from kafkalite.coordinator.share.records import ShareKey, partition_for
from kafkalite.metadata import partitions as placement

if TYPE_CHECKING:
    from kafkalite.cluster.runtime import ClusterRuntime
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.coordinator.share")


@dataclass
class ShareClusterLinks:
    """What a broker's ShareService needs to know of the cluster (``ShareService.cluster``; None alone)."""

    owns: Callable[[str], bool]                 # does this broker coordinate the group
    leads: Callable[[str, int], bool]           # does this broker lead the topic-partition
    peer: Callable[[str, int], Any]             # the ShareService of the broker leading an internal partition
    group_partition: Callable[[str], int]       # the group's __consumer_offsets partition
    epoch: Callable[[str, int], int]            # the topic-partition's leader epoch (-1: unknown)
    leader_log: Callable[[str, int], Any]       # the current leader's log of a partition (None: no live leader)

    @classmethod
    def of(cls, state: BrokerState) -> ShareClusterLinks | None:
        """The links of a broker in a cluster (``state.cluster``, the runtime, is set before any service is
        built), None for a broker on its own."""
        runtime = state.cluster
        if runtime is None:
            return None
        def group_partition(group: str) -> int:
            info = state.topics.get(placement.OFFSETS_TOPIC)
            return placement.coordinator_partition(group, info.partitions if info is not None else 50)

        def owns(group: str) -> bool:   # as the group coordinators' test (cluster.coordinators.install)
            tp = (placement.OFFSETS_TOPIC, group_partition(group))
            ps = runtime.meta.partitions.get(tp)
            return ps is None or (ps.leader == state.node_id and tp not in runtime.loading.get(state.node_id, ()))

        def peer(topic: str, p: int) -> Any:
            other = runtime.state_of(runtime.leader_of(topic, p))
            return getattr(other, "shares", None) if other is not None else None

        def epoch(topic: str, p: int) -> int:
            ps = runtime.meta.partitions.get((topic, p))
            return ps.leader_epoch if ps is not None else -1

        def leader_log(topic: str, p: int) -> Any:
            other = runtime.leader_state(topic, p)
            return other.get_log(topic, p) if other is not None else None

        return cls(owns=owns, leads=state.leads, peer=peer, group_partition=group_partition, epoch=epoch,
                   leader_log=leader_log)

    def group_service(self, group: str) -> Any:
        """The ShareService coordinating ``group`` (None: no live leader)."""
        return self.peer(OFFSETS_TOPIC, self.group_partition(group))

    def owner(self, svc: Any, topic: str | None, p: int) -> Any:
        """The ShareService of the topic-partition's leader (``svc`` when it leads, or none does)."""
        if topic is None or self.leads(topic, p):
            return svc
        peer = self.peer(topic, p)
        return svc if peer is None else peer


# -- leadership moves ---------------------------------------------------------------------------------------
def leader_moved(runtime: ClusterRuntime, tp: tuple[str, int], old: int, new: int) -> None:
    """The runtime's hook (``ClusterRuntime._set_leader``): ``tp``'s leader changed from ``old`` to ``new``.
    Both drop what they hold in memory of its share-partitions: the old leader no longer serves them (and its
    timers must not write their state any more), the new one initialises them from the latest state at first
    use (``adopt``). A move of a ``__share_group_state`` partition needs nothing here: writes and reads go to
    its current leader, which a controlled move has caught up."""
    if tp[0] == STATE_TOPIC:
        return
    for node in {old, new}:
        st = runtime.state_of(node) if node >= 0 else None
        svc = getattr(st, "shares", None) if st is not None else None
        if svc is not None:
            drop(svc, *tp)


def drop(svc: Any, topic: str, p: int) -> int:
    """Forget the share-partitions of ``topic``-``p`` (every group): in memory, loaded copies, adoption marks.
    Parked ShareFetches look again. Returns how many were dropped."""
    info = svc.state.topics.get(topic) if svc.state is not None else None
    if info is None:
        return 0
    tid = info.topic_id
    states = svc.states
    keys = {k for k in (*states.parts, *states.persisted, *svc.adopted) if k.topic_id == tid and k.partition == p}
    for k in keys:
        states.parts.pop(k, None)
        states.persisted.pop(k, None)
        states.meta.pop(k, None)
        states.snapshot_offsets.pop(k, None)
        svc.adopted.pop(k, None)
    if keys:
        log.info("broker %s: %d share-partitions of %s-%d dropped (leadership moved)",
                 getattr(svc.state, "node_id", "?"), len(keys), topic, p)
        svc.wake()
    return len(keys)


def stale(svc: Any, key: ShareKey) -> bool:
    """In a cluster: the share-partition was not initialised from the latest state under the partition's
    current leader epoch (it must not be served before ``adopt``)."""
    links = svc.cluster
    if links is None:
        return False
    name = svc.topic_name(key.topic_id)
    return name is None or svc.adopted.get(key) != links.epoch(name, key.partition)


async def adopt(svc: Any, keys: list[ShareKey]) -> None:
    """Initialise each stale share-partition of ``keys`` that this broker leads from the latest persisted
    state: the records of its ``__share_group_state`` partition replayed (in a worker thread, once per state
    partition) from the log of that partition's current leader. One adoption at a time per broker; a
    share-partition whose state partition has no live leader stays stale (its fetches get nothing, and try
    again)."""
    links = svc.cluster
    if links is None:
        return
    async with svc.adopt_lock:
        info = svc.state.topics.get(STATE_TOPIC)
        wanted: dict[int, dict[ShareKey, tuple[str, int]]] = {}   # state partition -> key -> (topic, epoch)
        for key in keys:
            name = svc.topic_name(key.topic_id)
            if name is None or not stale(svc, key) or not links.leads(name, key.partition):
                continue
            part = partition_for(key, info.partitions) if info is not None else -1
            wanted.setdefault(part, {})[key] = (name, links.epoch(name, key.partition))
        for part, todo in wanted.items():
            found: dict[ShareKey, Any] = {}
            if part >= 0:
                plog = links.leader_log(STATE_TOPIC, part)
                if plog is None:
                    log.warning("%s-%d has no live leader: %d share-partitions wait for it", STATE_TOPIC, part,
                                len(todo))
                    continue
                found = await trio.to_thread.run_sync(_replay, plog, set(todo))
            for key, (name, epoch) in todo.items():
                if links.epoch(name, key.partition) != epoch or not links.leads(name, key.partition):
                    continue                     # moved again meanwhile: the next fetch looks again
                _install(svc, key, found.get(key), epoch)


def _install(svc: Any, key: ShareKey, found: Any, epoch: int) -> None:
    states = svc.states
    states.parts.pop(key, None)
    states.meta.pop(key, None)
    states.persisted.pop(key, None)
    states.snapshot_offsets.pop(key, None)
    if found is not None:
        states.persisted[key] = found
        states.snapshot_offsets[key] = found.snapshot_offset
    svc.adopted[key] = epoch
    log.debug("share-partition %s initialised at leader epoch %d from %s (start %s)", key, epoch, STATE_TOPIC,
              None if found is None else found.start)


def _replay(plog: Any, keys: set[ShareKey]) -> dict[ShareKey, Any]:
    """The persisted state of ``keys`` in a ``__share_group_state`` partition's log (blocking)."""
    # the share-partition state (share.partition): first adoption, not a leader move
    from kafkalite.coordinator.share.state import StateReplay

    replay = StateReplay()
    for data in read_chunks(plog):
        for off, k, value in iter_records(data):
            replay.feed(bytes(k), None if value is None else bytes(value), off)
    return {k: st for k, st in replay.states.items() if k in keys}
