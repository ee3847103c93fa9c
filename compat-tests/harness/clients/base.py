"""One small interface over six Kafka clients.

Every driver is synchronous from the test's point of view (aiokafka runs its own event loop per call; the
Java and node drivers talk JSON lines to one long-lived child process each). A driver declares the features it
has; tests are generated only for (client, feature) pairs that exist, so a client's missing feature is never a
skipped test - it is a line in MATRIX.md.

Feature names:
  produce, consume            records with keys and values (always)
  headers                     per-record headers incl. null header values and duplicate names
  null_header                 a header whose value is null (kafka-python and kafkajs refuse one)
  fixed_headers               only one header set for a whole produce call (kcat -H)
  empty_is_null               the consumer reads a zero-length key, value or header value as null (kafka-go)
  map_headers                 headers are a map (rskafka): unique names, no null values, read back sorted by
                              name; such a consumer cannot read records with duplicate names or null values
  timestamps                  explicit per-record CreateTime timestamps on produce
  log_append_time             the consumer reports a LogAppendTime batch's broker timestamp (the batch's
                              timestamp type and max timestamp), not the records' CreateTime deltas
  null_key, null_value        Kafka nulls (tombstones) on produce
  binary                      arbitrary bytes in keys/values (kcat reads text lines)
  idempotent                  enable.idempotence producer
  codec:<name>                compression codec the client can produce (none gzip snappy lz4 zstd)
  metadata                    list brokers and topic partition counts
  admin                       create/delete topics
  configs                     describe/alter topic configs
  list_offsets                earliest/latest offsets
  offsets_by_time             offset lookup by timestamp
"""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence

from harness.records import Rec
from kafkalite.tests.support import requires

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


class ClientError(RuntimeError):
    """A client reported an error (the message carries what it said)."""


class Client(ABC):
    name: str = ""
    features: frozenset[str] = frozenset()
    # what list_offsets answers for a timestamp after the last record: Kafka's -1, or "end" where the client's
    # admin API replaces -1 by the end offset itself (kafkajs, franz-go's kadm)
    offset_after_last_timestamp: str = "-1"

    def has(self, *features: str) -> bool:
        return all(f in self.features for f in features)

    @abstractmethod
    def missing(self) -> str | None:
        """Why this client cannot run here (None when it can)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release long-lived helper processes."""

    # -- data path ---------------------------------------------------------------------------------------
    @abstractmethod
    def produce(self, bootstrap: str, topic: str, records: Sequence[Rec], *, compression: str = "none",
                idempotent: bool | None = None, acks: str = "all", max_request_bytes: int | None = None,
                timeout_s: float = 60.0) -> list[tuple[int, int]]:
        """Send records (each with an explicit partition) and wait for every ack.

        Returns (partition, offset) per record in input order where the client reports it; [] otherwise.
        ``idempotent=None`` keeps the client's own default.
        """

    @abstractmethod
    def consume(self, bootstrap: str, topic: str, partitions: Sequence[int], count: int, *,
                start: int | str = "earliest", timeout_s: float = 60.0,
                max_fetch_bytes: int | None = None) -> list[Rec]:
        """Read ``count`` records from the assigned ``partitions`` starting at offset ``start`` (an int or
        "earliest") in each; returns them in delivery order with partition and offset set."""

    # -- admin (only where ``features`` says so) --------------------------------------------------------
    def metadata(self, bootstrap: str, topics: Sequence[str] | None = None) -> dict:
        """{"brokers": [(node_id, host, port)], "topics": {name: partition_count}}"""
        raise NotImplementedError

    def create_topic(self, bootstrap: str, topic: str, partitions: int,
                     config: dict[str, str] | None = None) -> None:
        raise NotImplementedError

    def delete_topic(self, bootstrap: str, topic: str) -> None:
        raise NotImplementedError

    def create_partitions(self, bootstrap: str, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions (CreatePartitions)."""
        raise NotImplementedError

    def describe_config(self, bootstrap: str, topic: str) -> dict[str, str]:
        raise NotImplementedError

    def alter_config(self, bootstrap: str, topic: str, config: dict[str, str]) -> None:
        raise NotImplementedError

    def list_offsets(self, bootstrap: str, topic: str, partition: int, spec: int | str) -> int:
        """spec: "earliest", "latest" or a timestamp in ms (-> first offset with ts >= it, -1 if none)."""
        raise NotImplementedError


def which(cmd: str) -> str | None:
    return shutil.which(cmd)


def ci() -> bool:
    """CI is set to a true value: the repository's one rule (kafkalite/tests/support/requires.py)."""
    return requires.ci()
