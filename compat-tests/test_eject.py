"""``kafkalite eject``: a stopped kafkalite data directory becomes one Apache Kafka 4.4 starts on, and real clients
cannot tell the difference.

The module's kafkalite broker (a PLAINTEXT and a SASL_PLAINTEXT listener, Kafka's StandardAuthorizer, log cleaner
and retention checks every 200 ms) gets:

- ``plain``: 3 partitions, keys, headers (one with a null value), explicit CreateTime timestamps, a null key;
- ``compacted``: cleanup.policy=compact, updates and tombstones over 10 keys, rolled every 100 ms, until the
  cleaner has left offset gaps (the tombstones stay: delete.retention.ms is a day);
- ``txn``: a committed, an aborted and a committed transaction (confluent-kafka's transactional producer);
- ``trimmed``: records stamped two hours ago, then current ones, retention.ms one hour: retention has moved the
  log start offset before the eject;
- ``secret``: readable by ``User:*``, denied to ``User:bob`` (a literal DENY), plus a prefixed group ACL;
- ``shared``: a share group (confluent-kafka's ShareConsumer; kafkalite emulating Kafka 4.3) that accepted the
  first 10 of 30 records;
- SCRAM users alice (SHA-256, 4096 iterations) and bob (SHA-512, 8192); alice's delegation token (renewer bob);
  client quotas; dynamic broker configs (cluster default and node 1); a group config;
- four consumer groups with offsets committed at known positions of ``plain``: two of the classic protocol and
  two of the consumer protocol (KIP-848), half to be resumed by confluent-kafka, half by the Java client.

Then kafkalite stops (SIGTERM), ``kafkalite eject DATA --to NEW --config <kafkalite's server.properties>`` writes
the copy, and Kafka 4.4 (``.deps/kafka-4.4``) starts on ``NEW/server.properties``. Checked against Kafka: every
record of every topic at the same offset with the same key, value, headers, timestamp and timestamp type (gaps,
tombstones, transaction markers and the trimmed log start included); read_committed readers (confluent-kafka and
Java) see no aborted record; each group resumes exactly after its committed offsets (the four combinations of
client and protocol); the share group gets exactly the records it had not acknowledged; ``kafka-topics
--describe`` shows the same topic ids and configs; alice logs in with her old password (and not with a wrong
one), and with her token (its HMAC unchanged: the same delegation.token.secret.key); bob is still denied; the ACLs, quotas and dynamic configs are Kafka's now;
a new idempotent producer gets an id above every id kafkalite handed out; and ``kafka-dump-log
--cluster-metadata-decoder`` reads the metadata snapshot cleanly.
"""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from harness import reference
from harness.broker import REPO, BrokerProcess, _die_with_parent, _free_port
from harness.clients.java import JavaClient
from harness.security import Sec, java_conf, roundtrip

from kafkalite.tests.support.requires import missing, require

require("confluent_kafka")   # a loud skip, or a failure under CI=true
import confluent_kafka as ck  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

KAFKALITE_ONLY = ("ejects a kafkalite data directory into Apache Kafka 4.4: the source broker is kafkalite by "
                  "definition (the target already is the reference broker)")

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
USERS = {"alice": ("SCRAM-SHA-256", "alice-pw", 4096), "bob": ("SCRAM-SHA-512", "bob-pw", 8192)}
TOKEN_SECRET = "eject-token-secret"
# an hour ago, whole seconds: within every retention (both brokers delete an expired active segment)
T0 = (int(time.time()) - 3600) * 1000
# committed offsets per group and partition of ``plain`` (40 records in each partition)
GROUPS = {
    "eject-cc-classic": ("confluent-kafka", "classic", {0: 5, 1: 17, 2: 40}),
    "eject-cc-consumer": ("confluent-kafka", "consumer", {0: 12, 1: 0, 2: 33}),
    "eject-java-classic": ("java", "classic", {0: 39, 1: 20, 2: 1}),
    "eject-java-consumer": ("java", "consumer", {0: 7, 1: 28, 2: 15}),
}
TOPICS = ("plain", "compacted", "txn", "trimmed", "secret", "shared")
SHARE_GROUP, SHARE_ACKED = "eject-share", 10

Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int, int]


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


