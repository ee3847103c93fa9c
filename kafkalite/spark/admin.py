"""Driver-side metadata: which partitions a subscription covers and their offsets (Spark's KafkaOffsetReader).

Everything goes through confluent-kafka's ``AdminClient``: Metadata for the topic list and ListOffsets for
offsets, batched into one request per broker and offset kind. ListOffsets with timestamp -2 is the log start
offset, -1 the high watermark (or the last stable offset under ``isolation.level=read_committed``), and a real
timestamp gives the earliest offset whose record timestamp is >= it, or -1 when there is none.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.spark.options import TopicPartition, librdkafka_params

_RETRIES = 5


class KafkaMetadataError(RuntimeError):
    """The broker could not answer a metadata or offsets query."""


class OffsetReader:
    """Thin, lazily-connected wrapper over ``AdminClient``; safe to pickle (the client is recreated)."""

    def __init__(self, kafka_params: Mapping[str, str], timeout_s: float = 30.0) -> None:
        # the user's kafka.* options are Java client settings (a PEM truststore, sasl.jaas.config): librdkafka's
        # names for them, as the executors' consumers get
        self._conf = librdkafka_params(kafka_params)
        for key in ("group.id", "isolation.level", "auto.offset.reset", "enable.auto.commit",
                    "enable.partition.eof", "partitioner", "enable.idempotence", "linger.ms"):
            self._conf.pop(key, None)
        self._read_committed = str(kafka_params.get("isolation.level", "read_uncommitted")) == "read_committed"
        self._timeout = timeout_s
        self._admin: Any = None
        self._auth_error: Any = None  # an authentication failure librdkafka reported (error_cb)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_admin"] = None
        return state

    def _client(self) -> Any:
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient({**self._conf, "error_cb": self._on_error})
        return self._admin

    def _on_error(self, err: Any) -> None:
        """librdkafka reports a failed SASL login only here (the request itself fails as a transport error):
        kept so the query fails with it at once, as Java's client fails on SaslAuthenticationException."""
        from confluent_kafka import KafkaError

        if err.code() == KafkaError._AUTHENTICATION:
            self._auth_error = err

    def _check_auth(self) -> None:
        if self._admin is not None:
            self._admin.poll(0)  # serves error_cb
        if self._auth_error is not None:
            raise KafkaMetadataError(f"authentication failed: {self._auth_error.str()}")

    def close(self) -> None:
        self._admin = None

    def topic_partition_counts(self) -> dict[str, int]:
        """``{topic: number of partitions}`` for every topic the broker knows."""
        last: Exception | None = None
        for _attempt in range(_RETRIES):
            try:
                md = self._client().list_topics(timeout=self._timeout)
                return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}
            except Exception as exc:  # KafkaException: transport errors while a broker restarts
                last = exc
                self._check_auth()
                time.sleep(1.0)
        raise KafkaMetadataError(f"cannot fetch topic metadata: {last}") from last

    def _list_offsets(self, specs: Mapping[TopicPartition, Any], *, by_time: bool = False) -> dict[TopicPartition, int]:
        """Offsets per partition, retried on errors. An earliest/latest answer below 0 (librdkafka's -1001,
        OFFSET_INVALID, seen once right after a broker restart) is no offset: asked again, never taken for the
        log's start or end (a source would report data loss). By timestamp, -1 is an answer: no such record."""
        if not specs:
            return {}
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as KTP

        level = IsolationLevel.READ_COMMITTED if self._read_committed else IsolationLevel.READ_UNCOMMITTED
        last: Exception | None = None
        for _attempt in range(_RETRIES):
            try:
                futures = self._client().list_offsets(
                    {KTP(t, p): spec for (t, p), spec in specs.items()},
                    isolation_level=level, request_timeout=self._timeout)
                got = {(ktp.topic, ktp.partition): int(f.result().offset) for ktp, f in futures.items()}
                if not by_time and any(o < 0 for o in got.values()):
                    raise ValueError(f"no offset in the answer: {got}")
                return got
            except Exception as exc:
                last = exc
                self._check_auth()
                time.sleep(1.0)
        raise KafkaMetadataError(f"cannot list offsets: {last}") from last

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        from confluent_kafka.admin import OffsetSpec

        return self._list_offsets({tp: OffsetSpec.earliest() for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        from confluent_kafka.admin import OffsetSpec

        return self._list_offsets({tp: OffsetSpec.latest() for tp in tps})

    def for_timestamps(self, stamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Earliest offset with timestamp >= the given one, or -1 where no record qualifies."""
        from confluent_kafka.admin import OffsetSpec

        return self._list_offsets({tp: OffsetSpec.for_timestamp(ts) for tp, ts in stamps.items()}, by_time=True)
