"""The share coordinator's state RPCs on a broker: InitializeShareGroupState (83), ReadShareGroupState (84),
WriteShareGroupState (85), DeleteShareGroupState (86), as Kafka's ``ShareCoordinatorService`` runs them.

Per share-partition ``group:topicId:partition``, in Kafka's order:
- no ``__share_group_state`` yet, or another broker leads its partition: NOT_COORDINATOR ("Unable to <op>: This
  is not the correct coordinator."); the state topic still loading: COORDINATOR_LOAD_IN_PROGRESS;
- then the shard's own checks and records (``shard.py``), appended to the state partition before the answer.

The shard of a state partition (``ShareService.shards``) is the replay of its log, built once in a worker
thread (on the first state RPC: a broker that never gets one keeps no second copy of its state) and then kept up
to date by feeding it whatever was appended since (the share-partitions' own writes included; a long tail in a
worker thread too), under ``ShareService.shard_lock``, so its checks and the records it writes always follow
the log. It is built again when the
partition's leader epoch changes (in a ``kafkalite.cluster``, another broker may have written it meanwhile).

Consistency with the broker's share-partitions (``manager.py`` caches each one's state in memory): after a
raw Initialize, Write, Delete, or a Read that recorded a new leader epoch, the share-partition of that key
drops what it holds and is initialised again, at its next use, from the coordinator's state (``reload``) —
where Kafka's ``SharePartition`` ends up when its next write is refused with FENCED_STATE_EPOCH or
FENCED_LEADER_EPOCH. Its acquired, unacknowledged records are delivered again; acknowledgements for them
answer INVALID_RECORD_STATE; nothing it had acknowledged (written) is lost, and its later writes carry the
state epoch the coordinator has, so they are merged onto the new state rather than over it.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import trio

from kafkalite.coordinator.classic.records import iter_records
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.internal_topics import READ_CHUNK, next_offset
from kafkalite.coordinator.share.config import STATE_TOPIC
from kafkalite.coordinator.share.coordinator_reads import LOADING_MSG, NOT_COORDINATOR_MSG, _known
from kafkalite.coordinator.share.offsets import owner_of
from kafkalite.coordinator.share.records import ShareKey, partition_for
from kafkalite.coordinator.share.shard import Outcome, Shard
from kafkalite_wire.errors import ErrorCode

T = TypeVar("T")
#: (shard, key, topic-partition known, now) -> (outcome, anything the handler answers with)
Operation = Callable[[Shard, ShareKey, bool, int], tuple[Outcome, T]]


def _feed(shard: Shard, plog: Any, end: int) -> None:
    """Feed ``shard`` the records of ``plog`` from ``shard.fed_to`` (or the log start, past pruned records) to
    ``end`` (blocking reads)."""
    offset = max(shard.fed_to, plog.log_start_offset)
    while offset < end:
        data = plog.read_bytes(offset, READ_CHUNK)
        if not data:
            break
        for off, k, value in iter_records(data):
            if offset <= off < end:
                shard.feed(bytes(k), None if value is None else bytes(value), off)
        nxt = next_offset(data)
        if nxt is None or nxt <= offset:
            break
        offset = nxt
    shard.fed_to = max(offset, shard.fed_to)


def _build(plog: Any, end: int) -> Shard:
    shard = Shard(plog.log_start_offset)
    _feed(shard, plog, end)
    return shard


#: a shard this many offsets behind its log catches up in a worker thread first
THREAD_CATCH_UP = 1000


async def _shard(svc: Any, state: Any, part: int) -> Shard | None:
    """The shard of state partition ``part``, caught up with its log; None if its log is gone. Called holding
    ``svc.shard_lock`` (no other task feeds a shard meanwhile)."""
    plog = state.get_log(STATE_TOPIC, part)
    if plog is None:
        return None
    epoch = state.leader_epoch_of(STATE_TOPIC, part)
    have = svc.shards.get(part)
    if have is None or have[0] != epoch:
        svc.shards[part] = (epoch, await trio.to_thread.run_sync(_build, plog, plog.log_end_offset))
    shard: Shard = svc.shards[part][1]
    if plog.log_end_offset - shard.fed_to > THREAD_CATCH_UP:
        await trio.to_thread.run_sync(_feed, shard, plog, plog.log_end_offset)
    plog = state.get_log(STATE_TOPIC, part)
    if plog is None:
        return None
    _feed(shard, plog, plog.log_end_offset)   # the tail written meanwhile (small: no thread)
    return shard


def _route(state: Any, key: ShareKey, op: str) -> tuple[int, Outcome | None]:
    info = state.topics.get(STATE_TOPIC)
    part = partition_for(key, info.partitions) if info is not None else -1
    if part < 0 or state.get_log(STATE_TOPIC, part) is None or not state.leads(STATE_TOPIC, part):
        return part, Outcome(ErrorCode.NOT_COORDINATOR, f"Unable to {op}: {NOT_COORDINATOR_MSG}")
    if state.shares.loading:
        return part, Outcome(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"Unable to {op}: {LOADING_MSG}")
    return part, None


async def run(state: Any, op: str, keys: Sequence[ShareKey], operation: Operation[T],
              ) -> dict[ShareKey, tuple[Outcome, T | None]]:
    """Run ``operation`` on each share-partition of ``keys`` at its shard, appending what it writes; ``op``
    names it in coordinator errors ("Unable to <op>: <reason>")."""
    svc = state.shares
    out: dict[ShareKey, tuple[Outcome, T | None]] = {}
    by_part: dict[int, list[ShareKey]] = {}
    for key in keys:
        part, err = _route(state, key, op)
        if err is not None:
            out[key] = (err, None)
        else:
            by_part.setdefault(part, []).append(key)
    for part, todo in by_part.items():
        async with svc.shard_lock:
            shard = await _shard(svc, state, part)
            for key in todo:
                out[key] = _one(svc, state, op, part, shard, key, operation)
    return out


def _one(svc: Any, state: Any, op: str, part: int, shard: Shard | None, key: ShareKey, operation: Operation[T]
         ) -> tuple[Outcome, T | None]:
    """One share-partition at its shard: check, append, feed back (no await: one step)."""
    _, err = _route(state, key, op)         # leadership may have moved while the shard was built
    if shard is None or err is not None:
        return err or Outcome(ErrorCode.NOT_COORDINATOR, f"Unable to {op}: {NOT_COORDINATOR_MSG}"), None
    outcome, extra = operation(shard, key, _known(state, key.topic_id, key.partition), svc.now_ms())
    if outcome.records:
        try:
            svc._append(part, outcome.records)
        except E.AppendError as exc:
            return Outcome(exc.code, f"Unable to {op}: {exc}"), None
        plog = state.get_log(STATE_TOPIC, part)
        if plog is not None:
            _feed(shard, plog, plog.log_end_offset)
        _reload_share_partition(svc, key, shard)
    return outcome, extra


def _reload_share_partition(svc: Any, key: ShareKey, shard: Shard) -> None:
    """The broker holding ``key``'s share-partition (this one, or its topic-partition's leader in a cluster)
    drops its cached state and takes the coordinator's at its next use."""
    owner = owner_of(svc, key.topic_id, key.partition)
    owner.states.reload(key, shard.copy_of(key))
    owner.wake()