class _PropsBroker(BrokerProcess):
    """kafkalite started from a server.properties naming its listeners (no --listen)."""

    def __init__(self, base: Path, properties: Path) -> None:
        super().__init__(base / "data", base / "kafkalite.log", kind="kafkalite")
        self.properties = properties

    def _command(self) -> list[str]:
        cmd = super()._command()
        i = cmd.index("--listen")
        return [*cmd[:i], *cmd[i + 2:], "--config", str(self.properties)]


class KafkaOnDir:
    """Apache Kafka 4.4 started on a server.properties (``kafka.Kafka``), as the ejected directory's user would."""

    def __init__(self, properties: Path, log: Path) -> None:
        self.properties, self.log = properties, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(reference.java_command("kafka.Kafka", str(self.properties)), stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(REPO),
                                         start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 120
        while reference.READY_MARK not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError("Kafka did not start on the ejected directory:\n"
                                     + self.log.read_bytes()[-6000:].decode("utf-8", "replace"))
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


@dataclass
class Ejected:
    plain_bs: str                   # the PLAINTEXT listener (kafkalite's, then Kafka's: the same address)
    sasl_bs: str
    data_dir: Path
    new_dir: Path
    report: str                     # eject's stdout
    before: dict[str, list[Row]]    # every topic as kafkalite served it (read_uncommitted)
    before_committed: list[Row]     # txn, read_committed
    watermarks: dict[tuple[str, int], tuple[int, int]]
    acls: set[tuple[Any, ...]]
    java: JavaClient
    kafka_log: Path
    extra: dict[str, Any] = field(default_factory=dict)


# -- reading ---------------------------------------------------------------------------------------------------
def read_all(bs: str, topic: str, partitions: int, isolation: str = "read_uncommitted",
             conf: dict[str, Any] | None = None) -> list[Row]:
    """Every record of ``topic`` from the log start to the end (as far as ``isolation`` lets it read)."""
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "eject-reader", "enable.auto.commit": False,
                     "isolation.level": isolation, **(conf or {})})
    try:
        ends = {}
        for p in range(partitions):
            _lo, hi = c.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=20)
            ends[p] = hi
        c.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
        rows: list[Row] = []
        done: set[int] = {p for p, hi in ends.items() if hi == 0}
        deadline = time.monotonic() + 60
        idle = 0
        while len(done) < partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                idle += 1
                if idle > 6:     # read_committed ends below the high watermark (markers, aborted records)
                    break
                continue
            idle = 0
            if m.error():
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    done.add(m.partition())
                    continue
                raise AssertionError(m.error())
            ts_type, ts = m.timestamp()
            rows.append((m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()), ts, ts_type))
            if m.offset() + 1 >= ends[m.partition()]:
                done.add(m.partition())
        return sorted(rows)
    finally:
        c.close()


def watermarks(bs: str, topic: str, partitions: int) -> dict[tuple[str, int], tuple[int, int]]:
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "eject-wm"})
    try:
        return {(topic, p): c.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=20) for p in range(partitions)}
    finally:
        c.close()


def acl_set(admin: AdminClient) -> set[tuple[Any, ...]]:
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    return {(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type)
            for b in admin.describe_acls(flt, request_timeout=20).result(30)}


def sasl(bs: str, user: str, password: str | None = None) -> dict[str, Any]:
    mech, pw, _it = USERS[user]
    return {"bootstrap.servers": bs, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mech,
            "sasl.username": user, "sasl.password": pw if password is None else password}


def kafkalite_tool(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "kafkalite", *args], capture_output=True, text=True, timeout=120,
                       cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0, f"kafkalite {' '.join(args)}: {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


