"""Apache Kafka itself as the reference broker: a one-node KRaft broker+controller on loopback.

``tools/bootstrap.sh reference`` puts Kafka's jars and their runtime dependencies in ``.deps/kafka-4.4/libs``
(another release: ``KAFKALITE_REFERENCE_KAFKA=4.3.1`` for both, e.g. to capture its tables with
``tools/capture_kafka.py``).
This module turns a compat test's broker request (data dir, kafkalite command-line arguments) into what Kafka
needs:

1. a ``server.properties`` (written next to the data dir) for ``process.roles=broker,controller`` with a
   PLAINTEXT listener on a free loopback port, a CONTROLLER listener on another, and kafkalite's defaults where
   they differ from Kafka's (replication factors 1 for the internal topics; ``group.initial.rebalance.delay.ms``
   0), then the test's ``--override key=value`` settings;
2. ``kafka.tools.StorageTool format --standalone`` once per data dir (a fresh cluster id each time: a new broker
   object is a new cluster, a restart keeps its data), with ``controller.quorum.bootstrap.servers``: the
   quickstart's dynamic quorum (KIP-853), so ``kraft.version`` is finalized at 1 as kafkalite reports it;
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
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the release (``KAFKALITE_REFERENCE_KAFKA``, default 4.4.0; ``tools/bootstrap.sh reference`` fetches the same one)
KAFKA_VERSION = os.environ.get("KAFKALITE_REFERENCE_KAFKA", "4.4.0")
KAFKA_HOME = REPO / ".deps" / f"kafka-{KAFKA_VERSION.rsplit('.', 1)[0]}"
LIBS = KAFKA_HOME / "libs"
READY_MARK = b"Kafka Server started"
HEAP = os.environ.get("KAFKALITE_REFERENCE_HEAP", "512m")
#: more of Kafka's logging for a look into one run: ``logger=level`` pairs, comma-separated, e.g.
#: ``KAFKALITE_REFERENCE_LOG=kafka.server.ReplicaFetcherThread=debug,kafka.cluster.Partition=info``
EXTRA_LOG = [kv.strip().split("=", 1) for kv in os.environ.get("KAFKALITE_REFERENCE_LOG", "").split(",") if "=" in kv]
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
        if a == "--config":   # a server.properties of Kafka's keys (listeners, SASL, TLS): taken as it is
            props.update(read_properties(Path(next(it, ""))))
            continue
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


def java_command(main: str, *args: str, heap: str = HEAP) -> list[str]:
    """``java ... MAIN ARGS`` on Kafka's classpath (the broker ``kafka.Kafka``, or one of its tools)."""
    java = _java() or "java"
    return [java, f"-Xmx{heap}", "-Xms128m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
            # WARN and above, plus the broker's start/stop lines (INFO writes ~4 lines per partition created)
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
            "-Dorg.slf4j.simpleLogger.log.kafka.server.BrokerServer=info",
            "-Dorg.slf4j.simpleLogger.log.kafka.server.ControllerServer=info",
            # "Beginning re-authentication" (KIP-368; test_security's re-authentication cycle looks for it)
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.security.authenticator."
            "SaslServerAuthenticator=debug",
            *(f"-Dorg.slf4j.simpleLogger.log.{name.strip()}={level.strip()}" for name, level in EXTRA_LOG),
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-cp", str(LIBS / "*"), main, *args]


class ReferenceConfig:
    """The files and commands of one reference broker over one data dir (its successors after restarts).

    One node by default (node id 1, its own one-voter quorum); a node of a :class:`ReferenceCluster` gets its
    node id, the cluster's voters and cluster id, and optionally a SASL_PLAINTEXT listener (SCRAM-SHA-256/512)
    whose users are created when the data dir is formatted (``kafka-storage format --add-scram``).

    With ``tls`` (the files of ``kafkalite certs``, :func:`kafkalite.cli.certs.write_certs`: ``broker.pem`` = the
    broker's PKCS#8 key, its certificate and the CA; ``ca.pem``) the node also has an SSL listener on
    ``ssl_port`` and, with SASL, a SASL_SSL one on ``sasl_ssl_port`` (the same SCRAM mechanisms), both with PEM
    key and trust stores (Kafka's default store type is JKS, kafkalite's PEM: written out), no client
    certificate asked for."""

    def __init__(self, data_dir: Path, port: int, controller_port: int, overrides: dict[str, str], *,
                 node_id: int = 1, voters: str | None = None, sasl_port: int | None = None,
                 cluster: str | None = None, scram_users: dict[str, str] | None = None,
                 base: dict[str, str] | None = None, heap: str = HEAP, tls: dict[str, Path] | None = None,
                 ssl_port: int | None = None, sasl_ssl_port: int | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.heap = heap
        self.port = port
        self.controller_port = controller_port
        self.overrides = dict(overrides)
        self.node_id = node_id
        self.voters = voters or f"{node_id}@127.0.0.1:{controller_port}"
        #: one node on its own: a dynamic quorum formatted --standalone, as Kafka 4.x's quick start does
        #: (kraft.version 1, DescribeQuorum's nodes); a cluster's nodes share a static voter set
        self.standalone = voters is None and cluster is None
        self.sasl_port = sasl_port
        self.cluster = cluster
        self.scram_users = dict(scram_users or {})
        self.base = BASE_PROPERTIES if base is None else base
        self.props_path = self.data_dir.parent / f"{self.data_dir.name}-server.properties"
        self.tls = dict(tls) if tls else None
        self.ssl_port = ssl_port if tls else None
        self.sasl_ssl_port = sasl_ssl_port if tls else None

    def properties(self) -> dict[str, str]:
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"]
        protocols = ["PLAINTEXT:PLAINTEXT"]
        if self.sasl_port:
            listeners.append(f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}")
            protocols.append("SASL_PLAINTEXT:SASL_PLAINTEXT")
        if self.ssl_port:
            listeners.append(f"SSL://127.0.0.1:{self.ssl_port}")
            protocols.append("SSL:SSL")
        if self.sasl_ssl_port:
            listeners.append(f"SASL_SSL://127.0.0.1:{self.sasl_ssl_port}")
            protocols.append("SASL_SSL:SASL_SSL")
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            **({"controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}"} if self.standalone
               else {"controller.quorum.voters": self.voters}),
            "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{self.controller_port}"]),
            "advertised.listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join([*protocols, "CONTROLLER:PLAINTEXT"]),
            "log.dirs": str(self.data_dir),
            **self.base,
        }
        sasl_listeners = [n for n, port in (("sasl_plaintext", self.sasl_port), ("sasl_ssl", self.sasl_ssl_port))
                          if port]
        if sasl_listeners:
            props["sasl.enabled.mechanisms"] = "SCRAM-SHA-256,SCRAM-SHA-512"
            for name in sasl_listeners:
                for mech in ("scram-sha-256", "scram-sha-512"):
                    props[f"listener.name.{name}.{mech}.sasl.jaas.config"] = \
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        if self.tls:
            props.update(tls_properties(self.tls))
        props.update(self.overrides)
        if self.cluster is not None:   # a ReferenceCluster's node: its listeners are the cluster's
            return props
        return with_test_listeners(props, self.overrides, self.controller_port, self._internal_port())

    def _internal_port(self) -> int:
        """The INTERNAL listener's port (see :func:`with_test_listeners`), picked once per config."""
        if getattr(self, "_iport", None) is None:
            self._iport = _free_port()
        return self._iport

    def client_port(self) -> int:
        """The port clients bootstrap from: the PLAINTEXT listener's, else the test's first listener's."""
        return client_port(self.properties()) or self.port

    def write(self) -> None:
        lines = ["# generated by compat-tests/harness/reference.py"]
        lines += [f"{k}={v}" for k, v in self.properties().items()]
        self.props_path.write_text("\n".join(lines) + "\n")

    def java_command(self, main: str, *args: str) -> list[str]:
        return java_command(main, *args, heap=self.heap)

    def formatted(self) -> bool:
        return (self.data_dir / "meta.properties").exists()

    def format(self, log: Path) -> None:
        """``kafka-storage format`` for a fresh data dir (kafka.tools.StorageTool)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        scram = [arg for user, password in self.scram_users.items() for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                 for arg in ("--add-scram", f"{mech}=[name={user},password={password}]")]
        cmd = self.java_command("kafka.tools.StorageTool", "format", f"--cluster-id={self.cluster or cluster_id()}",
                                *(["--standalone"] if self.standalone else []), "-c", str(self.props_path), *scram)
        with open(log, "ab") as out:
            out.write(f"\n===== compat harness: format: {' '.join(cmd)}\n".encode())
            out.flush()
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=str(REPO), timeout=120).returncode
        if rc != 0:
            raise RuntimeError(f"kafka-storage format exited with {rc} (see {log})")

    def broker_command(self) -> list[str]:
        return self.java_command("kafka.Kafka", str(self.props_path))


def tls_properties(certs: dict[str, Path]) -> dict[str, str]:
    """A broker's key and trust stores from ``kafkalite certs`` files, as PEM stores (Kafka reads an unencrypted
    PKCS#8 key with no ``ssl.key.password``)."""
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["broker.pem"]),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca.pem"])}


