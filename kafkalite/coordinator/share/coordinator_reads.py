"""The share coordinator's read side: what ``__share_group_state`` holds for a share-partition, as Kafka's
``ShareCoordinatorShard`` answers the persister's read RPCs (ReadShareGroupStateSummary, key 87).

The share coordinator of ``group:topic:partition`` is the broker leading its ``__share_group_state``
partition (``partition_for``). Its answer is the persisted state, replayed from that partition's log (the
records the share-partition's leader wrote), not the leader's in-memory state: acquired, unacknowledged
records are never persisted, as in Kafka.

Per share-partition, in Kafka's order:
- no ``__share_group_state`` yet, or another broker leads its partition: NOT_COORDINATOR (Kafka's runtime has
  no shard for it); the state topic still loading: COORDINATOR_LOAD_IN_PROGRESS;
- a negative partition: INVALID_REQUEST; a topic id or partition the metadata does not know:
  UNKNOWN_TOPIC_OR_PARTITION;
- no state: start offset -1, delivery complete count -1, epochs 0 (Kafka's uninitialised answer);
- else the state's start offset, delivery complete count, leader epoch and state epoch.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import trio

from kafkalite.coordinator.classic.records import iter_records
from kafkalite.coordinator.common.internal_topics import read_chunks
from kafkalite.coordinator.share.config import STATE_TOPIC
from kafkalite.coordinator.share.records import ShareKey, partition_for
from kafkalite.coordinator.share.state import PersistedState, StateReplay
from kafkalite_wire.errors import ErrorCode

NOT_COORDINATOR_MSG = "This is not the correct coordinator."
LOADING_MSG = "The coordinator is loading and hence can't process requests."
NEGATIVE_PARTITION_MSG = "The partition id cannot be a negative number."
UNKNOWN_TP_MSG = "This server does not host this topic-partition."


@dataclass(slots=True)
class Summary:
    error_code: int = 0
    error_message: str | None = None
    start_offset: int = -1
    delivery_complete_count: int = -1
    leader_epoch: int = 0
    state_epoch: int = 0


def _replay(plog: Any, keys: set[ShareKey]) -> dict[ShareKey, PersistedState]:
    """The persisted state of ``keys`` in one ``__share_group_state`` partition (blocking)."""
    replay = StateReplay()
    for data in read_chunks(plog):
        for off, k, value in iter_records(data):
            replay.feed(bytes(k), None if value is None else bytes(value), off)
    return {k: st for k, st in replay.states.items() if k in keys}


async def read_summaries(state: Any, keys: Sequence[ShareKey], op: str) -> dict[ShareKey, Summary]:
    """``op`` names the operation in coordinator errors' messages (Kafka's "Unable to <op>: <reason>")."""
    out: dict[ShareKey, Summary] = {}
    svc = state.shares
    info = state.topics.get(STATE_TOPIC)
    wanted: dict[int, list[ShareKey]] = {}
    for key in keys:
        part = partition_for(key, info.partitions) if info is not None else -1
        if part < 0 or state.get_log(STATE_TOPIC, part) is None or not state.leads(STATE_TOPIC, part):
            out[key] = Summary(ErrorCode.NOT_COORDINATOR, f"Unable to {op}: {NOT_COORDINATOR_MSG}", 0, -1)
        elif svc is not None and svc.loading:
            out[key] = Summary(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"Unable to {op}: {LOADING_MSG}", 0, -1)
        elif key.partition < 0:
            out[key] = Summary(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_MSG, 0, -1)
        elif not _known(state, key.topic_id, key.partition):
            out[key] = Summary(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TP_MSG, 0, -1)
        else:
            wanted.setdefault(part, []).append(key)
    for part, todo in wanted.items():
        found = await trio.to_thread.run_sync(_replay, state.get_log(STATE_TOPIC, part), set(todo))
        for key in todo:
            st = found.get(key)
            out[key] = Summary() if st is None else Summary(
                0, None, st.start, st.delivery_complete_count, st.leader_epoch, st.state_epoch)
    return out


def _known(state: Any, topic_id: uuid.UUID, partition: int) -> bool:
    for info in state.topics.values():
        if info.topic_id == topic_id:
            return bool(partition < info.partitions)
    return False