# -- the source broker's contents ----------------------------------------------------------------------------------
def produce_plain(bs: str) -> None:
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for part in range(3):
        for i in range(40):
            key = None if (part, i) == (1, 3) else f"k{part}-{i}".encode()
            p.produce("plain", value=f"v{part}-{i}".encode(), key=key, partition=part, timestamp=T0 + i * 1000,
                      headers=[("n", str(i).encode()), ("empty", None)])
    assert p.flush(30) == 0


def produce_compacted(bs: str, data_dir: Path) -> None:
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for rnd in range(6):
        for k in range(10):
            value = None if (rnd == 4 and k in (0, 1)) else f"r{rnd}-{k}".encode()   # tombstones for k0, k1
            if rnd == 5 and k in (0, 1):
                continue
            p.produce("compacted", key=f"key{k}".encode(), value=value)
        assert p.flush(30) == 0
        time.sleep(0.15)          # segment.ms=100: the next append rolls a new segment

    def cleaned() -> bool:
        rows = read_all(bs, "compacted", 1)
        offsets = [r[1] for r in rows]
        return bool(offsets) and len(offsets) < offsets[-1] + 1      # gaps: the cleaner ran
    # the last segment is the active one; one more record rolls it so the cleaner may take it
    p.produce("compacted", key=b"filler", value=b"f")
    assert p.flush(30) == 0
    wait_for(cleaned, "the log cleaner to compact 'compacted'")


def produce_txn(bs: str) -> None:
    p = ck.Producer({"bootstrap.servers": bs, "transactional.id": "eject-txn", "linger.ms": 0})
    p.init_transactions(30)
    for outcome in ("c1", "a", "c2"):
        p.begin_transaction()
        for i in range(5):
            p.produce("txn", value=f"{outcome}-{i}".encode(), key=b"t")
        assert p.flush(30) == 0      # librdkafka's abort drops what it has not sent yet: send it first
        if outcome == "a":
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)


def produce_trimmed(bs: str) -> None:
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    old = int(time.time() * 1000) - 2 * 3600_000
    for i in range(20):
        p.produce("trimmed", value=f"old-{i}".encode(), timestamp=old + i)
        if i % 5 == 4:
            assert p.flush(30) == 0
            time.sleep(0.15)      # separate segments
    for i in range(10):
        p.produce("trimmed", value=f"new-{i}".encode())
    assert p.flush(30) == 0
    # every segment of old records goes (Kafka, applying the same retention.ms, then has nothing more to delete)
    wait_for(lambda: watermarks(bs, "trimmed", 1)[("trimmed", 0)][0] == 20, "retention to trim 'trimmed'")


def commit_groups(bs: str) -> None:
    for group, (_client, protocol, offsets) in GROUPS.items():
        conf = {"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "group.protocol": protocol}
        if protocol == "classic":
            conf["session.timeout.ms"] = 10000
        c = ck.Consumer(conf)
        try:
            c.subscribe(["plain"])
            wait_for(lambda c=c: (c.poll(0.2), len(c.assignment()) == 3)[1], f"{group}'s assignment")
            c.commit(offsets=[ck.TopicPartition("plain", p, o) for p, o in offsets.items()], asynchronous=False)
        finally:
            c.close()


def share_consume(bs: str, limit: int, timeout: float) -> list[int]:
    """A share consumer (confluent-kafka's ShareConsumer, explicit acknowledgement) of group SHARE_GROUP that
    accepts up to ``limit`` records of ``shared`` and releases any more it is given; the accepted offsets."""
    c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": SHARE_GROUP, "share.acknowledgement.mode": "explicit",
                          "max.poll.records": 5})
    accepted: list[int] = []
    try:
        c.subscribe(["shared"])
        deadline = time.monotonic() + timeout
        while len(accepted) < limit and time.monotonic() < deadline:
            for m in c.poll(0.5):
                assert m.error() is None, m.error()
                if len(accepted) < limit:
                    c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
                    accepted.append(m.offset())
                else:
                    c.acknowledge(m, ck.AcknowledgeType.RELEASE)
    finally:
        c.close()
    return accepted


