"""Apache Kafka itself as the reference broker: a one-node KRaft broker+controller on loopback.

``tools/bootstrap.sh reference`` puts Kafka's jars and their runtime dependencies in ``.deps/kafka-4.4/libs``.
This module turns a compat test's broker request (data dir, kafkalite command-line arguments) into what Kafka
needs:

1. a ``server.properties`` (written next to the data dir) for ``process.roles=broker,controller`` with a
   PLAINTEXT listener on a free loopback port, a CONTROLLER listener on another, and kafkalite's defaults where
   they differ from Kafka's (replication factors 1 for the internal topics; ``group.initial.rebalance.delay.ms``
   0), then the test's ``--override key=value`` settings;
2. ``kafka.tools.StorageTool format`` once per data dir (a fresh cluster id each time: a new broker object is a
   new cluster, a restart keeps its data);
3. the broker command ``java ... kafka.Kafka server.properties`` with a bounded heap.

Kafka's readiness line is ``Kafka Server started`` (slf4j-simple writes it to stderr, which the harness puts in
the broker log). A SIGTERM-ed JVM exits with 143 after its shutdown hook completed the controlled shutdown; the
harness reports that as 0, the clean exit kafkalite gives.

Arguments that only kafkalite has (``--control``, ``--emulate-kafka`` of an older release, fault injection,
kafkalite.* settings) raise :class:`ReferenceUnsupported`: such a test must be marked ``kafkalite_only`` with its
reason, never silently run against something else.
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KAFKA_VERSION = "4.4.0"
KAFKA_HOME = REPO / ".deps" / f"kafka-{KAFKA_VERSION.rsplit('.', 1)[0]}"
LIBS = KAFKA_HOME / "libs"
READY_MARK = b"Kafka Server started"
HEAP = os.environ.get("KAFKALITE_REFERENCE_HEAP", "512m")
# Emulation profiles a Kafka 4.4 broker stands in for: it serves a superset of what kafkalite's 4.x profiles
# advertise. Older profiles (2.8, 3.x) advertise less on purpose and are kafkalite-only.
COMPATIBLE_EMULATION = {"4.0", "4.1", "4.2", "4.3", "4.4"}

# kafkalite's defaults that differ from Kafka's, or that a one-node Kafka cannot keep (RF 3 internal topics)
BASE_PROPERTIES: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # a one-node cluster on 2 shared cores: fewer request threads than Kafka's 3 network + 8 I/O
    "num.network.threads": "2",
    "num.io.threads": "4",
}
# (num.partitions=1, auto.create.topics.enable=true and the rest are Kafka's defaults and kafkalite's alike: not
# written, so DescribeConfigs reports them as DEFAULT_CONFIG on both brokers.)


class ReferenceUnsupported(RuntimeError):
    """The test asked for something only kafkalite has; mark it ``kafkalite_only``."""


def missing() -> str | None:
    """Why the reference broker cannot run here, or None."""
    if not (LIBS / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
        return f"Apache Kafka {KAFKA_VERSION} jars not in {LIBS} (run tools/bootstrap.sh reference)"
    if not _java():
        return "no java on PATH (Kafka 4.x needs Java 17+)"
    return None


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    from shutil import which

    return which("java")


def translate_args(args: list[str], emulate: str | None) -> dict[str, str]:
    """kafkalite ``serve`` arguments -> server.properties entries (only ``--override k=v`` has a meaning)."""
    if emulate and emulate not in COMPATIBLE_EMULATION:
        raise ReferenceUnsupported(f"--emulate-kafka {emulate}: Kafka {KAFKA_VERSION} is not that release")
    props: dict[str, str] = {}
    it = iter(args)
    for a in it:
        if a == "--override":
            kv = next(it, "")
        elif a.startswith("--override="):
            kv = a.split("=", 1)[1]
        else:
            raise ReferenceUnsupported(f"kafkalite-only argument {a!r}")
        key, _, value = kv.partition("=")
        if key.startswith("kafkalite."):
            raise ReferenceUnsupported(f"kafkalite-only setting {key}")
        props[key] = value
    return props


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 characters). Never one that starts
    with '-' (Kafka's Uuid.randomUuid draws again for the same reason: a command line would read it as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class ReferenceConfig:
    """The files and commands of one reference broker over one data dir (its successors after restarts)."""

    def __init__(self, data_dir: Path, port: int, controller_port: int, overrides: dict[str, str]) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        self.controller_port = controller_port
        self.overrides = dict(overrides)
        self.props_path = self.data_dir.parent / f"{self.data_dir.name}-server.properties"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **BASE_PROPERTIES,
        }
        props.update(self.overrides)
        return props

    def write(self) -> None:
        lines = ["# generated by compat-tests/harness/reference.py"]
        lines += [f"{k}={v}" for k, v in self.properties().items()]
        self.props_path.write_text("\n".join(lines) + "\n")

    def java_command(self, main: str, *args: str) -> list[str]:
        java = _java() or "java"
        return [java, f"-Xmx{HEAP}", "-Xms128m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
                # WARN and above, plus the broker's start/stop lines (INFO writes ~4 lines per partition created)
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
                "-Dorg.slf4j.simpleLogger.log.kafka.server.BrokerServer=info",
                "-Dorg.slf4j.simpleLogger.log.kafka.server.ControllerServer=info",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-cp", str(LIBS / "*"), main, *args]

    def formatted(self) -> bool:
        return (self.data_dir / "meta.properties").exists()

    def format(self, log: Path) -> None:
        """``kafka-storage format`` for a fresh data dir (kafka.tools.StorageTool)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.java_command("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id()}",
                                "-c", str(self.props_path))
        with open(log, "ab") as out:
            out.write(f"\n===== compat harness: format: {' '.join(cmd)}\n".encode())
            out.flush()
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=str(REPO), timeout=120).returncode
        if rc != 0:
            raise RuntimeError(f"kafka-storage format exited with {rc} (see {log})")

    def broker_command(self) -> list[str]:
        return self.java_command("kafka.Kafka", str(self.props_path))
