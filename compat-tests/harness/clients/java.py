"""Java kafka-clients 3.9.1 driver: compat-tests/java/*.java compiled once (cache keyed by the sources' and
jars' hash) and run as one long-lived JVM per test session, spoken to in JSON lines."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.clients.base import CODECS, Client, ClientError, which
from harness.clients.jsonproc import JsonLineProcess
from harness.records import Rec

HERE = Path(__file__).resolve().parents[2]  # compat-tests/
REPO = HERE.parent
JAR_DIR = Path(os.environ.get("KAFKALITE_JAVA_JARS", REPO / ".deps" / "java"))
JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")
CACHE = Path(os.environ.get("KAFKALITE_COMPAT_CACHE", REPO / ".deps" / "compat-cache"))


JAR_DIR4 = Path(os.environ.get("KAFKALITE_JAVA4_JARS", REPO / ".deps" / "java4"))


def _classpath() -> list[Path]:
    return [JAR_DIR / j for j in JARS]


def _classpath4() -> list[Path]:
    """kafka-clients 4.4.0 and its runtime dependencies (tools/bootstrap.sh java4)."""
    return sorted(JAR_DIR4.glob("*.jar"))


def compile_driver(classpath: list[Path] | None = None, prefix: str = "java") -> Path:
    """javac the driver into a directory named after the hash of sources + jars; reuse it if present."""
    classpath = _classpath() if classpath is None else classpath
    sources = sorted((HERE / "java").glob("*.java"))
    h = hashlib.sha256()
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    for jar in classpath:
        st = jar.stat()
        h.update(f"{jar.name}:{st.st_size}".encode())
    out = CACHE / f"{prefix}-{h.hexdigest()[:16]}"
    if (out / "Driver.class").exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="java-build-", dir=CACHE))
    cp = os.pathsep.join(str(j) for j in classpath)
    p = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(tmp),
                        *map(str, sources)], capture_output=True, text=True)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ClientError(f"javac failed:\n{p.stdout}\n{p.stderr}")
    try:
        tmp.rename(out)
    except OSError:  # another session won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class JavaClient(Client):
    name = "java"
    features = frozenset({"produce", "consume", "headers", "null_header", "timestamps", "null_key", "null_value", "binary",
                          "idempotent", "metadata", "admin", "configs", "list_offsets", "offsets_by_time",
                          "transactions", "log_append_time", "group_consume", "kip848",
                          *(f"codec:{c}" for c in CODECS)})

    def classpath(self) -> list[Path]:
        return _classpath()

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._proc: JsonLineProcess | None = None

    def missing(self) -> str | None:
        if not which("java") or not which("javac"):
            return "java/javac not on PATH (need a JDK >= 11)"
        absent = [str(j) for j in self.classpath() if not j.exists()]
        if absent:
            return f"kafka-clients jars missing ({', '.join(absent)}): run tools/bootstrap.sh clients"
        return None

    def _call(self, cmd: dict, timeout: float = 120.0) -> dict:
        if self._proc is None:
            classes = compile_driver(self.classpath(), self.name)
            cp = os.pathsep.join([str(classes), *(str(j) for j in self.classpath())])
            self._proc = JsonLineProcess(["java", "-Xss4m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                          "-cp", cp, "Driver"], self.log_dir / f"{self.name}-driver.log")
        return self._proc.request(cmd, timeout)

    def close(self) -> None:
        if self._proc:
            self._proc.close()
            self._proc = None

    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        r = self._call({"op": "produce", "bootstrap": bootstrap, "topic": topic, "compression": compression,
                        "idempotent": idempotent, "acks": acks, "max_request_bytes": max_request_bytes,
                        "timeout_ms": int(timeout_s * 1000), "records": [x.to_json() for x in records]},
                       timeout_s + 60)
        return [tuple(x) for x in r["offsets"]]

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None, config=None, isolation=None):
        if isolation:
            config = {**(config or {}), "isolation.level": isolation}
        r = self._call({"op": "consume", "bootstrap": bootstrap, "topic": topic, "partitions": list(partitions),
                        "count": count, "start": start, "timeout_ms": int(timeout_s * 1000),
                        "max_fetch_bytes": max_fetch_bytes, "config": config}, timeout_s + 60)
        return [Rec.from_json(d) for d in r["records"]]

    def subscribe_consume(self, bootstrap, topic, count, group, timeout_s=60.0, commit=False) -> list[Rec]:
        """KafkaConsumer.subscribe in group ``group`` (the topic may not exist yet); ``commit``: commitSync
        after every poll that returned records."""
        r = self._call({"op": "subscribe_consume", "bootstrap": bootstrap, "topic": topic, "count": count,
                        "group": group, "timeout_ms": int(timeout_s * 1000), "commit": commit}, timeout_s + 60)
        return [Rec.from_json(d) for d in r["records"]]

    def group_consume(self, bootstrap, topic, count, group, timeout_s=60.0, config=None) -> list[Rec]:
        """subscribe_consume with a commitSync after every poll that returned records (``config`` e.g.
        {"group.protocol": "consumer"})."""
        r = self._call({"op": "subscribe_consume", "bootstrap": bootstrap, "topic": topic, "count": count,
                        "group": group, "timeout_ms": int(timeout_s * 1000), "commit": True,
                        "config": config or {}}, timeout_s + 60)
        return [Rec.from_json(d) for d in r["records"]]

    def txn_batches(self, bootstrap: str, topic: str, transactional_id: str,
                    batches: list[tuple[list[Rec], bool]], timeout_s: float = 60.0) -> None:
        """One KafkaProducer with ``transactional.id``: each (records, commit) batch is one transaction, its
        records sent (acknowledged) before commitTransaction / abortTransaction."""
        name = f"batches-{transactional_id}"
        opened = self.txn_open(bootstrap, name, transactional_id)
        try:
            if opened["exception"] is not None:
                raise ClientError(f"initTransactions: {opened}")
            for recs, commit in batches:
                for action, args in (("begin", {}),
                                     ("send", {"records": [{"topic": topic, "partition": r.partition,
                                                            "value": r.to_json()["value"]} for r in recs]}),
                                     ("commit" if commit else "abort", {})):
                    got = self.txn_step(name, action, **args)
                    if got["exception"] is not None:
                        raise ClientError(f"{action}: {got}")
        finally:
            self.txn_close(name)

    def metadata(self, bootstrap, topics=None):
        r = self._call({"op": "metadata", "bootstrap": bootstrap, "topics": list(topics) if topics else None})
        return {"brokers": [tuple(b) for b in r["brokers"]], "topics": r["topics"], "cluster_id": r["cluster_id"]}

    def create_topic(self, bootstrap, topic, partitions, config=None):
        self._call({"op": "create_topic", "bootstrap": bootstrap, "topic": topic, "partitions": partitions,
                    "topic_config": config or {}})

    def create_acl(self, bootstrap, resource_type, name, principal, operation, permission="ALLOW",
                   pattern_type="LITERAL"):
        """Admin.createAcls of one binding (enum names as Java spells them, e.g. "TOPIC", "WRITE")."""
        self._call({"op": "create_acl", "bootstrap": bootstrap, "resource_type": resource_type, "name": name,
                    "principal": principal, "operation": operation, "permission": permission,
                    "pattern_type": pattern_type})

    def describe_acls(self, bootstrap):
        return self._call({"op": "describe_acls", "bootstrap": bootstrap})["acls"]

    def alter_client_quota(self, bootstrap, entity, ops, validate_only=False):
        """Admin.alterClientQuotas: entity {"user"/"client-id": name or None (default)}, ops {key: value or
        None (remove)}."""
        self._call({"op": "alter_client_quota", "bootstrap": bootstrap, "entity": entity, "ops": ops,
                    "validate_only": validate_only})

    def describe_client_quotas(self, bootstrap):
        """Admin.describeClientQuotas(all): {"client-id=c,user=u": {key: value}}."""
        return self._call({"op": "describe_client_quotas", "bootstrap": bootstrap})["quotas"]

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

    # -- transactional producers (compat-tests/java/Txn.java), kept open by name between calls --------------
    def txn_open(self, bootstrap: str, name: str, transactional_id: str, config: dict | None = None) -> dict:
        """KafkaProducer with ``transactional.id`` + initTransactions(); the reply's "exception" is the
        client exception's simple class name (None on success)."""
        return self._call({"op": "txn_open", "bootstrap": bootstrap, "name": name,
                           "transactional_id": transactional_id, "config": config or {}})

    def txn_step(self, name: str, action: str, **args: object) -> dict:
        """action: begin | send (records=[{topic, partition, value(base64)}]) | commit | abort |
        send_offsets (group=, offsets=[[topic, partition, offset]])."""
        return self._call({"op": "txn_step", "name": name, "action": action, **args})

    def admin(self, bootstrap: str, action: str, **args: object) -> dict:
        """One Java Admin call of the admin surface (compat-tests/java/AdminOps.java); ``config={...}``: more
        Admin client settings (SASL, ...)."""
        return self._call({"op": "admin", "bootstrap": bootstrap, "action": action, **args})

    def txn_close(self, name: str) -> None:
        self._call({"op": "txn_close", "name": name})

    def txn_describe(self, bootstrap: str, ids: list[str]) -> dict:
        """Admin.describeTransactions(ids) -> {"described": {id: {state, producer_id, producer_epoch, timeout_ms,
        start_ms, partitions ["topic:p"]}}, "listed": {id: state}} (listed = Admin.listTransactions())."""
        return self._call({"op": "txn_describe", "bootstrap": bootstrap, "ids": ids})

    def txn_consume_transform_produce(self, bootstrap: str, transactional_id: str, group: str, src: str, dst: str,
                                      batch: int, total: int, abort_first: bool) -> dict:
        """A subscribed read_committed consumer + transactional producer (sendOffsetsToTransaction with the
        consumer's group metadata); -> {"processed", "commits", "aborts"}."""
        return self._call({"op": "txn_ctp", "bootstrap": bootstrap, "transactional_id": transactional_id,
                           "group": group, "src": src, "dst": dst, "batch": batch, "total": total,
                           "abort_first": abort_first}, 120)


class Java4Client(JavaClient):
    """The same driver sources compiled against kafka-clients 4.4.0 (``tools/bootstrap.sh java4``): Kafka 4's
    client, which refuses brokers older than 2.1 (Produce v3+, Fetch v4+ ...) and speaks KIP-848 groups
    (``group.protocol=consumer``) as a released feature."""

    name = "java4"

    def classpath(self) -> list[Path]:
        return _classpath4()

    def missing(self) -> str | None:
        if not which("java") or not which("javac"):
            return "java/javac not on PATH (need a JDK >= 11)"
        if not any(j.name.startswith("kafka-clients-4.") for j in self.classpath()):
            return f"kafka-clients 4.4 jars missing in {JAR_DIR4}: run tools/bootstrap.sh java4"
        return None