#: the message of every partition's COORDINATOR_NOT_AVAILABLE when share groups are off (no share coordinator)
NOT_AVAILABLE = "Share coordinator is not available."


Resp = TypeVar("Resp")


def every_partition(response: type[Resp], result: Any, req: Any, code: int, message: str) -> Resp:
    """A state RPC's answer giving each partition the request names one error (``response`` the response class,
    ``result`` its per-topic result class): authorization refused or no share coordinator."""
    part: Any = response.PartitionResult   # type: ignore[attr-defined]
    return response(results=[result(topic_id=t.topic_id, partitions=[  # type: ignore[call-arg]
        part(partition=p.partition, error_code=code, error_message=message)
        for p in t.partitions]) for t in req.topics])


def keys_by_topic(group: str, topics: Sequence[Any]) -> list[tuple[Any, list[ShareKey]]]:
    """The share-partitions a request names, per topic id in first-seen order, each once (Kafka collects them
    in a map per topic id and partition: a repeated one is answered once)."""
    out: dict[Any, dict[int, ShareKey]] = {}
    for t in topics:
        parts = out.setdefault(t.topic_id, {})
        for p in t.partitions:
            parts[p.partition] = ShareKey(group, t.topic_id, p.partition)
    return [(tid, list(parts.values())) for tid, parts in out.items() if parts]
