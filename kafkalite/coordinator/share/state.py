"""Replaying ``__share_group_state`` into the persisted state of every share-partition (pure).

As Kafka's ``ShareCoordinatorShard``: a ShareSnapshot replaces what is known of its share-partition; a
ShareUpdate is merged on top (its StartOffset, unless -1, moves the start; its StateBatches override the
states of their offsets; runs below the start are dropped); a null value (tombstone) forgets the
share-partition. The writer (``service.py``) writes a fresh snapshot after
``share.coordinator.snapshot.update.records.per.snapshot`` (500) updates, so replay work stays bounded.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite.coordinator.classic.records import RecordDecodeError
from kafkalite.coordinator.share.partition import StateBatch, runs
from kafkalite.coordinator.share.records import SNAPSHOT, ShareKey, ShareValue, decode_key, decode_value


@dataclass(slots=True)
class PersistedState:
    start: int = -1                  # -1: not initialized (share.auto.offset.reset decides on first use)
    state_epoch: int = 0
    snapshot_epoch: int = 0
    leader_epoch: int = 0
    create_ts: int = 0
    updates: int = 0                 # updates written since the last snapshot
    snapshot_offset: int = -1        # where in its state-topic partition the last snapshot is
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)   # offset -> (state, count)
    delivery_complete_count: int = -1   # as last written (a ShareUpdate's replaces it, as Kafka's merge)

    def apply(self, batches: list[StateBatch]) -> None:
        for b in batches:
            for off in range(b.first, b.last + 1):
                self.offsets[off] = (b.state, b.count)

    def prune(self) -> None:
        if self.start >= 0 and self.offsets and min(self.offsets) < self.start:
            self.offsets = {o: v for o, v in self.offsets.items() if o >= self.start}

    def batches(self) -> list[StateBatch]:
        return runs((o, s, c) for o, (s, c) in sorted(self.offsets.items()))


class StateReplay:
    """Feed (key, value) of ``__share_group_state`` records in log order; read ``states``."""

    def __init__(self) -> None:
        self.states: dict[ShareKey, PersistedState] = {}
        self.records = 0
        self.skipped = 0

    def feed(self, key: bytes, value: bytes | None, offset: int = -1) -> None:
        self.records += 1
        try:
            decoded = decode_key(key)
            if decoded is None:
                self.skipped += 1
                return
            rtype, k = decoded
            if value is None:
                self.forget(k)
                return
            v = decode_value(rtype, value)
        except (RecordDecodeError, ValueError):
            self.skipped += 1
            return
        self.replay(rtype == SNAPSHOT, k, v, offset)

    def forget(self, k: ShareKey) -> None:
        """A tombstone: the share-partition's state is gone."""
        self.states.pop(k, None)

    def replay(self, snapshot: bool, k: ShareKey, v: ShareValue, offset: int = -1) -> None:
        if snapshot:
            snap = PersistedState(v.start_offset, v.state_epoch, v.snapshot_epoch, v.leader_epoch, v.create_ts,
                                  snapshot_offset=offset, delivery_complete_count=v.delivery_complete_count)
            snap.apply(v.batches)
            snap.prune()
            self.states[k] = snap
            return
        st = self.states.get(k)
        if st is None:                 # an update without its snapshot (cannot happen with our writer)
            st = self.states[k] = PersistedState()
        st.updates += 1
        if v.start_offset >= 0:
            st.start = v.start_offset
        if v.leader_epoch != -1:
            st.leader_epoch = v.leader_epoch
        st.delivery_complete_count = v.delivery_complete_count
        st.apply(v.batches)
        st.prune()
