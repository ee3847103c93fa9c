"""The share coordinator's own view of ``__share_group_state`` and its state RPCs (pure), as Kafka's
``ShareCoordinatorShard``: InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState (85)
and DeleteShareGroupState (86), one share-partition at a time.

``Shard`` is the replay of one ``__share_group_state`` partition (``StateReplay``) plus what Kafka keeps next to
it: the highest leader epoch and state epoch recorded per share-partition (a tombstone forgets them). Each
operation checks the request as Kafka does and returns an ``Outcome``: an error (code, message) or the records to
append; the caller appends them and feeds them back (``Shard.feed``), so the view is always the log's replay.

Kafka's checks, in its order:
- Initialize: negative partition or state epoch: INVALID_REQUEST; a recorded state epoch above the request's:
  FENCED_STATE_EPOCH; a topic-partition the metadata does not know: UNKNOWN_TOPIC_OR_PARTITION. Then a
  ShareSnapshot with the new state epoch and start offset, leader epoch 0, no state batches (an equal state
  epoch re-initialises too).
- Write: negative partition, leader epoch or state epoch: INVALID_REQUEST; no state:
  INVALID_REQUEST ("Write operation on uninitialized share partition not allowed."); a recorded leader epoch
  above the request's: FENCED_LEADER_EPOCH; a recorded state epoch above: FENCED_STATE_EPOCH; unknown
  topic-partition; kafkalite's own limit last: batches covering more than ``MAX_WRITE_SPAN`` offsets past the
  start, or one ending before it starts, INVALID_REQUEST. Then a ShareUpdate (the start offset never moves back; the leader epoch stays the recorded
  one) or, once ``updates_per_snapshot`` updates followed the last snapshot, a ShareSnapshot of the merge.
- Read: negative partition or leader epoch: INVALID_REQUEST; no state: INVALID_REQUEST ("Read operation on
  uninitialized share partition not allowed."); a recorded leader epoch above the request's:
  FENCED_LEADER_EPOCH; unknown topic-partition. A read at another leader epoch than the recorded one records
  the new leader epoch (a ShareUpdate without batches), as Kafka's ``readStateAndMaybeUpdateLeaderEpoch``.
- Delete: negative partition: INVALID_REQUEST; unknown topic-partition. A ShareSnapshot tombstone, nothing
  when there is no state.

State batches in one request are combined as Kafka's ``PersisterStateBatchCombiner`` does (``combine``: cut
at the start offset, an offset covered twice takes the batch with the higher delivery count, then the higher
state). Replay merges a ShareUpdate onto the state offset by offset (``StateReplay``; Kafka combines there too,
which differs only when a later update lowers an offset's delivery count).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kafkalite.coordinator.share.partition import StateBatch
from kafkalite.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareKey,
    ShareValue,
    encode_key,
    encode_value,
)
from kafkalite.coordinator.share.state import PersistedState, StateReplay
from kafkalite_wire.errors import ErrorCode

NEGATIVE_PARTITION = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
FENCED_LEADER_EPOCH_MSG = "The leader epoch in the request is older than the epoch on the broker."
FENCED_STATE_EPOCH_MSG = "The coordinator rejected the request because the state epoch did not match."
UNKNOWN_TP_MSG = "This server does not host this topic-partition."
#: kafkalite's limit (Kafka has none): the state is kept per offset, so one write may cover at most this many
#: offsets at or past the start offset (a share-partition's in-flight window is far smaller: at most
#: group.share.partition.max.record.locks records are acquired at once)
MAX_WRITE_SPAN = 100_000
TOO_WIDE = f"The state batches cover more than {MAX_WRITE_SPAN} offsets, or one ends before it starts."

Records = list[tuple[bytes, bytes | None]]


@dataclass(slots=True)
class Outcome:
    error_code: int = 0
    error_message: str | None = None
    records: Records = field(default_factory=list)


def _error(code: int, message: str) -> Outcome:
    return Outcome(code, message)


class Shard(StateReplay):
    """One ``__share_group_state`` partition as its coordinator sees it. ``fed_to``: the next offset to feed."""

    def __init__(self, fed_to: int = 0) -> None:
        super().__init__()
        self.leader_epochs: dict[ShareKey, int] = {}
        self.state_epochs: dict[ShareKey, int] = {}
        self.fed_to = fed_to

    def forget(self, k: ShareKey) -> None:
        super().forget(k)
        self.leader_epochs.pop(k, None)
        self.state_epochs.pop(k, None)

    def replay(self, snapshot: bool, k: ShareKey, v: ShareValue, offset: int = -1) -> None:
        super().replay(snapshot, k, v, offset)
        self.leader_epochs[k] = max(self.leader_epochs.get(k, v.leader_epoch), v.leader_epoch)
        if snapshot:
            self.state_epochs[k] = max(self.state_epochs.get(k, v.state_epoch), v.state_epoch)

    def copy_of(self, k: ShareKey) -> PersistedState | None:
        st = self.states.get(k)
        return None if st is None else replace(st, offsets=dict(st.offsets))


def combine(so_far: list[StateBatch], new: list[StateBatch], start: int) -> list[StateBatch]:
    """Kafka's ``PersisterStateBatchCombiner``: batches cut at ``start`` (-1: none), overlaps resolved by the
    higher delivery count, then the higher delivery state; adjacent equal runs coalesced."""
    pruned = []
    for b in (*so_far, *new):
        if start == -1 or b.last >= start:
            pruned.append(StateBatch(start, b.last, b.state, b.count) if start != -1 and b.first < start else b)
    if len(pruned) <= 1:
        return pruned
    events = sorted([(b.first, 1, (b.count, b.state)) for b in pruned] + [(b.last + 1, 0, (b.count, b.state))
                                                                          for b in pruned])
    active: dict[tuple[int, int], int] = {}
    out: list[StateBatch] = []
    open_from, winner = -1, None
    i = 0
    while i < len(events):
        offset = events[i][0]
        if winner is not None and offset > open_from:
            count, state = winner
            tail = out[-1] if out else None
            if tail is not None and tail.last + 1 == open_from and tail.state == state and tail.count == count:
                out[-1] = StateBatch(tail.first, offset - 1, state, count)
            else:
                out.append(StateBatch(open_from, offset - 1, state, count))
        while i < len(events) and events[i][0] == offset:
            _, begin, prio = events[i]
            i += 1
            if begin:
                active[prio] = active.get(prio, 0) + 1
            elif active[prio] == 1:
                del active[prio]
            else:
                active[prio] -= 1
        winner = max(active) if active else None
        open_from = offset
    return out


def initialize(shard: Shard, key: ShareKey, state_epoch: int, start: int, now: int, known: bool) -> Outcome:
    if key.partition < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
    if state_epoch < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
    if shard.state_epochs.get(key, state_epoch) > state_epoch:
        return _error(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MSG)
    if not known:
        return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TP_MSG)
    cur = shard.states.get(key)
    value = ShareValue(True, 0 if cur is None else cur.snapshot_epoch + 1, 0, start, [], state_epoch, now, now,
                       -1 if start == -1 else 0)
    return Outcome(records=[(encode_key(SNAPSHOT, key), encode_value(value))])


def write(shard: Shard, key: ShareKey, *, leader_epoch: int, state_epoch: int, start: int,
          delivery_complete_count: int, batches: list[StateBatch], now: int, known: bool,
          updates_per_snapshot: int) -> Outcome:
    if key.partition < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
    if leader_epoch < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH)
    if state_epoch < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_STATE_EPOCH)
    cur = shard.states.get(key)
    if cur is None:
        return _error(ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED)
    if shard.leader_epochs.get(key, leader_epoch) > leader_epoch:
        return _error(ErrorCode.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MSG)
    if shard.state_epochs.get(key, state_epoch) > state_epoch:
        return _error(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MSG)
    if not known:
        return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TP_MSG)
    cut = max(start, cur.start)      # -1: nothing is cut
    if any(b.last < b.first for b in batches) or sum(
            b.last - (max(b.first, cut) if cut >= 0 else b.first) + 1
            for b in batches if cut < 0 or b.last >= cut) > MAX_WRITE_SPAN:
        return _error(ErrorCode.INVALID_REQUEST, TOO_WIDE)
    return Outcome(records=[_state_record(cur, key, cur.leader_epoch, start, delivery_complete_count, batches, now,
                                          updates_per_snapshot)])


def read(shard: Shard, key: ShareKey, leader_epoch: int, now: int, known: bool, updates_per_snapshot: int
         ) -> tuple[Outcome, PersistedState | None]:
    """The outcome (records: the leader epoch update, if any) and the state to answer with."""
    if key.partition < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION), None
    if leader_epoch < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_LEADER_EPOCH), None
    cur = shard.states.get(key)
    if cur is None:
        return _error(ErrorCode.INVALID_REQUEST, READ_UNINITIALIZED), None
    recorded = shard.leader_epochs.get(key)
    if recorded is not None and recorded > leader_epoch:
        return _error(ErrorCode.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MSG), None
    if not known:
        return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TP_MSG), None
    if recorded == leader_epoch:
        return Outcome(), cur
    return Outcome(records=[_state_record(cur, key, leader_epoch, cur.start, cur.delivery_complete_count, [], now,
                                          updates_per_snapshot)]), cur


def delete(shard: Shard, key: ShareKey, known: bool) -> Outcome:
    if key.partition < 0:
        return _error(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION)
    if not known:
        return _error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TP_MSG)
    if key not in shard.states:
        return Outcome()
    return Outcome(records=[(encode_key(SNAPSHOT, key), None)])


def _state_record(cur: PersistedState, key: ShareKey, leader_epoch: int, start: int, dcc: int,
                  batches: list[StateBatch], now: int, updates_per_snapshot: int) -> tuple[bytes, bytes]:
    """Kafka's ``generateShareStateRecord``: a ShareUpdate, or a ShareSnapshot of the merge once
    ``updates_per_snapshot`` updates followed the last snapshot."""
    new_start = max(start, cur.start)
    if start < cur.start:
        dcc = cur.delivery_complete_count
    elif start == cur.start:
        dcc = max(dcc, cur.delivery_complete_count)
    if cur.updates >= updates_per_snapshot:
        value = ShareValue(True, cur.snapshot_epoch + 1, leader_epoch, new_start,
                           combine(cur.batches(), batches, new_start), cur.state_epoch, now, now, dcc)
        return encode_key(SNAPSHOT, key), encode_value(value)
    value = ShareValue(False, cur.snapshot_epoch, leader_epoch, new_start, combine([], batches, new_start),
                       delivery_complete_count=dcc)
    return encode_key(UPDATE, key), encode_value(value)