def populate(bs: str, data_dir: Path, java: JavaClient) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    new = [NewTopic("plain", 3, 1), NewTopic("txn", 1, 1), NewTopic("secret", 1, 1), NewTopic("shared", 1, 1),
           NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact", "segment.ms": "100",
                                                "min.cleanable.dirty.ratio": "0.01", "max.message.bytes": "500000"}),
           NewTopic("trimmed", 1, 1, config={"retention.ms": "3600000", "segment.ms": "100"})]
    for f in admin.create_topics(new, operation_timeout=30).values():
        f.result(30)
    produce_plain(bs)
    produce_txn(bs)
    produce_trimmed(bs)
    produce_compacted(bs, data_dir)
    p = ck.Producer({"bootstrap.servers": bs})
    for i in range(3):
        p.produce("secret", value=f"s{i}".encode())
    for i in range(30):
        p.produce("shared", value=f"q{i}".encode())
    assert p.flush(30) == 0
    assert share_consume(bs, SHARE_ACKED, 60) == list(range(SHARE_ACKED))
    ups = [UserScramCredentialUpsertion(u, ScramCredentialInfo(getattr(ScramMechanism, m.replace("-", "_")), it),
                                        pw.encode()) for u, (m, pw, it) in USERS.items()]
    for f in admin.alter_user_scram_credentials(ups).values():
        f.result(30)
    acls = [AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:*", "*", AclOperation.READ,
                       AclPermissionType.ALLOW),
            AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:*", "*",
                       AclOperation.DESCRIBE, AclPermissionType.ALLOW),
            AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                       AclPermissionType.DENY),
            AclBinding(ResourceType.GROUP, "alice-", ResourcePatternType.PREFIXED, "User:alice", "*",
                       AclOperation.READ, AclPermissionType.ALLOW)]
    for f in admin.create_acls(acls, request_timeout=20).values():
        f.result(30)
    java.alter_client_quota(bs, {"user": "alice"}, {"producer_byte_rate": 1048576.0})
    java.alter_client_quota(bs, {"client-id": None}, {"request_percentage": 250.0})
    kafkalite_tool("configs", "--bootstrap-server", bs, "--alter", "--broker-defaults",
                   "--add-config", "log.flush.interval.messages=9999999")
    kafkalite_tool("configs", "--bootstrap-server", bs, "--alter", "--broker", "1",
                   "--add-config", "log.cleaner.min.cleanable.ratio=0.45")
    kafkalite_tool("configs", "--bootstrap-server", bs, "--alter", "--group", "eject-cc-consumer",
                   "--add-config", "consumer.session.timeout.ms=50000")
    commit_groups(bs)


