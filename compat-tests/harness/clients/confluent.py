"""confluent-kafka 2.16.1 driver (librdkafka 2.16 underneath; idempotence off by default)."""

from __future__ import annotations

import time

from harness.clients.base import CODECS, Client, ClientError
from harness.records import Rec


class ConfluentClient(Client):
    name = "confluent-kafka"
    features = frozenset({"produce", "consume", "headers", "null_header", "timestamps", "log_append_time", "null_key", "null_value", "binary",
                          "idempotent", "metadata", "admin", "configs", "list_offsets", "offsets_by_time",
                          *(f"codec:{c}" for c in CODECS)})

    def missing(self) -> str | None:
        try:
            import confluent_kafka  # noqa: F401
        except ImportError as e:
            return f"confluent-kafka not importable: {e}"
        return None

    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        from confluent_kafka import Producer

        conf = {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "compression.type": compression,
                "queue.buffering.max.messages": 2_000_000, "message.timeout.ms": int(timeout_s * 1000)}
        if idempotent is not None:
            conf["enable.idempotence"] = idempotent
        if max_request_bytes:
            conf["message.max.bytes"] = max_request_bytes
        prod = Producer(conf)
        results: list[tuple[int, int] | None] = [None] * len(records)
        errors: list[str] = []

        def on_delivery(i: int):
            def cb(err, msg):
                if err is not None:
                    errors.append(f"record {i}: {err}")
                else:
                    results[i] = (msg.partition(), msg.offset())
            return cb

        for i, r in enumerate(records):
            kw = {}
            if r.timestamp is not None:
                kw["timestamp"] = r.timestamp
            if r.partition is not None:
                kw["partition"] = r.partition
            while True:
                try:
                    prod.produce(topic, value=r.value, key=r.key, headers=list(r.headers) or None,
                                 on_delivery=on_delivery(i), **kw)
                    break
                except BufferError:
                    prod.poll(0.1)
            if i % 1000 == 0:
                prod.poll(0)
        left = prod.flush(timeout_s)
        if errors:
            raise ClientError(f"{len(errors)} delivery errors, first: {errors[0]}")
        if left:
            raise ClientError(f"{left} records still undelivered after {timeout_s}s")
        return [r for r in results if r is not None]

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        conf = {"bootstrap.servers": bootstrap, "group.id": f"compat-assign-{time.monotonic_ns()}",
                "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
                "enable.auto.offset.store": False}
        if max_fetch_bytes:
            conf.update({"fetch.max.bytes": max_fetch_bytes * 2, "max.partition.fetch.bytes": max_fetch_bytes,
                         "receive.message.max.bytes": max_fetch_bytes * 2 + 1_000_000})
        cons = Consumer(conf)
        try:
            off = OFFSET_BEGINNING if start == "earliest" else int(start)
            cons.assign([TopicPartition(topic, p, off) for p in partitions])
            out: list[Rec] = []
            deadline = time.monotonic() + timeout_s
            while len(out) < count and time.monotonic() < deadline:
                # consume() returns early only once it has num_messages: ask for what is still missing,
                # or every call would sit out its whole timeout after the last record arrived
                for m in cons.consume(num_messages=max(1, min(10_000, count - len(out))), timeout=0.5):
                    if m.error():
                        if m.error().fatal():
                            raise ClientError(str(m.error()))
                        continue
                    out.append(Rec(m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1],
                                   m.partition(), m.offset()))
            return out
        finally:
            cons.close()

    # -- admin -----------------------------------------------------------------------------------------
    def _admin(self, bootstrap):
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": bootstrap})

    def metadata(self, bootstrap, topics=None):
        adm = self._admin(bootstrap)
        out = {}
        brokers = []
        for t in topics or [None]:
            md = adm.list_topics(topic=t, timeout=20)
            brokers = [(b.id, b.host, b.port) for b in md.brokers.values()]
            for name, tm in md.topics.items():
                if tm.error is not None:
                    raise ClientError(f"metadata error for {name}: {tm.error}")
                out[name] = len(tm.partitions)
        return {"brokers": brokers, "topics": out}

    def create_topic(self, bootstrap, topic, partitions, config=None):
        from confluent_kafka.admin import NewTopic

        adm = self._admin(bootstrap)  # keep a reference until the future resolves
        futs = adm.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=dict(config or {}))],
            operation_timeout=20)
        futs[topic].result(30)

    def delete_topic(self, bootstrap, topic):
        adm = self._admin(bootstrap)
        adm.delete_topics([topic], operation_timeout=20)[topic].result(30)

    def create_partitions(self, bootstrap, topic, total):
        from confluent_kafka.admin import NewPartitions

        adm = self._admin(bootstrap)
        adm.create_partitions([NewPartitions(topic, total)], operation_timeout=20)[topic].result(30)

    def describe_config(self, bootstrap, topic):
        from confluent_kafka.admin import ConfigResource

        res = ConfigResource("topic", topic)
        adm = self._admin(bootstrap)
        entries = adm.describe_configs([res])[res].result(30)
        return {k: e.value for k, e in entries.items()}

    def alter_config(self, bootstrap, topic, config):
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        res = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in config.items()])
        adm = self._admin(bootstrap)
        adm.incremental_alter_configs([res])[res].result(30)

    def list_offsets(self, bootstrap, topic, partition, spec):
        from confluent_kafka import Consumer, TopicPartition

        cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-offsets",
                         "enable.auto.commit": False})
        try:
            if spec in ("earliest", "latest"):
                lo, hi = cons.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)
                return lo if spec == "earliest" else hi
            (tp,) = cons.offsets_for_times([TopicPartition(topic, partition, int(spec))], timeout=20)
            if tp.error:
                raise ClientError(str(tp.error))
            return tp.offset
        finally:
            cons.close()
