"""Follower replication: one task per follower replica, copying the leader's batches into its own log.

The brokers share a process, so a follower reads the leader's ``PartitionLog`` directly instead of sending
Fetch requests; what it does with the bytes is what Kafka's ``ReplicaFetcherThread`` does:

- Before fetching under a new leader epoch it truncates its log to where its own latest epoch ends on the
  leader (``end_offset_for_epoch``, the OffsetForLeaderEpoch answer, KIP-101/KIP-279): batches it wrote under
  an old leader that the new leader never had are removed, so logs never diverge.
- It appends the leader's batches unchanged (``assign_offsets=False``: same offsets, same bytes, the batch's
  own PartitionLeaderEpoch, producer state updated so a follower that becomes leader still recognises an
  idempotent producer's retries), then reports its log end offset to the controller (``follower_progress``),
  which advances the high watermark or takes it back into the ISR.
- It waits for the next append on the leader (the leader broker's append waiters, as a Fetch long poll
  does) or for ``replica.fetch.wait.max.ms``.

The task runs under the follower broker's supervisor as ``replica-fetcher:<topic>-<partition>``: an error
(a storage fault on one replica) is logged, recorded and retried with a backoff, without touching other
partitions. It ends when its broker becomes the leader or stops being a replica.
"""
from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from kafkalite.cluster.runtime import ClusterRuntime, Node
    from kafkalite_storage import PartitionLog

log = logging.getLogger("kafkalite.cluster")

FETCH_BYTES = 1024 * 1024
_HEAD = struct.Struct(">qi")


def split_batches(data: bytes | memoryview) -> list[memoryview]:
    """The whole record batches in ``data`` (a read of whole batches; a torn tail is left out)."""
    mv = memoryview(data)
    out = []
    pos = 0
    while pos + 12 <= len(mv):
        _base, length = _HEAD.unpack_from(mv, pos)
        end = pos + 12 + length
        if length <= 0 or end > len(mv):
            break
        out.append(mv[pos:end])
        pos = end
    return out


def truncation_offset(follower: PartitionLog, leader: PartitionLog) -> int:
    """Where the follower's log must end before it fetches from this leader (OffsetForLeaderEpoch)."""
    leo = follower.log_end_offset
    epoch = follower.latest_epoch()
    if epoch < 0:
        return min(leo, leader.log_end_offset)
    leader_epoch, end = leader.end_offset_for_epoch(epoch)
    if leader_epoch < 0:   # the leader knows no epoch this old: keep what the leader also has
        return min(leo, leader.log_end_offset)
    if leader_epoch < epoch:   # the follower's epoch is unknown there: its own end of the leader's epoch
        end = min(end, follower.end_offset_for_epoch(leader_epoch)[1])
    return min(leo, end)


def truncate(follower: Any, leader: Any, where: str) -> None:
    target = truncation_offset(follower, leader)
    if target < follower.log_end_offset:
        log.info("%s: truncating from %d to %d (leader epoch boundary)", where, follower.log_end_offset, target)
        follower.truncate_to(target)


def copy(follower: Any, leader: Any, max_bytes: int = FETCH_BYTES) -> int:
    """Append the leader's batches past the follower's log end (up to ``max_bytes``); -> batches copied."""
    leo = follower.log_end_offset
    if leo >= leader.log_end_offset:
        return 0
    if leo < leader.log_start_offset:   # what it misses is gone from the leader (retention): start there
        follower.truncate_fully_and_start_at(leader.log_start_offset)
        leo = follower.log_end_offset
    data = leader.read_bytes(leo, max_bytes)
    n = 0
    for batch in split_batches(data):
        base = _HEAD.unpack_from(batch, 0)[0]
        last = base + struct.unpack_from(">i", batch, 23)[0]
        if last < follower.log_end_offset:
            continue
        follower.append(batch, leader_epoch=None, validate_producer=False, assign_offsets=False)
        n += 1
    return n


def catch_up_now(runtime: ClusterRuntime, tp: tuple[str, int], leader: int, follower: int) -> None:
    """Before a controlled leader move: the new leader copies all the old one has (in place, at once)."""
    lst, fst = runtime.state_of(leader), runtime.state_of(follower)
    llog = lst.logs.get_log(*tp) if lst is not None else None
    flog = fst.logs.get_log(*tp) if fst is not None else None
    if llog is None or flog is None:
        return
    truncate(flog, llog, f"broker {follower} {tp[0]}-{tp[1]}")
    while copy(flog, llog):
        pass


async def run_follower(runtime: ClusterRuntime, node: Node, tp: tuple[str, int]) -> None:
    st = node.running()
    try:
        await st.supervisor.run(f"replica-fetcher:{tp[0]}-{tp[1]}", follow, runtime, node, tp)
    finally:
        node.following.discard(tp)


async def follow(runtime: ClusterRuntime, node: Node, tp: tuple[str, int]) -> None:
    nid = node.node_id
    st = node.running()
    where = f"broker {nid} {tp[0]}-{tp[1]}"
    truncated_at: tuple[int, int] | None = None
    while True:
        ps = runtime.meta.partitions.get(tp)
        if ps is None or nid not in ps.replicas or ps.leader == nid or not node.up:
            return
        lst = runtime.state_of(ps.leader)
        flog = st.logs.get_log(*tp)
        llog = lst.logs.get_log(*tp) if lst is not None else None
        if llog is None or flog is None:
            with trio.move_on_after(runtime.fetch_wait_s):
                await runtime.changed(tp).wait()
            continue
        if truncated_at != (ps.leader, ps.leader_epoch):
            truncate(flog, llog, where)
            truncated_at = (ps.leader, ps.leader_epoch)
        copied = copy(flog, llog)
        runtime.follower_progress(tp, nid, flog.log_end_offset, llog.log_end_offset)
        if copied:
            await trio.lowlevel.checkpoint()
            continue
        ev = lst.purgatory.append_waiter([tp])
        try:
            with trio.move_on_after(runtime.fetch_wait_s):
                await ev.wait()
        finally:
            lst.purgatory.drop_waiter([tp], ev)
