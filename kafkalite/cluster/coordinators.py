"""Group and transaction coordinators in a cluster: each broker's coordinators own the groups (transactional
ids) whose ``__consumer_offsets`` (``__transaction_state``) partition that broker leads, as in Kafka.

- ``install`` gives each broker's pure coordinators an ``owns(key)`` test: a request for a key whose partition
  another broker leads is answered NOT_COORDINATOR (Kafka's ``isGroupLocal`` / ``isCoordinatorFor``), so the
  client looks the coordinator up again (FindCoordinator answers the leader).
- At start every broker reads its whole replica of the internal topics; ``prune_when_loaded`` then drops what
  it does not lead, so only the owner's timers act on a group or transaction.
- ``moved``: when an internal partition's leader changes (a leader move, a broker stopping), the old
  coordinator resigns that partition (parked JoinGroup/SyncGroup answered NOT_COORDINATOR, its groups
  forgotten) and the new one loads it from its own replica (Kafka's ``onElection`` / ``onResignation``);
  while it loads, its requests for those keys answer NOT_COORDINATOR.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.coordinator.classic.loader import StateLoader
from kafkalite.coordinator.classic.records import RecordDecodeError, iter_entries, iter_records
from kafkalite.coordinator.classic.service import _fail_member
from kafkalite.coordinator.common.internal_topics import read_chunks
from kafkalite.coordinator.consumer.records import consumer_split
from kafkalite.coordinator.txn.coordinator import TxnMetadata, TxnState
from kafkalite.coordinator.txn.records import decode_txn_key, decode_txn_value
from kafkalite.metadata import partitions as placement

if TYPE_CHECKING:
    from kafkalite.cluster.runtime import ClusterRuntime
    from kafkalite.coordinator.classic.service import GroupService
    from kafkalite.coordinator.txn.service import TransactionService
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.cluster")


def _partition(state: BrokerState, topic: str, key: str) -> int:
    info = state.topics.get(topic)
    n = info.partitions if info is not None else 50
    return placement.coordinator_partition(key, n)


def owner(runtime: ClusterRuntime, state: BrokerState, kind: str, key: str) -> int:
    """The node that coordinates ``key`` (-1: none alive), by Kafka's hashing onto the internal topic."""
    topic = placement.coordinator_topic(kind)
    return runtime.leader_of(topic, _partition(state, topic, key))


def install(runtime: ClusterRuntime, state: BrokerState) -> None:
    nid = state.node_id

    def owns(topic: str, key: str) -> bool:
        tp = (topic, _partition(state, topic, key))
        ps = runtime.meta.partitions.get(tp)
        if ps is None:   # the internal topic does not exist yet: whoever creates it leads partition 0..
            return True
        return ps.leader == nid and tp not in runtime.loading.get(nid, ())

    groups = state.groups
    if groups is not None:
        groups.coordinator.owns = lambda gid: owns(placement.OFFSETS_TOPIC, gid)
        groups.consumer.coordinator.owns = groups.coordinator.owns
    txns = state.txns
    if txns is not None:
        txns.coordinator.owns = lambda tid: owns(placement.TXN_TOPIC, tid)


async def prune_when_loaded(runtime: ClusterRuntime, state: BrokerState) -> None:
    for svc in (state.groups, state.txns):
        if svc is not None:
            await svc.loaded.wait()
    nid = state.node_id
    for topic in (placement.OFFSETS_TOPIC, placement.TXN_TOPIC):
        info = state.topics.get(topic)
        if info is None:
            continue
        for p in range(info.partitions):
            if runtime.leader_of(topic, p) != nid:
                resign(state, (topic, p))


def resign(state: BrokerState, tp: tuple[str, int]) -> None:
    topic, p = tp
    groups, txns = state.groups, state.txns
    if topic == placement.OFFSETS_TOPIC and groups is not None:
        c = groups.coordinator
        for gid in [g for g in c.groups if _partition(state, topic, g) == p]:
            for m in c.groups[gid].members.values():
                _fail_member(m)
            del c.groups[gid]
        cc = groups.consumer.coordinator
        for gid in [g for g in cc.groups if _partition(state, topic, g) == p]:
            del cc.groups[gid]
    elif topic == placement.TXN_TOPIC and txns is not None:
        tc = txns.coordinator
        for tid in [t for t in tc.txns if _partition(state, topic, t) == p]:
            del tc.txns[tid]


def moved(runtime: ClusterRuntime, tp: tuple[str, int], old: int, new: int) -> None:
    old_state = runtime.state_of(old)
    if old_state is not None:
        resign(old_state, tp)
    new_state = runtime.state_of(new)
    if new_state is not None and runtime.nursery is not None:
        runtime.loading.setdefault(new, set()).add(tp)
        runtime.nursery.start_soon(_load, runtime, new_state, tp)


async def _load(runtime: ClusterRuntime, state: BrokerState, tp: tuple[str, int]) -> None:
    try:
        resign(state, tp)   # whatever it held of this partition is older than its replica
        if tp[0] == placement.OFFSETS_TOPIC and state.groups is not None:
            await _load_groups(state, state.groups, tp)
        elif tp[0] == placement.TXN_TOPIC and state.txns is not None:
            await _load_txns(state, state.txns, tp)
        log.info("broker %d now coordinates %s-%d", state.node_id, *tp)
    except Exception:
        log.exception("broker %d: loading %s-%d failed; its keys stay unanswered until the next move",
                      state.node_id, *tp)
        return
    finally:
        runtime.loading.get(state.node_id, set()).discard(tp)


async def _load_groups(state: BrokerState, svc: GroupService, tp: tuple[str, int]) -> None:
    plog = state.get_log(*tp)
    if plog is None:
        return
    consumer_records: list[tuple[bytes, bytes | None]] = []

    def read() -> Any:
        loader = StateLoader()
        for data in read_chunks(plog):
            loader.feed_entries(consumer_split(iter_entries(data), consumer_records))
        return loader

    loader = await trio.to_thread.run_sync(read)
    now = svc.now_ms()
    for gid, g in loader.build(now).items():
        if _partition(state, tp[0], gid) == tp[1]:
            svc.coordinator.groups[gid] = g
    svc.consumer.coordinator.load(consumer_records, now)
    svc._kick()


async def _load_txns(state: BrokerState, svc: TransactionService, tp: tuple[str, int]) -> None:
    plog = state.get_log(*tp)
    if plog is None:
        return

    def read() -> dict[str, Any]:
        values: dict[str, Any] = {}
        for data in read_chunks(plog):
            for _off, key, value in iter_records(data):
                try:
                    tid = decode_txn_key(key)
                    values[tid] = None if value is None else decode_txn_value(value)
                except (RecordDecodeError, ValueError, UnicodeDecodeError) as exc:
                    log.warning("skipping undecodable %s record: %s", tp[0], exc)
        return values

    values = await trio.to_thread.run_sync(read)
    c = svc.coordinator
    now = svc.now_ms()
    for tid, v in values.items():
        if v is None:
            continue
        meta = TxnMetadata.from_value(tid, v)
        c.txns[tid] = meta
        if meta.state == TxnState.PREPARE_EPOCH_FENCE:
            meta.state = TxnState.ONGOING
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            c._complete(now, meta)
    svc.kick()
