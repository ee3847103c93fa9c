"""storage: Kafka's on-disk log engine, synchronous and network-free.

LogManager (a log dir) -> PartitionLog (a `<topic>-<partition>` dir) -> LogSegment (`.log` + `.index` +
`.timeindex` + `.txnindex`) with producer state snapshots; byte formats are Apache Kafka's own, so a
directory written here opens in Kafka and vice versa.
"""

from __future__ import annotations

from storage.config import LogConfig
from storage.log import AppendInfo, PartitionLog
from storage.manager import LogManager

__all__ = ["AppendInfo", "LogConfig", "LogManager", "PartitionLog"]