@pytest.fixture(scope="module")
def ejected(tmp_path_factory: pytest.TempPathFactory, compat_log_dir: Path) -> Iterator[Ejected]:
    why = reference.missing()
    if why:
        missing(why)
    base = tmp_path_factory.mktemp("eject")
    plain_port, sasl_port, ctrl_port, internal_port = (_free_port() for _ in range(4))
    props = base / "kafkalite.properties"
    props.write_text("\n".join([
        f"listeners=PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={ADMIN_JAAS}",
        f"authorizer.class.name={STANDARD}",
        "allow.everyone.if.no.acl.found=true",
        "super.users=User:admin",
        f"delegation.token.secret.key={TOKEN_SECRET}",
        "log.retention.check.interval.ms=200",
        "log.cleaner.backoff.ms=200",
        "log.segment.delete.delay.ms=0",
        # the share group APIs confluent-kafka's ShareConsumer speaks (v1) are Kafka 4.3's
        "kafkalite.emulate.kafka=4.3",
        "kafkalite.share.auto.offset.reset=earliest",
    ]) + "\n")
    java = JavaClient(compat_log_dir)
    if java.missing():
        missing(java.missing() or "")
    lite = _PropsBroker(base, props)
    lite.start()
    bs = f"127.0.0.1:{plain_port}"
    try:
        populate(bs, lite.data_dir, java)
        before = {t: read_all(bs, t, 3 if t == "plain" else 1) for t in TOPICS}
        before_committed = read_all(bs, "txn", 1, "read_committed")
        marks: dict[tuple[str, int], tuple[int, int]] = {}
        for t in TOPICS:
            marks.update(watermarks(bs, t, 3 if t == "plain" else 1))
        acls = acl_set(AdminClient({"bootstrap.servers": bs}))
        quotas = {k: {q: float(v) for q, v in vals.items()} for k, vals in java.describe_client_quotas(bs).items()}
        assert len(quotas) == 2, quotas
        # alice's delegation token (Kafka's broker derives its HMAC from the same delegation.token.secret.key)
        alice = java_conf(Sec(f"127.0.0.1:{sasl_port}", mechanism="SCRAM-SHA-256", user="alice",
                              password=USERS["alice"][1]), {})
        made = java.admin(f"127.0.0.1:{sasl_port}", "create_token", renewers=["User:bob"], config=alice)
        assert "error" not in made, made
        assert lite.stop() == 0
    finally:
        lite.kill()
    new_dir = base / "kafka-data"
    report = kafkalite_tool("eject", str(lite.data_dir), "--to", str(new_dir), "--config", str(props),
                            "--controller-listener", f"127.0.0.1:{ctrl_port}",
                            "--internal-listener", f"127.0.0.1:{internal_port}")
    kafka = KafkaOnDir(new_dir / "server.properties", base / "kafka.log")
    kafka.start()
    try:
        wait_for(lambda: _all_led(bs), "Kafka to elect a leader for every partition", 60)
        yield Ejected(bs, f"127.0.0.1:{sasl_port}", lite.data_dir, new_dir, report, before, before_committed, marks,
                      acls, java, base / "kafka.log", {"quotas": quotas, "token": made["token"], "alice": alice})
    finally:
        kafka.stop()
        java.close()


def _all_led(bs: str) -> bool:
    """Every partition of the module's topics has a leader that answers ListOffsets (KRaft elects them when the
    broker is unfenced, a moment around its "Kafka Server started" line)."""
    try:
        for t in TOPICS:
            watermarks(bs, t, 3 if t == "plain" else 1)
    except ck.KafkaException:
        return False
    return True


# -- the checks ------------------------------------------------------------------------------------------------------
def test_eject_reports_what_it_carried(ejected: Ejected) -> None:
    r = ejected.report
    assert "ejected" in r and "topics 9 (" in r, r        # 6 topics and the three internal ones
    assert "ACLs 4" in r and "SCRAM credentials 2" in r and "client quotas 2" in r, r
    assert "delegation tokens 1" in r, r
    assert "bin/kafka-server-start.sh" in r and str(ejected.new_dir / "server.properties") in r, r
    assert not (ejected.data_dir / "__cluster_metadata-0").exists(), "the source directory is only read"


@pytest.mark.parametrize("topic", TOPICS)
def test_kafka_serves_every_record_as_kafkalite_did(ejected: Ejected, topic: str) -> None:
    n = 3 if topic == "plain" else 1
    assert read_all(ejected.plain_bs, topic, n) == ejected.before[topic]
    assert watermarks(ejected.plain_bs, topic, n) == {k: v for k, v in ejected.watermarks.items() if k[0] == topic}


