"""Go and Rust clients: one driver binary per language, built by ``tools/bootstrap.sh golang`` / ``rust``.

- ``compat-tests/go`` -> ``.deps/go-driver/kclients-go LIB`` with LIB one of franz-go (v1.22.3, kadm v1.20.0),
  sarama (IBM/sarama v1.61.1) and kafka-go (segmentio/kafka-go v0.4.51), pinned in go.mod/go.sum.
- ``compat-tests/rust`` -> ``.deps/rust-driver/kclients-rust LIB`` with LIB one of rdkafka (the rdkafka crate
  0.39.0, librdkafka 2.12.1 built from the crate's bundled sources) and rskafka (0.6.0, pure Rust), pinned in
  Cargo.lock.

Each binary speaks the JSON-lines protocol of the Java and kafkajs drivers (``jsonproc.py``), one long-lived
process per client per test session. The bootstrap writes the hash of the sources it built next to the binary;
a binary built from other sources is reported missing ("stale") rather than silently tested.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from harness.clients.base import CODECS, Client, which
from harness.clients.jsonproc import JsonLineProcess
from harness.records import Rec

HERE = Path(__file__).resolve().parents[2]  # compat-tests/
REPO = HERE.parent
DEPS = REPO / ".deps"


def source_hash(src_dir: Path, patterns: tuple[str, ...]) -> str:
    """sha1 of the files matching ``patterns`` (each pattern's matches sorted by name, patterns in order), the
    same bytes ``tools/bootstrap.sh`` feeds to sha1sum: ``cat FILES | sha1sum``."""
    h = hashlib.sha1()
    for pat in patterns:
        for f in sorted(src_dir.glob(pat), key=lambda p: str(p.relative_to(src_dir)).encode()):
            h.update(f.read_bytes())
    return h.hexdigest()


class _LineDriverClient(Client):
    """A client whose every operation is one JSON command to a long-lived driver process."""

    lang = ""
    lib = ""
    binary: Path = Path()
    src_dir: Path = Path()
    src_patterns: tuple[str, ...] = ()
    stage = ""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._proc: JsonLineProcess | None = None
        self.last_first_ms: int | None = None

    def missing(self) -> str | None:
        if not self.binary.exists():
            return f"{self.binary} not built: run tools/bootstrap.sh {self.stage}"
        stamp = self.binary.with_name(self.binary.name + ".src")
        want = source_hash(self.src_dir, self.src_patterns)
        have = stamp.read_text().strip() if stamp.exists() else ""
        if have != want:
            return f"{self.binary} is stale (built from other sources): run tools/bootstrap.sh {self.stage}"
        return None

    def _call(self, cmd: dict, timeout: float = 120.0) -> dict:
        if self._proc is None:
            self._proc = JsonLineProcess([str(self.binary), self.lib],
                                         self.log_dir / f"{self.name}-driver.log")
        return self._proc.request(cmd, timeout)

    def close(self) -> None:
        if self._proc:
            self._proc.close()
            self._proc = None

    # -- data path -------------------------------------------------------------------------------------------
    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        r = self._call({"op": "produce", "bootstrap": bootstrap, "topic": topic, "compression": compression,
                        "idempotent": idempotent, "acks": acks, "max_request_bytes": max_request_bytes,
                        "timeout_ms": int(timeout_s * 1000), "records": [x.to_json() for x in records]},
                       timeout_s + 60)
        return [tuple(x) for x in r.get("offsets", [])]

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None, isolation="read_uncommitted"):
        r = self._call({"op": "consume", "bootstrap": bootstrap, "topic": topic, "partitions": list(partitions),
                        "count": count, "start": start, "timeout_ms": int(timeout_s * 1000),
                        "max_fetch_bytes": max_fetch_bytes, "isolation": isolation}, timeout_s + 60)
        return [Rec.from_json(d) for d in r["records"]]

    def group_consume(self, bootstrap, topic, count, group, timeout_s=60.0, config=None) -> list[Rec]:
        """A member of ``group`` subscribed to ``topic`` from the beginning, committing what it read after every
        poll, until ``count`` distinct records or the timeout; commits and leaves. ``config``
        {"group.protocol": "consumer"} asks for a KIP-848 member where the client has one
        (``last_first_ms``: creation -> first record)."""
        r = self._call({"op": "group_consume", "bootstrap": bootstrap, "topic": topic, "count": count,
                        "group": group, "timeout_ms": int(timeout_s * 1000), "config": config or {}},
                       timeout_s + 60)
        self.last_first_ms = r.get("first_ms")
        return [Rec.from_json(d) for d in r["records"]]

    def txn_batches(self, bootstrap: str, topic: str, transactional_id: str,
                    batches: list[tuple[list[Rec], bool]], timeout_s: float = 60.0) -> None:
        """One transactional producer; each (records, commit) batch is one transaction, committed or aborted
        after its records are acknowledged (in the log)."""
        self._call({"op": "txn_batches", "bootstrap": bootstrap, "topic": topic,
                    "transactional_id": transactional_id, "timeout_ms": int(timeout_s * 1000),
                    "batches": [{"records": [x.to_json() for x in recs], "commit": commit}
                                for recs, commit in batches]}, timeout_s + 60)

    # -- admin -----------------------------------------------------------------------------------------------
    def metadata(self, bootstrap, topics=None):
        r = self._call({"op": "metadata", "bootstrap": bootstrap, "topics": list(topics) if topics else None})
        return {"brokers": [tuple(b) for b in r["brokers"]], "topics": r["topics"], "cluster_id": r.get("cluster_id")}

    def create_topic(self, bootstrap, topic, partitions, config=None):
        self._call({"op": "create_topic", "bootstrap": bootstrap, "topic": topic, "partitions": partitions,
                    "topic_config": config or {}})

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


_ALL_RECORDS = {"produce", "consume", "headers", "null_header", "timestamps", "null_key", "null_value", "binary"}
_ADMIN = {"metadata", "admin", "configs", "list_offsets", "offsets_by_time"}
_CODECS = {f"codec:{c}" for c in CODECS}


class _GoClient(_LineDriverClient):
    lang = "go"
    binary = Path(os.environ.get("KAFKALITE_GO_DRIVER", DEPS / "go-driver" / "kclients-go"))
    src_dir = HERE / "go"
    src_patterns = ("go.mod", "go.sum", "*.go")
    stage = "golang"

    def missing(self) -> str | None:
        if not which("go") and not self.binary.exists():
            return "go not on PATH and the driver is not built: run tools/bootstrap.sh golang"
        return super().missing()


class FranzGoClient(_GoClient):
    """franz-go v1.22.3: kgo + kadm; idempotent by default; transactions; KIP-848 (ServerSideBalancer)."""
    name = lib = "franz-go"
    features = frozenset({*_ALL_RECORDS, *_ADMIN, *_CODECS, "log_append_time", "idempotent", "group_consume",
                          "transactions", "kip848"})
    offset_after_last_timestamp = "end"   # kadm's ListOffsetsAfterMilli asks again for the end offset


class SaramaClient(_GoClient):
    """IBM/sarama v1.61.1 at its MaxVersion (Kafka 4.3.1): idempotent on request; transactions; classic
    groups only."""
    name = lib = "sarama"
    features = frozenset({*_ALL_RECORDS, *_ADMIN, *_CODECS, "log_append_time", "idempotent", "group_consume",
                          "transactions"})


class KafkaGoClient(_GoClient):
    """segmentio/kafka-go v0.4.51: no idempotent or transactional producer; classic groups only; reads empty
    bytes as null."""
    name = lib = "kafka-go"
    # its reader turns a zero-length bytes field into nil (read.go readNewBytes): empty reads back as null
    features = frozenset({*_ALL_RECORDS, *_ADMIN, *_CODECS, "group_consume", "empty_is_null"})


class _RustClient(_LineDriverClient):
    lang = "rust"
    binary = Path(os.environ.get("KAFKALITE_RUST_DRIVER", DEPS / "rust-driver" / "kclients-rust"))
    src_dir = HERE / "rust"
    src_patterns = ("Cargo.toml", "Cargo.lock", "src/*.rs")
    stage = "rust"


class RustRdkafkaClient(_RustClient):
    """The rdkafka crate 0.39.0 (librdkafka 2.12.1 bundled): everything librdkafka has."""
    name = "rust-rdkafka"
    lib = "rdkafka"
    features = frozenset({*_ALL_RECORDS, *_ADMIN, *_CODECS, "log_append_time", "idempotent", "group_consume",
                          "transactions", "kip848"})


class RskafkaClient(_RustClient):
    """rskafka 0.6.0: a partition client (produce, fetch, offsets) and a controller client (create/delete
    topics); headers are a map (unique names, sorted, no null values); no groups, idempotence, transactions,
    configs or partition growth."""
    name = lib = "rskafka"
    features = frozenset({"produce", "consume", "fixed_headers", "map_headers", "timestamps", "null_key", "null_value", "binary",
                          "admin", "list_offsets", "offsets_by_time", *_CODECS})