# A cluster keeps Kafka's own replication of the internal topics (3 replicas, min ISR 2), with fewer partitions
# than Kafka's 50 (each is 3 replicas to create on 2 shared cores); the rest as for one node.
CLUSTER_PROPERTIES: dict[str, str] = {
    **BASE_PROPERTIES,
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "10",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "10",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "num.io.threads": "2",
    "num.network.threads": "1",
}
CLUSTER_HEAP = os.environ.get("KAFKALITE_REFERENCE_CLUSTER_HEAP", "384m")
# Kafka's StandardAuthorizer, with the PLAINTEXT listener's ANONYMOUS (brokers and controllers among themselves,
# and the tests' own admin) and the SASL admin as super users; no ACL on a resource = allowed, as without one
AUTHORIZER: dict[str, str] = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    "allow.everyone.if.no.acl.found": "true",
}


class ReferenceCluster:
    """A KRaft cluster of ``nodes`` combined broker+controller nodes of Apache Kafka on loopback: one static
    quorum of all of them (``controller.quorum.voters``), one cluster id, a PLAINTEXT listener per node and,
    with ``sasl_users``, a SASL_PLAINTEXT one (SCRAM-SHA-256/512) whose users exist from the start (the
    ``admin`` user of :data:`AUTHORIZER` among them); with ``tls``, an SSL listener per node and (with
    ``sasl_users``) a SASL_SSL one, on certificates ``kafkalite certs`` writes into ``base_dir/certs``
    (:attr:`certs`: ``ca.pem`` is what clients trust). Each node is a harness ``BrokerProcess`` (bounded heap,
    its log file, SIGKILL if pytest dies); :meth:`start` launches all, then waits for each one's ``Kafka Server
    started``; :meth:`stop` stops them together (SIGTERM: controlled shutdown, SIGKILL after a bound) and
    writes each start and stop in the nodes' logs."""

    def __init__(self, base_dir: Path, nodes: int = 3, *, sasl_users: dict[str, str] | None = None,
                 overrides: dict[str, str] | None = None, heap: str = CLUSTER_HEAP, tls: bool = False) -> None:
        from harness.broker import BrokerProcess, _free_port  # broker.py imports this module at its top

        self.base_dir = Path(base_dir)
        self.certs: dict[str, Path] | None = None
        if tls:
            from kafkalite.cli.certs import write_certs

            self.certs = write_certs(self.base_dir / "certs")
        ports = [(_free_port(), _free_port(), _free_port() if sasl_users else None,
                  _free_port() if tls else None, _free_port() if tls and sasl_users else None)
                 for _ in range(nodes)]
        voters = ",".join(f"{i + 1}@127.0.0.1:{c}" for i, (_p, c, *_rest) in enumerate(ports))
        cid = cluster_id()
        self.nodes: list[BrokerProcess] = []
        for i, (port, cport, sport, tport, stport) in enumerate(ports):
            ref = ReferenceConfig(self.base_dir / f"node{i + 1}", port, cport, dict(overrides or {}),
                                  node_id=i + 1, voters=voters, sasl_port=sport, cluster=cid,
                                  scram_users=sasl_users, base=CLUSTER_PROPERTIES, heap=heap, tls=self.certs,
                                  ssl_port=tport, sasl_ssl_port=stport)
            b = BrokerProcess(ref.data_dir, self.base_dir / f"node{i + 1}.log", kind="kafka", reference_config=ref)
            b.port = port
            self.nodes.append(b)
        self.cluster_id = cid
        self.sasl_ports = [p[2] for p in ports if p[2]]
        self.ssl_ports = [p[3] for p in ports if p[3]]
        self.sasl_ssl_ports = [p[4] for p in ports if p[4]]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def sasl_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.sasl_ports)

    @property
    def ssl_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ssl_ports)

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.sasl_ssl_ports)

    def start(self) -> str:
        try:
            for n in self.nodes:
                n.launch()
            for n in self.nodes:
                n.wait_ready()
        except BaseException:
            self.kill()
            raise
        return self.bootstrap

    def stop(self, timeout: float = 60.0) -> list[int | None]:
        """SIGTERM every node at once (one alone would wait for the others' quorum), then wait for each; a node
        still running after ``timeout`` is SIGKILLed. The exit statuses (0 for a clean controlled shutdown)."""
        import signal
        import subprocess

        procs = [(n, n.proc) for n in self.nodes]
        for _n, proc in procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        codes: list[int | None] = []
        for n, proc in procs:
            n.proc = None
            if proc is None:
                codes.append(None)
                continue
            try:
                rc: int | None = proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
                rc = None
            code = 0 if rc == 128 + signal.SIGTERM else rc
            n.last_exit = code
            with open(n.log_path, "ab") as log:
                log.write(f"\n===== compat harness: cluster stopped (SIGTERM): exit "
                          f"{code if rc is not None else 'none: SIGKILL after ' + str(timeout) + ' s'}\n".encode())
            codes.append(code)
        return codes

    def kill(self) -> None:
        for n in self.nodes:
            n.kill()

    def log_tail(self, max_bytes: int = 4000) -> str:
        return "\n".join(f"--- node {i + 1}\n{n.log_tail(max_bytes)}" for i, n in enumerate(self.nodes))

