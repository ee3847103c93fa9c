"""DescribeLogDirs (key 35): v0–v5 (admin tools and UIs use it for topic sizes).

One log dir (the first of ``log.dirs``). Topics null means every partition; otherwise only the listed
partitions that exist are reported. PartitionSize is the bytes of the partition's segments, OffsetLag 0 (no
replication, no future replicas). v3+ carry a top-level ErrorCode; v4+ the file system's total and usable
bytes for the log dir; v5+ IsCordoned (KIP-1066: a log dir closed to new partitions; kafkalite's one never is).
- Authorization: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (v3+ top-level) and no results.

Bounded work on the event loop: after a clean start partition logs load on first use (0.3-1 ms of file reads
each), and a size needs the loaded log, so the partitions asked for that are not loaded yet load in a worker
thread first (``BrokerState.ensure_loaded``): loading them one by one in the walk held the loop for 100-300 ms
per slice check at 2,000 partitions. The walk itself (in slices) then only reads sizes the logs keep in memory.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeLogDirsRequest, DescribeLogDirsResponse

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

R = DescribeLogDirsResponse


@handler(DescribeLogDirsRequest, min_version=0, max_version=5)
async def describe_log_dirs(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    state = ctx.broker
    if err := authz.cluster_error(ctx, authz.Op.DESCRIBE):
        return R(throttle_time_ms=0, error_code=err, results=[])
    if req.topics is None:
        wanted = [(name, list(range(info.partitions))) for name, info in sorted(state.topics.items())]
    else:
        wanted = [(t.topic, list(t.partitions)) for t in req.topics if t.topic in state.topics]
    work = Slices()   # a request may list a million partitions: read-only, so it is walked in slices
    if state.logs.pending_loads:
        await state.ensure_loaded(await _existing(state, wanted, work))
    topics: list[Any] = []
    for name, partitions in wanted:
        parts = []
        for p in partitions:
            if work.due():
                await work.pause()
            plog = state.logs.get_log(name, p)
            if plog is not None:
                parts.append(R.DescribeLogDirsPartition(partition_index=p, partition_size=plog.size_bytes,
                                                        offset_lag=0, is_future_key=False))
        if parts:
            topics.append(R.DescribeLogDirsTopic(name=name, partitions=parts))
    total = usable = -1
    try:
        st = os.statvfs(state.log_dir)
        total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    except OSError:
        pass
    result = R.DescribeLogDirsResult(error_code=ErrorCode.NONE, log_dir=str(state.log_dir.resolve()),
                                     topics=topics, total_bytes=total, usable_bytes=usable)
    return R(throttle_time_ms=0, error_code=ErrorCode.NONE, results=[result])


async def _existing(state: BrokerState, wanted: list[tuple[str, list[int]]], work: Slices) -> set[tuple[str, int]]:
    """The partitions of ``wanted`` that exist, each once (a request may name one partition a million times):
    at most the broker's partition count, so the set handed to the loader is bounded."""
    keys: set[tuple[str, int]] = set()
    for name, partitions in wanted:
        info = state.topics.get(name)
        count = info.partitions if info is not None else 0
        for p in partitions:
            if work.due():
                await work.pause()
            if 0 <= p < count:
                keys.add((name, p))
    return keys
