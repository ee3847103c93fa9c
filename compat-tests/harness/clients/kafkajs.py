"""kafkajs 2.2.4 driver: compat-tests/node/driver.js as one long-lived node process per test session.

kafkajs speaks only non-flexible API versions (it never sends tagged fields), ignores the broker's
advertised minimum versions, and can consume only through a consumer group (no assign()).
"""

from __future__ import annotations

from pathlib import Path

from harness.clients.base import Client, which
from harness.clients.jsonproc import JsonLineProcess
from harness.records import Rec

HERE = Path(__file__).resolve().parents[2]  # compat-tests/


class KafkajsClient(Client):
    name = "kafkajs"
    # snappy/lz4/zstd need codec plugins kafkajs does not ship: see MATRIX.md.
    features = frozenset({"produce", "consume", "headers", "timestamps", "log_append_time", "null_key", "null_value", "binary",
                          "idempotent", "metadata", "admin", "configs", "list_offsets", "offsets_by_time",
                          "codec:none", "codec:gzip", "group_consume"})
    offset_after_last_timestamp = "end"   # fetchTopicOffsetsByTimestamp gives the high watermark instead of -1

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._proc: JsonLineProcess | None = None

    def missing(self) -> str | None:
        if not which("node"):
            return "node not on PATH"
        if not (HERE / "node_modules" / "kafkajs" / "package.json").exists():
            return "compat-tests/node_modules/kafkajs missing: run tools/bootstrap.sh clients"
        return None

    def _call(self, cmd: dict, timeout: float = 120.0) -> dict:
        if self._proc is None:
            self._proc = JsonLineProcess(["env", "KAFKAJS_NO_PARTITIONER_WARNING=1", "node",
                                          str(HERE / "node" / "driver.js")],
                                         self.log_dir / "kafkajs-driver.log", cwd=str(HERE))
        return self._proc.request(cmd, timeout)

    def close(self) -> None:
        if self._proc:
            self._proc.close()
            self._proc = None

    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        self._call({"op": "produce", "bootstrap": bootstrap, "topic": topic, "compression": compression,
                    "idempotent": idempotent, "acks": acks, "timeout_ms": int(timeout_s * 1000),
                    "records": [x.to_json() for x in records]}, timeout_s + 60)
        return []

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None):
        r = self._call({"op": "consume", "bootstrap": bootstrap, "topic": topic, "partitions": list(partitions),
                        "count": count, "start": start, "timeout_ms": int(timeout_s * 1000),
                        "max_fetch_bytes": max_fetch_bytes}, timeout_s + 60)
        return [Rec.from_json(d) for d in r["records"]]

    def group_consume(self, bootstrap, topic, count, group, timeout_s=60.0) -> list[Rec]:
        """A member of ``group`` reading ``topic`` from the beginning, committing after every batch, until
        ``count`` distinct records (a record delivered again after a rejoin is returned again)."""
        r = self._call({"op": "group_consume", "bootstrap": bootstrap, "topic": topic, "count": count,
                        "group": group, "timeout_ms": int(timeout_s * 1000)}, timeout_s + 60)
        return [Rec.from_json(d) for d in r["records"]]

    def metadata(self, bootstrap, topics=None):
        r = self._call({"op": "metadata", "bootstrap": bootstrap, "topics": list(topics) if topics else None})
        return {"brokers": [tuple(b) for b in r["brokers"]], "topics": r["topics"], "cluster_id": r["cluster_id"]}

    def create_topic(self, bootstrap, topic, partitions, config=None):
        self._call({"op": "create_topic", "bootstrap": bootstrap, "topic": topic, "partitions": partitions,
                    "topic_config": config or {}})

    def create_acl(self, bootstrap, resource_type, name, principal, operation, permission=3, pattern_type=3):
        """admin.createAcls of one binding, Kafka's numeric codes (TOPIC 2, WRITE 4, ALLOW 3, LITERAL 3)."""
        self._call({"op": "create_acl", "bootstrap": bootstrap, "resource_type": resource_type, "name": name,
                    "principal": principal, "operation": operation, "permission": permission,
                    "pattern_type": pattern_type})

    def describe_acls(self, bootstrap):
        return [tuple(a) for a in self._call({"op": "describe_acls", "bootstrap": bootstrap})["acls"]]

    def delete_topic(self, bootstrap, topic):
        self._call({"op": "delete_topic", "bootstrap": bootstrap, "topic": topic})

    def create_partitions(self, bootstrap, topic, total):
        self._call({"op": "create_partitions", "bootstrap": bootstrap, "topic": topic, "total": total})

    def describe_config(self, bootstrap, topic):
        return self._call({"op": "describe_config", "bootstrap": bootstrap, "topic": topic})["config"]

    def alter_config(self, bootstrap, topic, config):
        self._call({"op": "alter_config", "bootstrap": bootstrap, "topic": topic, "topic_config": config})

    def list_offsets(self, bootstrap, topic, partition, spec):
        return self._call({"op": "list_offsets", "bootstrap": bootstrap, "topic": topic, "partition": partition,
                           "spec": spec})["offset"]
