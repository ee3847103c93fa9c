"""storage: Kafka's on-disk log engine, synchronous and network-free.

LogManager (a log dir) -> PartitionLog (a `<topic>-<partition>` dir) -> LogSegment (`.log` + `.index` +
`.timeindex` + `.txnindex`) with producer-state `.snapshot`s; byte formats are Apache Kafka's own, so a
directory written here opens in Kafka and vice versa.

    lm = LogManager.open(log_dir, LogConfig(), node_id=1)       # recovers after an unclean stop
    log = lm.create_log(topic, partition, topic_id, config)     # idempotent
    info = log.append(batch_bytes, leader_epoch=0, now_ms=now)  # one v2 batch, stored verbatim
    regions = log.read(offset, max_bytes)                       # [(fd, position, length)] for sendfile
    log.offset_for_timestamp(ts) ; log.max_timestamp_offset() ; log.flush()
    lm.checkpoint() ; lm.enforce_retention() ; lm.cleanup()     # housekeeping, from a worker thread
    lm.run_on_owner = fn                                        # how retention there rolls on the appending thread
    lm.close()                                                  # checkpoints + .kafka_cleanshutdown

Also: `append(..., validate_producer=False)` / `append_control(...)` for coordinators, `last_stable_offset`,
`aborted_transactions(start, end)`, `delete_records_before(offset)`, `end_offset_for_epoch(epoch)`.
Modules: batch (header parsing, record iteration), compression, config, index, segment, log, loader
(recovery), producer_state, txn_index, retention, cleaner (compaction), checkpoints, testing (batch encoder),
fs (the file operations every write goes through; `fs.faults()` injects ENOSPC/EIO in tests).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalite_storage.config import LogConfig
from kafkalite_storage.manager import LogManager

if TYPE_CHECKING:
    from kafkalite_storage.log import AppendInfo, PartitionLog

__all__ = ["AppendInfo", "LogConfig", "LogManager", "PartitionLog"]


def __getattr__(name: str) -> Any:
    if name in ("AppendInfo", "PartitionLog"):
        # lazy attribute: the log module comes with the first partition log (see manager._fd_grace_s)
        from kafkalite_storage import log

        return getattr(log, name)
    raise AttributeError(f"module 'kafkalite_storage' has no attribute {name!r}")