def test_the_source_had_what_the_test_claims(ejected: Ejected) -> None:
    """Gaps and tombstones in the compacted topic, a trimmed log start, aborted records and markers in txn."""
    compacted = ejected.before["compacted"]
    offsets = [r[1] for r in compacted]
    assert len(offsets) < offsets[-1] + 1, "compaction left gaps"
    assert any(r[3] is None for r in compacted), "tombstones kept"
    assert ejected.watermarks[("trimmed", 0)] == (20, 30)
    assert [r[3] for r in ejected.before["trimmed"]] == [f"new-{i}".encode() for i in range(10)]
    assert len(ejected.before["txn"]) == 15 and len(ejected.before_committed) == 10


def test_read_committed_sees_no_aborted_data_confluent_kafka(ejected: Ejected) -> None:
    got = read_all(ejected.plain_bs, "txn", 1, "read_committed")
    assert got == ejected.before_committed
    assert sorted(r[3] for r in got) == sorted(f"{o}-{i}".encode() for o in ("c1", "c2") for i in range(5))


def test_read_committed_sees_no_aborted_data_java(ejected: Ejected) -> None:
    recs = ejected.java.consume(ejected.plain_bs, "txn", [0], 20, timeout_s=8,
                                config={"isolation.level": "read_committed"})
    assert [(r.offset, r.value) for r in recs] == [(r[1], r[3]) for r in ejected.before_committed]


def _expected_after_commit(ejected: Ejected, offsets: dict[int, int]) -> list[tuple[int, int, bytes | None]]:
    return sorted((r[0], r[1], r[3]) for r in ejected.before["plain"] if r[1] >= offsets[r[0]])


@pytest.mark.parametrize("group", [g for g, (c, _p, _o) in GROUPS.items() if c == "confluent-kafka"])
def test_group_resumes_from_its_committed_offsets_confluent_kafka(ejected: Ejected, group: str) -> None:
    _client, protocol, offsets = GROUPS[group]
    expected = _expected_after_commit(ejected, offsets)
    c = ck.Consumer({"bootstrap.servers": ejected.plain_bs, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "group.protocol": protocol})
    got: list[tuple[int, int, bytes | None]] = []
    try:
        committed = c.committed([ck.TopicPartition("plain", p) for p in range(3)], timeout=30)
        assert {tp.partition: tp.offset for tp in committed} == offsets
        c.subscribe(["plain"])
        deadline = time.monotonic() + 60
        while len(got) < len(expected) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append((m.partition(), m.offset(), m.value()))
        end = time.monotonic() + 1.5         # anything read twice or from before the commit would show up now
        while time.monotonic() < end:
            m = c.poll(0.3)
            if m is not None and not m.error():
                got.append((m.partition(), m.offset(), m.value()))
    finally:
        c.close()
    assert sorted(got) == expected


@pytest.mark.parametrize("group", [g for g, (c, _p, _o) in GROUPS.items() if c == "java"])
def test_group_resumes_from_its_committed_offsets_java(ejected: Ejected, group: str) -> None:
    _client, protocol, offsets = GROUPS[group]
    expected = _expected_after_commit(ejected, offsets)
    r = ejected.java._call({"op": "subscribe_consume", "bootstrap": ejected.plain_bs, "topic": "plain",
                            "count": len(expected) + 1, "group": group, "timeout_ms": 20000, "commit": False,
                            "config": {"group.protocol": protocol}}, 90)
    got = sorted((int(d["partition"]), int(d["offset"]), base64.b64decode(d["value"]))
                 for d in r["records"])
    assert got == expected


