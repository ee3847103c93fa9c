"""kafka-python 3.0.12 driver (pure Python; producer idempotence on by default in 3.x)."""

from __future__ import annotations

import time

from harness.clients.base import CODECS, Client, ClientError
from harness.records import Rec


class KafkaPythonClient(Client):
    name = "kafka-python"
    features = frozenset({"produce", "consume", "headers", "timestamps", "log_append_time", "null_key", "null_value", "binary",
                          "idempotent", "metadata", "admin", "configs", "list_offsets", "offsets_by_time",
                          *(f"codec:{c}" for c in CODECS)})

    def missing(self) -> str | None:
        try:
            import kafka  # noqa: F401
        except ImportError as e:
            return f"kafka-python not importable: {e}"
        return None

    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        from kafka import KafkaProducer

        conf: dict = dict(bootstrap_servers=bootstrap, acks=-1 if acks == "all" else int(acks), linger_ms=5,
                          compression_type=None if compression == "none" else compression,
                          request_timeout_ms=min(int(timeout_s * 1000), 30_000),
                          delivery_timeout_ms=max(int(timeout_s * 1000), 31_000), retries=2**31 - 1,
                          batch_size=64 * 1024)
        if idempotent is not None:
            conf["enable_idempotence"] = idempotent
        if max_request_bytes:
            conf["max_request_size"] = max_request_bytes
        prod = KafkaProducer(**conf)
        try:
            futs = [prod.send(topic, key=r.key, value=r.value, headers=list(r.headers),
                              timestamp_ms=r.timestamp, partition=r.partition) for r in records]
            prod.flush(timeout=timeout_s)
            out = []
            for f in futs:
                md = f.get(timeout=timeout_s)
                out.append((md.partition, md.offset))
            return out
        finally:
            prod.close(timeout=10)

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None):
        from kafka import KafkaConsumer, TopicPartition

        conf: dict = dict(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                          auto_offset_reset="earliest", fetch_max_wait_ms=200)
        if max_fetch_bytes:
            conf.update(max_partition_fetch_bytes=max_fetch_bytes, fetch_max_bytes=max_fetch_bytes * 2)
        cons = KafkaConsumer(**conf)
        try:
            tps = [TopicPartition(topic, p) for p in partitions]
            cons.assign(tps)
            for tp in tps:
                if start == "earliest":
                    cons.seek_to_beginning(tp)
                else:
                    cons.seek(tp, int(start))
            out: list[Rec] = []
            deadline = time.monotonic() + timeout_s
            while len(out) < count and time.monotonic() < deadline:
                for tp, msgs in cons.poll(timeout_ms=500, max_records=10_000).items():
                    for m in msgs:
                        out.append(Rec(m.key, m.value, tuple((k, v) for k, v in m.headers), m.timestamp,
                                       tp.partition, m.offset))
            return out
        finally:
            cons.close()

    # -- admin -----------------------------------------------------------------------------------------
    def _admin(self, bootstrap):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)

    def metadata(self, bootstrap, topics=None):
        adm = self._admin(bootstrap)
        try:
            cluster = adm.describe_cluster()
            brokers = [(b.get("broker_id", b.get("node_id")), b["host"], b["port"]) for b in cluster["brokers"]]
            tmeta = adm.describe_topics(list(topics) if topics else None)
            out = {}
            for t in tmeta:
                if t["error_code"] != 0:
                    raise ClientError(f"metadata error {t['error_code']} for {t['name']}")
                out[t["name"]] = len(t["partitions"])
            return {"brokers": brokers, "topics": out}
        finally:
            adm.close()

    def create_topic(self, bootstrap, topic, partitions, config=None):
        adm = self._admin(bootstrap)
        try:
            adm.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1,
                                       "configs": dict(config or {})}})
        finally:
            adm.close()

    def delete_topic(self, bootstrap, topic):
        adm = self._admin(bootstrap)
        try:
            adm.delete_topics([topic])
        finally:
            adm.close()

    def create_partitions(self, bootstrap, topic, total):
        adm = self._admin(bootstrap)
        try:
            adm.create_partitions({topic: total})
        finally:
            adm.close()

    def describe_config(self, bootstrap, topic):
        from kafka.admin import ConfigResource, ConfigResourceType

        adm = self._admin(bootstrap)
        try:
            res = adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
            entries = res["topic"][topic]
            return {k: (v.get("value") if isinstance(v, dict) else v) for k, v in entries.items()}
        finally:
            adm.close()

    def alter_config(self, bootstrap, topic, config):
        from kafka.admin import ConfigResource, ConfigResourceType

        adm = self._admin(bootstrap)
        try:
            res = adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=dict(config))])
            err = res["topic"][topic]
            if err not in (None, 0) and getattr(err, "errno", 0) != 0:
                raise ClientError(f"alter_configs: {err!r}")
        finally:
            adm.close()

    def list_offsets(self, bootstrap, topic, partition, spec):
        from kafka import KafkaConsumer, TopicPartition

        cons = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
        try:
            tp = TopicPartition(topic, partition)
            if spec == "earliest":
                return cons.beginning_offsets([tp])[tp]
            if spec == "latest":
                return cons.end_offsets([tp])[tp]
            found = cons.offsets_for_times({tp: int(spec)})[tp]
            return -1 if found is None else found.offset
        finally:
            cons.close()