# -- a test's own listeners and an authorizer ------------------------------------------------------------------
# A test that names its listeners (SSL, SASL_PLAINTEXT, ...: ``--config FILE`` or ``--override listeners=``) or
# turns on an authorizer gets two more listeners of the harness's: CONTROLLER (the KRaft quorum) and INTERNAL
# (inter-broker: the node's own WriteTxnMarkers and the like). Both are SASL_PLAINTEXT with PLAIN and a principal of
# their own, User:kafkalite-reference, which is added to super.users: Kafka authorizes the broker's requests to its
# controller (BrokerRegistration, heartbeats: CLUSTER_ACTION) and to itself, and before the StandardAuthorizer has
# loaded its ACLs it serves only super users on those early-start listeners. The test's listeners and principals
# stay as the test wrote them (User:ANONYMOUS on its PLAINTEXT listener is no super user unless it says so).
INTERNAL_USER, INTERNAL_PASSWORD = "kafkalite-reference", "kafkalite-reference-secret"
_INTERNAL_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                  f'username="{INTERNAL_USER}" password="{INTERNAL_PASSWORD}" '
                  f'user_{INTERNAL_USER}="{INTERNAL_PASSWORD}";')


def read_properties(path: Path) -> dict[str, str]:
    """``key=value`` lines of a server.properties (``#`` comments and blank lines skipped)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def _free_port() -> int:
    from harness.broker import (
        _free_port as free,  # one set of handed-out ports (broker.py imports this module)
    )

    return free()


def _listeners(value: str) -> list[tuple[str, str]]:
    """``NAME://host:port,...`` -> [(NAME, host:port)]."""
    return [(x.split("://", 1)[0].strip().upper(), x.split("://", 1)[1].strip()) for x in value.split(",") if "://" in x]