def _describe_topics(bs: str, command_config: Path) -> dict[str, dict[str, str]]:
    """kafka-topics.sh --describe: {topic: {"TopicId": ..., "PartitionCount": ..., "Configs": ...}}."""
    p = subprocess.run(reference.java_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs,
                                              "--command-config", str(command_config), "--describe"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out: dict[str, dict[str, str]] = {}
    for line in p.stdout.splitlines():
        if line.startswith("Topic:") and "TopicId:" in line:
            fields = dict(f.split(": ", 1) for f in line.split("\t") if ": " in f)
            out[fields["Topic"]] = fields
    return out


def test_kafka_topics_describe_shows_the_same_topic_ids_and_configs(ejected: Ejected) -> None:
    from kafkalite_storage.checkpoints import read_partition_metadata, uuid_to_base64

    # as the super user admin (PLAIN, its JAAS entry carried over): ANONYMOUS may not describe secret's configs
    admin_config = ejected.new_dir.parent / "admin.properties"
    admin_config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                            'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                            'password="admin-secret";\n')
    described = _describe_topics(ejected.sasl_bs, admin_config)
    for t in (*TOPICS, "__consumer_offsets", "__transaction_state"):
        topic_id = read_partition_metadata(str(ejected.data_dir / f"{t}-0" / "partition.metadata"))
        assert topic_id is not None
        assert described[t]["TopicId"] == uuid_to_base64(topic_id), t
    assert described["plain"]["PartitionCount"] == "3"
    configs = dict(kv.split("=", 1) for kv in described["compacted"]["Configs"].split(",") if "=" in kv)
    assert configs["cleanup.policy"] == "compact" and configs["min.cleanable.dirty.ratio"] == "0.01"
    assert configs["segment.ms"] == "100" and configs["max.message.bytes"] == "500000"
    assert "retention.ms=3600000" in described["trimmed"]["Configs"]
    assert "cleanup.policy=compact" in described["__consumer_offsets"]["Configs"]


def test_scram_user_logs_in_with_the_old_password(ejected: Ejected) -> None:
    rows = read_all(ejected.sasl_bs, "secret", 1, conf=sasl(ejected.sasl_bs, "alice"))
    assert [r[3] for r in rows] == [b"s0", b"s1", b"s2"]
    admin = AdminClient({**sasl(ejected.sasl_bs, "alice", "not-her-password"), "retries": 0})
    with pytest.raises(ck.KafkaException) as exc:
        admin.list_topics(timeout=10)
    assert "uthentication" in str(exc.value) or exc.value.args[0].code() in (
        ck.KafkaError._AUTHENTICATION, ck.KafkaError._TRANSPORT), exc.value


def test_delegation_token_carried(ejected: Ejected) -> None:
    """alice's token is Kafka's now: described with its id, owner, renewer and times, and a Java client logs in
    with it (SCRAM, tokenauth=true, the HMAC kafkalite handed out as the password) and produces and consumes."""
    t, java = ejected.extra["token"], ejected.java
    listed = java.admin(ejected.sasl_bs, "describe_tokens", config=ejected.extra["alice"])
    assert [(x["token_id"], x["hmac"], x["owner"], x["renewers"], x["issue"], x["expiry"], x["max"])
            for x in listed["tokens"]] == [
        (t["token_id"], t["hmac"], "User:alice", ["User:bob"], t["issue"], t["expiry"], t["max"])], listed
    admin = AdminClient({"bootstrap.servers": ejected.plain_bs})
    for f in admin.create_topics([NewTopic("token-roundtrip", 1, 1)], operation_timeout=30).values():
        f.result(30)
    s = Sec(ejected.sasl_bs, mechanism="SCRAM-SHA-512", user=t["token_id"], password=t["hmac"], token=True)
    assert roundtrip("java", java, s, {}, "token-roundtrip", [b"d1", b"d2"]) == [b"d1", b"d2"]


def test_acl_still_denies(ejected: Ejected) -> None:
    c = ck.Consumer({**sasl(ejected.sasl_bs, "bob"), "group.id": "eject-bob", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition("secret", 0, ck.OFFSET_BEGINNING)])
        err = wait_for(lambda: (lambda m: m.error() if m is not None and m.error() else None)(c.poll(0.5)),
                       "bob's fetch to be refused", 30)
    finally:
        c.close()
    assert err.code() == ck.KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    assert acl_set(AdminClient({"bootstrap.servers": ejected.plain_bs})) == ejected.acls


def test_quotas_dynamic_and_group_configs_carried(ejected: Ejected) -> None:
    quotas = ejected.java.describe_client_quotas(ejected.plain_bs)
    assert {k: {q: float(v) for q, v in vals.items()} for k, vals in quotas.items()} == ejected.extra["quotas"]
    defaults = json.loads(kafkalite_tool("configs", "--bootstrap-server", ejected.plain_bs, "--describe",
                                         "--broker-defaults", "--json"))
    assert {"name": "log.flush.interval.messages", "value": "9999999"}.items() <= \
        next(d for d in defaults if d["name"] == "log.flush.interval.messages").items()
    node = json.loads(kafkalite_tool("configs", "--bootstrap-server", ejected.plain_bs, "--describe", "--broker",
                                     "1", "--json"))
    assert next(d for d in node if d["name"] == "log.cleaner.min.cleanable.ratio")["value"] == "0.45"
    group = json.loads(kafkalite_tool("configs", "--bootstrap-server", ejected.plain_bs, "--describe", "--group",
                                      "eject-cc-consumer", "--json"))
    assert next(d for d in group if d["name"] == "consumer.session.timeout.ms")["value"] == "50000"


def test_new_producer_ids_are_above_kafkalites(ejected: Ejected) -> None:
    next_pid = int(ejected.report.split("next producer id ")[1].split()[0])
    assert next_pid > 0             # the transactional producer got one from kafkalite
    admin = AdminClient({"bootstrap.servers": ejected.plain_bs})
    admin.create_topics([NewTopic("after-eject", 1, 1)], operation_timeout=30)["after-eject"].result(30)
    p = ck.Producer({"bootstrap.servers": ejected.plain_bs, "enable.idempotence": True})
    errors: list[Any] = []
    p.produce("after-eject", value=b"x", on_delivery=lambda err, _m: errors.append(err))
    assert p.flush(30) == 0 and errors == [None], errors
    res = ejected.java.admin(ejected.plain_bs, "describe_producers", topic="after-eject", partition=0)
    pids = [pr["producer_id"] for pr in res["producers"]]
    assert pids and max(pids) >= next_pid, (pids, next_pid)


def test_share_group_resumes_from_its_state(ejected: Ejected) -> None:
    """Kafka's share coordinator reads kafkalite's __share_group_state (and the group's records in
    __consumer_offsets): the records the group acknowledged on kafkalite are not delivered again, the released
    ones are (with share.auto.offset.reset at Kafka's default, latest, a group without state would get nothing)."""
    got = share_consume(ejected.plain_bs, 30 - SHARE_ACKED, 60)
    assert sorted(got) == list(range(SHARE_ACKED, 30))


def test_kafka_dump_log_decodes_the_metadata_snapshot(ejected: Ejected) -> None:
    snaps = sorted((ejected.new_dir / "__cluster_metadata-0").glob("*.checkpoint"))
    assert snaps
    p = subprocess.run(reference.java_command("org.apache.kafka.tools.DumpLogSegments",
                                              "--cluster-metadata-decoder", "--files", str(snaps[0])),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "Exception" not in out and "isvalid: false" not in out, out[-3000:]
    types = [json.loads(line.split("payload: ", 1)[1])["type"] for line in out.splitlines() if "payload: " in line]
    for t, n in (("TOPIC_RECORD", 9), ("USER_SCRAM_CREDENTIAL_RECORD", 2), ("ACCESS_CONTROL_ENTRY_RECORD", 4),
                 ("CLIENT_QUOTA_RECORD", 2), ("PRODUCER_IDS_RECORD", 1), ("REGISTER_BROKER_RECORD", 1),
                 ("DELEGATION_TOKEN_RECORD", 1)):
        assert types.count(t) == n, (t, types.count(t))
    assert types[0] == "FEATURE_LEVEL_RECORD" and "SnapshotHeader" in out and "SnapshotFooter" in out
    log = ejected.kafka_log.read_text(errors="replace")
    assert " ERROR " not in log, log[-4000:]
