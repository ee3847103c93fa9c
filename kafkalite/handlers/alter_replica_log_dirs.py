"""AlterReplicaLogDirs (key 34): v0–v2 (v2 flexible; responses carry error codes only).

kafkalite keeps every partition in one log dir (the first of ``log.dirs``), so a move can only name that
dir. Kafka 3.9's ``ReplicaManager.alterReplicaLogDirs`` checks, per partition, in this order:

* a topic name too long for the future-log directory name (``<topic>-<p>.<32 hex>-future`` over 255
  characters): INVALID_TOPIC_EXCEPTION;
* a path that is not a configured log dir: LOG_DIR_NOT_FOUND (``isLogDirOnline`` compares the string
  with each log dir's absolute path; ours is the path DescribeLogDirs reports);
* a partition this broker does not host: REPLICA_NOT_AVAILABLE (kept for compatibility by Kafka);
* otherwise NONE: the replica already lives in that dir, nothing moves.

Authorization (``KafkaApis.handleAlterReplicaLogDirsRequest``): ALTER on the cluster, else every listed
partition answers CLUSTER_AUTHORIZATION_FAILED (``AlterReplicaLogDirsRequest.getErrorResponse``).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state.placement import partition_exists
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse

R = AlterReplicaLogDirsResponse


def log_dir_path(state: object) -> str:
    """The log dir as DescribeLogDirs names it."""
    return str(state.log_dir.resolve())  # type: ignore[attr-defined]


@handler(AlterReplicaLogDirsRequest, min_version=0, max_version=2)
async def alter_replica_log_dirs(ctx: RequestContext, req: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    state = ctx.broker
    ours = log_dir_path(state)
    denied = authz.cluster_error(ctx, authz.Op.ALTER)
    results: dict[str, list] = {}
    work = Slices()
    for d in req.dirs:
        known = d.path == ours
        for t in d.topics:
            out = results.setdefault(t.name, [])
            for p in t.partitions:
                if work.due():
                    await work.pause()
                if denied:
                    code = denied
                elif len(f"{t.name}-{p}.{'0' * 32}-future") > 255:
                    code = ErrorCode.INVALID_TOPIC_EXCEPTION
                elif not known:
                    code = ErrorCode.LOG_DIR_NOT_FOUND
                elif not partition_exists(state, t.name, p):
                    code = ErrorCode.REPLICA_NOT_AVAILABLE
                else:
                    code = ErrorCode.NONE
                out.append(R.AlterReplicaLogDirPartitionResult(partition_index=p, error_code=code))
    return R(throttle_time_ms=0, results=[R.AlterReplicaLogDirTopicResult(topic_name=n, partitions=ps)
                                          for n, ps in results.items()])