def client_port(props: dict[str, str]) -> int | None:
    ls = [(n, a) for n, a in _listeners(props.get("advertised.listeners") or props.get("listeners", ""))
          if n not in ("CONTROLLER", "INTERNAL")]
    if not ls:
        return None
    _name, addr = next(((n, a) for n, a in ls if n == "PLAINTEXT"), ls[0])
    return int(addr.rsplit(":", 1)[1])


def with_test_listeners(props: dict[str, str], overrides: dict[str, str], controller_port: int,
                        internal_port: int) -> dict[str, str]:
    """``props`` with the CONTROLLER and INTERNAL listeners added when the test names listeners of its own or an
    authorizer (see above); unchanged otherwise."""
    own = "listeners" in overrides
    authz = bool(props.get("authorizer.class.name"))
    if not own and not authz:
        return props
    out = dict(props)
    test = [(n, a) for n, a in _listeners(out["listeners"]) if n not in ("CONTROLLER", "INTERNAL")]
    pmap = dict(x.split(":", 1) for x in out.get("listener.security.protocol.map", "").split(",") if ":" in x)
    if own and "listener.security.protocol.map" not in overrides:
        pmap = {}
    for n, _a in test:   # Kafka's default map names the protocols themselves
        pmap.setdefault(n, n)
    pmap.update(CONTROLLER="SASL_PLAINTEXT", INTERNAL="SASL_PLAINTEXT")
    out["listeners"] = ",".join([*(f"{n}://{a}" for n, a in test), f"INTERNAL://127.0.0.1:{internal_port}",
                                 f"CONTROLLER://127.0.0.1:{controller_port}"])
    if own and "advertised.listeners" not in overrides:
        out["advertised.listeners"] = ",".join(f"{n}://{a}" for n, a in test)
    if "INTERNAL://" not in out.get("advertised.listeners", ""):
        out["advertised.listeners"] = ",".join(
            [x for x in out.get("advertised.listeners", "").split(",") if x]
            + [f"INTERNAL://127.0.0.1:{internal_port}"])
    out["listener.security.protocol.map"] = ",".join(f"{k}:{v}" for k, v in pmap.items())
    out["inter.broker.listener.name"] = "INTERNAL"
    out["sasl.mechanism.inter.broker.protocol"] = "PLAIN"
    out["sasl.mechanism.controller.protocol"] = "PLAIN"
    for lst in ("internal", "controller"):
        out[f"listener.name.{lst}.sasl.enabled.mechanisms"] = "PLAIN"
        out[f"listener.name.{lst}.plain.sasl.jaas.config"] = _INTERNAL_JAAS
    if authz:
        users = [u for u in out.get("super.users", "").split(";") if u.strip()]
        out["super.users"] = ";".join([*users, f"User:{INTERNAL_USER}"])
    return out
