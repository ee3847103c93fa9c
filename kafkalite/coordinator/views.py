"""Every group the broker coordinates, of every type, as one read-only view for the console and metrics.

Kafka has four group types (ListGroups v5's GroupType): ``classic`` (JoinGroup/SyncGroup; the classic
coordinator, ``kafkalite/coordinator/classic/group.py``), ``consumer`` (KIP-848, ConsumerGroupHeartbeat;
``kafkalite/coordinator/consumer/``), ``streams`` (KIP-1071, StreamsGroupHeartbeat;
``kafkalite/coordinator/streams/``) and ``share`` (KIP-932; ``kafkalite/coordinator/share/``). Committed
offsets of classic, consumer and streams groups are kept in one store (the classic coordinator's group entry,
which for a consumer or streams group holds only its offsets), so their lag is computed exactly as a classic
group's. Share groups commit no offsets: their progress is the share-partition start offset (SPSO), shown by
the share coordinator's own tools, not here.

States are the type's own names: classic Empty/PreparingRebalance/CompletingRebalance/Stable, consumer
Empty/Assigning/Reconciling/Stable, streams Empty/NotReady/Assigning/Reconciling/Stable, share Empty/Stable. Dead groups are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.state import BrokerState


@dataclass
class GroupView:
    group_id: str
    type: str                # "classic", "consumer", "streams" or "share"
    state: str
    members: int
    protocol_type: str = ""
    # committed offsets, (topic, partition) -> offset (classic and consumer groups)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)


def _classic(state: BrokerState) -> dict[str, Any]:
    coordinator = state.groups.coordinator if state.groups is not None else None
    return dict(getattr(coordinator, "groups", {}) or {})


def _consumer(state: BrokerState) -> dict[str, Any]:
    svc = state.groups.consumer if state.groups is not None else None
    return dict(getattr(getattr(svc, "coordinator", None), "groups", {}) or {})


def _streams(state: BrokerState) -> dict[str, Any]:
    svc = getattr(state.groups, "streams", None) if state.groups is not None else None
    return dict(getattr(getattr(svc, "coordinator", None), "groups", {}) or {})


def _share(state: BrokerState) -> dict[str, Any]:
    shares = state.shares
    return dict(getattr(getattr(shares, "groups", None), "groups", {}) or {})


def all_groups(state: BrokerState) -> list[GroupView]:
    """Every live group, sorted by id (a share group and a consumer group never share an id: Kafka refuses
    it with GROUP_ID_NOT_FOUND / INCONSISTENT_GROUP_PROTOCOL)."""
    classic = _classic(state)
    consumer = _consumer(state)
    out: list[GroupView] = []
    for gid, g in consumer.items():
        store = classic.get(gid)
        offsets = {tp: om.offset for tp, om in (store.offsets.items() if store is not None else ())}
        out.append(GroupView(gid, "consumer", g.state(), len(g.members), "consumer", offsets))
    streams = _streams(state)
    for gid, sg in streams.items():
        store = classic.get(gid)
        offsets = {tp: om.offset for tp, om in (store.offsets.items() if store is not None else ())}
        out.append(GroupView(gid, "streams", sg.state(), len(sg.members), "streams", offsets))
    for gid, g in classic.items():
        if gid in consumer or gid in streams:
            continue
        st = getattr(g.state, "value", str(g.state))
        if st == "Dead":
            continue
        out.append(GroupView(gid, "classic", st, len(g.members), g.protocol_type or "",
                             {tp: om.offset for tp, om in list(g.offsets.items())}))
    for gid, g in _share(state).items():
        out.append(GroupView(gid, "share", g.state, len(g.members), "share"))
    out.sort(key=lambda v: (v.group_id, v.type))
    return out


def share_partitions(state: BrokerState, group_id: str | None = None) -> list[tuple[str, str, int, int, int]]:
    """(group, topic, partition, start offset, in-flight records) of each share-partition a share group has
    state for (the share-partition start offset, SPSO, is where the group's delivery stands: every record
    below it is acknowledged or archived; in flight are the records of the window from the SPSO to the
    first offset never fetched, whatever their state: available again, acquired, or acknowledged above a
    gap). A share-partition not yet used since start has its persisted start and 0 in flight."""
    manager = state.shares.states if state.shares is not None else None
    if manager is None:
        return []
    names = {info.topic_id: name for name, info in list(state.topics.items())}
    out = []
    for key in manager.keys(group_id):
        name = names.get(key.topic_id)
        if name is None:
            continue   # a deleted topic's state, on its way out
        sp = manager.parts.get(key)
        out.append((key.group, name, key.partition, manager.start_of(key), sp.in_flight() if sp is not None else 0))
    return out


def consumer_group(state: BrokerState, group_id: str) -> Any:
    """The KIP-848 group object (``kafkalite.coordinator.consumer.model.ConsumerGroup``), or None."""
    return _consumer(state).get(group_id)


def streams_group(state: BrokerState, group_id: str) -> Any:
    """The KIP-1071 group object (``kafkalite.coordinator.streams.model.StreamsGroup``), or None."""
    return _streams(state).get(group_id)


def share_group(state: BrokerState, group_id: str) -> Any:
    """The share group object (``kafkalite.coordinator.share.group.ShareGroup``), or None."""
    return _share(state).get(group_id)
