"""``kafkalite migrate`` into Apache Kafka 4.4: a kafkalite broker process moved, online, into a 3-node KRaft
cluster (the ``kafka_cluster`` fixture: StandardAuthorizer, a SASL_PLAINTEXT listener with SCRAM users).

The source holds a plain topic (keys, headers, explicit timestamps), a compacted one (cleaned gaps and
tombstones), a transactional one (committed and aborted transactions interleaved with plain writes, and one
left open), a retention-trimmed one (log start above 0), a LogAppendTime one, a topic only an ACL denies, groups
of both protocols with committed offsets (confluent-kafka classic and consumer, Java classic, a read_committed
one), an ACL, SCRAM users and a client quota. One migration (``--command-config`` in Java's names over SASL,
``--open-transactions abort``, ``--verify``) moves it; then consumers on Kafka check what they read.
Separate tests: a SIGKILL mid-copy and a second run (no duplicate, no loss), and ``--verify-only`` catching a
record altered on the source after the copy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from harness import reference
from harness.broker import BrokerProcess
from harness.records import TS_BASE

from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

KAFKALITE_ONLY = "the source of a migration is a kafkalite broker (the target is the kafka_cluster fixture)"
ADMIN_PW = "admin-secret"
KAFKA_CLUSTER = {"nodes": 3, "sasl_users": {"admin": ADMIN_PW}, "overrides": reference.AUTHORIZER}
REPO = Path(__file__).resolve().parents[1]
SOURCE_ARGS = [
    "--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "--override", "super.users=User:ANONYMOUS",
    "--override", "allow.everyone.if.no.acl.found=true",
    "--override", "log.cleaner.backoff.ms=200",
    "--override", "log.retention.check.interval.ms=200",
    "--override", "log.initial.task.delay.ms=0",
    "--override", "kafkalite.share.auto.offset.reset=earliest",
]
ALICE_PW, BOB_PW = "alice-old-password", "bob-old-password"
PLAIN_N = 300   # per partition, 3 partitions


@dataclass
class World:
    source: BrokerProcess
    target: reference.ReferenceCluster
    tmp: Path
    target_props: Path
    expected: dict[str, dict[int, list[tuple]]] = field(default_factory=dict)   # topic -> partition -> records
    read: dict[str, list[tuple]] = field(default_factory=dict)   # group -> records read on the source
    migrate: subprocess.CompletedProcess[str] | None = None
    report: dict = field(default_factory=dict)


def _rec(m) -> tuple:
    return (m.partition(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1])


def _read_all(bootstrap: str, topic: str, isolation: str = "read_uncommitted", **extra) -> list:
    """Every record of ``topic`` (all partitions) from the start, as confluent-kafka messages."""
    a = AdminClient({"bootstrap.servers": bootstrap, **extra})
    parts = len(a.list_topics(topic, timeout=10).topics[topic].partitions)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-read-all", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True, **extra})
    out, eof = [], set()
    try:
        c.assign([TopicPartition(topic, p, -2) for p in range(parts)])
        deadline = time.monotonic() + 60
        while len(eof) < parts and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:
                    eof.add(m.partition())
                    continue
                raise KafkaException(m.error())
            out.append(m)
    finally:
        c.close()
    assert len(eof) == parts, f"{topic}: did not reach the end of every partition"
    return out


def _consume_group(bootstrap: str, group: str, topic: str, count: int, *, protocol: str = "classic",
                   isolation: str = "read_uncommitted", commit: bool = True, timeout: float = 60) -> list[tuple]:
    """A subscribed confluent-kafka consumer of ``group`` reads exactly ``count`` records and commits them."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "isolation.level": isolation, "group.protocol": protocol}
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
    c = Consumer(conf)
    out = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(_rec(m))
        if commit and out:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return out


def _migrate(world: World, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "kafkalite", "migrate", "--from", world.source.bootstrap,
           "--to", world.target.sasl_bootstrap, "--command-config", str(world.target_props),
           "--state-dir", str(world.tmp / "state"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(REPO),
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))


# -- the source ------------------------------------------------------------------------------------------------
def _populate(bs: str, w: World) -> None:
    a = AdminClient({"bootstrap.servers": bs})
    topics = [
        NewTopic("plain", 3, 1),
        NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact", "segment.ms": "100",
                                            "min.cleanable.dirty.ratio": "0.01", "min.compaction.lag.ms": "0"}),
        NewTopic("txn", 1, 1),
        NewTopic("trimmed", 1, 1, config={"retention.ms": str(86_400_000), "segment.ms": "100"}),
        NewTopic("appendtime", 1, 1, config={"message.timestamp.type": "LogAppendTime"}),
        NewTopic("secret", 1, 1),
        NewTopic("altered", 1, 1),
    ]
    for f in a.create_topics(topics).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "enable.idempotence": True})
    # explicit timestamps an hour old: within the topics' retention (Kafka deletes records older than
    # retention.ms soon after they are copied, the active segment too)
    base_ts = int(time.time() * 1000) - 3_600_000
    for i in range(PLAIN_N * 3):
        p.produce("plain", f"plain-{i}".encode(), f"k{i % 17}".encode(), partition=i % 3,
                  timestamp=base_ts + i, headers=[("i", str(i).encode()), ("dup", b"a"), ("dup", None)])
    for i in range(20):
        p.produce("appendtime", f"lat-{i}".encode(), partition=0, timestamp=TS_BASE + i)
        p.produce("secret", f"secret-{i}".encode(), partition=0)
        p.produce("altered", f"orig-{i}".encode(), partition=0)
    p.flush(30)
    # compacted: 10 keys x 8 rounds in rolled segments, then tombstones for two keys
    for r in range(8):
        for k in range(10):
            p.produce("compacted", f"c{r}-{k}".encode(), f"key{k}".encode(), partition=0)
        p.flush(30)
        time.sleep(0.12)
    p.produce("compacted", None, b"key0", partition=0)
    p.produce("compacted", None, b"key1", partition=0)
    p.flush(30)
    # trimmed: 30 records 3 days old (their segments fall to retention.ms = 1 day), then 20 fresh ones
    now = int(time.time() * 1000)
    for i in range(30):
        p.produce("trimmed", f"old-{i}".encode(), partition=0, timestamp=now - 3 * 86_400_000)
        p.flush(30)
    time.sleep(0.15)
    for i in range(20):
        p.produce("trimmed", f"new-{i}".encode(), partition=0, timestamp=now)
    p.flush(30)
    # txn: committed and aborted transactions with plain writes in between, then one left open
    t = Producer({"bootstrap.servers": bs, "transactional.id": "migrate-tx", "linger.ms": 0})
    t.init_transactions(30)
    for n in range(6):
        t.begin_transaction()
        for i in range(5):
            t.produce("txn", f"tx{n}-{i}".encode(), b"t", partition=0)
        t.flush(30)
        p.produce("txn", f"plain-between-{n}".encode(), b"p", partition=0)
        p.flush(30)
        (t.commit_transaction if n % 3 != 1 else t.abort_transaction)(30)
    hanging = Producer({"bootstrap.servers": bs, "transactional.id": "migrate-open", "linger.ms": 0})
    hanging.init_transactions(30)
    hanging.begin_transaction()
    for i in range(3):
        hanging.produce("txn", f"open-{i}".encode(), b"o", partition=0)
    hanging.flush(30)   # left open: --open-transactions abort aborts it
    time.sleep(0.15)
    p.produce("compacted", b"last", b"key9", partition=0)   # rolls the last dirty segment
    p.flush(30)
    # users, ACL, quota
    for user, pw, iters in (("alice", ALICE_PW, 8192), ("bob", BOB_PW, 4096)):
        for mech in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
            for f in a.alter_user_scram_credentials([UserScramCredentialUpsertion(
                    user, ScramCredentialInfo(mech, iters), pw.encode())]).values():
                f.result(30)
    deny = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL, "User:alice", "*",
                      AclOperation.READ, AclPermissionType.DENY)
    for f in a.create_acls([deny]).values():
        f.result(30)
    from kafkalite.client.wire import call
    from kafkalite_wire.messages import AlterClientQuotasRequest as Q

    host, port = bs.rsplit(":", 1)
    r = call(host, int(port), Q(entries=[Q.EntryData(entity=[Q.EntityData(entity_type="user", entity_name="alice")],
                                                      ops=[Q.OpData(key="producer_byte_rate", value=1048576.0)])]),
             1, 10)
    assert not r.entries[0].error_code
    _wait_cleaned(bs)


def _wait_cleaned(bs: str) -> None:
    """Until the source shows compaction gaps (old values cleaned) and the trimmed topic's log start moved."""
    a = AdminClient({"bootstrap.servers": bs})
    from confluent_kafka.admin import OffsetSpec

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        start = a.list_offsets({TopicPartition("trimmed", 0): OffsetSpec.earliest()})
        trimmed = next(iter(start.values())).result(10).offset
        compacted = list(_read_all(bs, "compacted"))
        if trimmed > 0 and len(compacted) < 40 and any(m.value() is None for m in compacted):
            return
        time.sleep(0.3)
    raise AssertionError(f"the source did not clean/trim in time (trimmed log start {trimmed}, "
                         f"{len(compacted)} compacted records)")


def _share_group(bs: str, group: str, topic: str) -> None:
    """A share group (KIP-932) that has consumed a few records: its state is what migrate cannot carry."""
    import confluent_kafka as ck

    c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": group})
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 30
        while got < 3 and time.monotonic() < deadline:
            got += sum(1 for m in c.poll(0.5) if m.error() is None)
        assert got >= 3, "the share consumer got no records"
    finally:
        c.close()


@pytest.fixture(scope="module")
def world(kafka_cluster: reference.ReferenceCluster, tmp_path_factory: pytest.TempPathFactory, get_client
          ) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("migrate")
    src = BrokerProcess(tmp / "source", tmp / "source.log", extra_args=SOURCE_ARGS, kind="kafkalite")
    src.start()
    props = tmp / "target.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                     "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                     f'username="admin" password="{ADMIN_PW}";\n')
    w = World(src, kafka_cluster, tmp, props)
    try:
        bs = src.bootstrap
        _populate(bs, w)
        # groups with committed offsets on the source, each having read part of a topic
        w.read["g-classic"] = _consume_group(bs, "g-classic", "plain", 250)
        w.read["g-consumer"] = _consume_group(bs, "g-consumer", "plain", 400, protocol="consumer")
        w.read["g-compacted"] = _consume_group(bs, "g-compacted", "compacted", 3)
        w.read["g-txn"] = _consume_group(bs, "g-txn", "txn", 12, isolation="read_committed")
        _share_group(bs, "share-g", "secret")
        java = get_client("java")
        w.read["g-java"] = [(r.partition, r.key, r.value) for r in
                            java.subscribe_consume(bs, "plain", 100, "g-java", commit=True)]
        for topic in ("plain", "compacted", "txn", "trimmed", "appendtime", "secret", "altered"):
            w.expected[topic] = {}
            for m in _read_all(bs, topic):
                w.expected[topic].setdefault(m.partition(), []).append((*_rec(m), m.offset()))
        w.expected["txn-committed"] = {0: [_rec(m) for m in _read_all(bs, "txn", "read_committed")]}
        passwords = tmp / "passwords"
        passwords.write_text(f"alice={ALICE_PW}\nbob={BOB_PW}\n")
        dry = _migrate(w, "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert {t["topic"] for t in plan["topics"]} >= {"plain", "compacted", "txn", "trimmed", "appendtime"}
        assert not set(AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}).list_topics(timeout=10).topics) \
            & {"plain", "compacted"}, "a dry run created topics"
        w.migrate = _migrate(w, "--open-transactions", "abort", "--verify", "--json",
                             "--from-data-dir", str(src.data_dir), "--scram-passwords", str(passwords))
        w.report = json.loads(w.migrate.stdout) if w.migrate.stdout.strip().startswith("{") else {}
        yield w
    finally:
        src.kill()


def _target(w: World) -> str:
    return w.target.bootstrap   # PLAINTEXT: ANONYMOUS is a super user of the target


# -- the tests -------------------------------------------------------------------------------------------------
def test_migration_succeeds_and_verifies(world: World) -> None:
    m = world.migrate
    assert m is not None
    assert m.returncode == 0, f"stdout:\n{m.stdout}\nstderr:\n{m.stderr}"
    v = world.report["verify"]
    assert v["differences"] == [] and v["records"] > PLAIN_N * 3
    assert any("migrate-open" in n and "aborted" in n for n in world.report["not_carried"])
    assert any(n.startswith("share group share-g:") for n in world.report["not_carried"])


def test_topics_have_the_source_partitions_and_configs(world: World) -> None:
    a = AdminClient({"bootstrap.servers": _target(world)})
    md = a.list_topics(timeout=10).topics
    for topic, n in (("plain", 3), ("compacted", 1), ("txn", 1), ("trimmed", 1), ("appendtime", 1)):
        assert len(md[topic].partitions) == n
        assert all(len(p.replicas) == 3 for p in md[topic].partitions.values()), "replication factor min(3, brokers)"
    res = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in ("compacted", "trimmed", "appendtime", "plain")]
    conf = {r.name: f.result(30) for r, f in a.describe_configs(res).items()}
    assert conf["compacted"]["cleanup.policy"].value == "compact"
    assert conf["compacted"]["min.cleanable.dirty.ratio"].value == "0.01"
    assert conf["trimmed"]["retention.ms"].value == "86400000"
    assert conf["appendtime"]["message.timestamp.type"].value == "LogAppendTime", "set back after the copy"
    assert conf["plain"]["message.timestamp.type"].value == "CreateTime"
    assert conf["plain"]["message.timestamp.after.max.ms"].is_default, "the copy's override is removed"


def test_records_are_identical_and_offsets_kept_where_possible(world: World) -> None:
    for topic in ("plain", "compacted", "trimmed", "appendtime", "secret"):
        got: dict[int, list] = {}
        for m in _read_all(_target(world), topic):
            got.setdefault(m.partition(), []).append((*_rec(m), m.offset()))
        want = world.expected[topic]
        for p, recs in want.items():
            g = got.get(p, [])
            assert [r[:5] for r in g] == [r[:5] for r in recs], f"{topic}-{p}: records differ"
            if topic in ("plain", "trimmed", "appendtime", "secret"):
                assert [r[5] for r in g] == [r[5] for r in recs], f"{topic}-{p}: offsets not kept"
    trimmed = world.expected["trimmed"][0]
    assert trimmed[0][5] > 0, "the trimmed topic's log start is above 0 on the source"
    assert any(r[2] is None for r in world.expected["compacted"][0]), "tombstones are copied"
    offs = [r[5] for r in world.expected["compacted"][0]]
    assert offs != list(range(len(offs))), "the source has compaction gaps"


def test_appendtime_records_keep_their_source_append_times(world: World) -> None:
    src = world.expected["appendtime"][0]
    got = list(_read_all(_target(world), "appendtime"))
    assert [m.timestamp()[1] for m in got] == [r[4] for r in src]
    assert all(r[4] != TS_BASE + i for i, r in enumerate(src)), "the source stamped its append time"
    # a record written after the migration gets the target's LogAppendTime
    p = Producer({"bootstrap.servers": _target(world)})
    p.produce("appendtime", b"after", partition=0, timestamp=TS_BASE)
    p.flush(30)
    last = _read_all(_target(world), "appendtime")[-1]
    assert last.value() == b"after" and last.timestamp()[0] == 2 and last.timestamp()[1] != TS_BASE


def _remaining(world: World, group: str, topic: str) -> list[tuple]:
    read = {(r[0], r[2]) for r in world.read[group]}
    return sorted(((r[0], r[2]) for p in world.expected[topic].values() for r in p if (r[0], r[2]) not in read),
                  key=repr)


@pytest.mark.parametrize("group,protocol", [("g-classic", "classic"), ("g-consumer", "consumer")])
def test_confluent_consumer_resumes_from_translated_offsets(world: World, group: str, protocol: str) -> None:
    want = _remaining(world, group, "plain")
    got = _consume_group(_target(world), group, "plain", len(want), protocol=protocol, commit=False)
    assert sorted(((r[0], r[2]) for r in got), key=repr) == want


def test_consumer_of_compacted_topic_resumes_past_the_gaps(world: World) -> None:
    want = _remaining(world, "g-compacted", "compacted")
    got = _consume_group(_target(world), "g-compacted", "compacted", len(want), commit=False)
    assert sorted(((r[0], r[2]) for r in got), key=repr) == want


def test_java_consumer_resumes_from_translated_offsets(world: World, get_client) -> None:
    want = _remaining(world, "g-java", "plain")
    got = get_client("java").subscribe_consume(_target(world), "plain", len(want), "g-java", timeout_s=60)
    assert sorted(((r.partition, r.value) for r in got), key=repr) == want


def test_read_committed_readers_see_no_aborted_data(world: World, get_client) -> None:
    committed = world.expected["txn-committed"][0]
    assert not any(b"tx1-" in r[2] or b"tx4-" in r[2] or b"open-" in r[2] for r in committed)
    got = [_rec(m) for m in _read_all(_target(world), "txn", "read_committed")]
    assert got == committed
    # the aborted records are on the target too, as aborted data (read_uncommitted sees them, as on the source)
    everything = [m.value() for m in _read_all(_target(world), "txn")]
    assert b"tx1-0" in everything and b"open-0" in everything
    # a read_committed group resumes exactly after what it had read on the source
    read = {r[2] for r in world.read["g-txn"]}
    want = sorted(r[2] for r in committed if r[2] not in read)
    got2 = _consume_group(_target(world), "g-txn", "txn", len(want), isolation="read_committed", commit=False)
    assert sorted(r[2] for r in got2) == want
    java = get_client("java")._call({"op": "consume", "bootstrap": _target(world), "topic": "txn", "partitions": [0],
                                     "count": len(committed), "start": "earliest", "timeout_ms": 30000,
                                     "config": {"isolation.level": "read_committed"}})
    assert len(java["records"]) == len(committed)


def _sasl(world: World, user: str, password: str, mech: str = "SCRAM-SHA-256") -> dict:
    return {"bootstrap.servers": world.target.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password}


def test_scram_users_log_in_with_their_old_passwords(world: World) -> None:
    for user, pw in (("alice", ALICE_PW), ("bob", BOB_PW)):
        for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            AdminClient(_sasl(world, user, pw, mech)).list_topics(timeout=15)
    with pytest.raises(KafkaException):
        AdminClient(_sasl(world, "alice", "wrong-password")).list_topics(timeout=5)
    admin = AdminClient({"bootstrap.servers": _target(world)})
    users = admin.describe_user_scram_credentials().result(30)
    assert {i.iterations for i in users["alice"].scram_credential_infos} == {8192}


def test_acl_still_denies_on_the_target(world: World, get_client) -> None:
    conf = _sasl(world, "alice", ALICE_PW)
    java_conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                 "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                     f'username="alice" password="{ALICE_PW}";'}
    java = get_client("java")
    with pytest.raises(Exception, match="TopicAuthorizationException|Not authorized"):
        java._call({"op": "consume", "bootstrap": world.target.sasl_bootstrap, "topic": "secret", "partitions": [0],
                    "count": 1, "start": "earliest", "timeout_ms": 20000, "config": java_conf})
    got = java._call({"op": "consume", "bootstrap": world.target.sasl_bootstrap, "topic": "plain", "partitions": [0],
                      "count": 5, "start": "earliest", "timeout_ms": 20000, "config": java_conf})
    assert len(got["records"]) >= 5, "alice may read what no ACL denies"
    assert len(_read_all(world.target.sasl_bootstrap, "plain", **{k: v for k, v in conf.items()
                                                                   if k != "bootstrap.servers"})) == PLAIN_N * 3


def test_client_quota_is_carried(world: World, get_client) -> None:
    quotas = get_client("java").describe_client_quotas(_target(world))
    assert quotas.get("user=alice") == {"producer_byte_rate": 1048576.0}


def test_kill_mid_copy_and_resume_writes_each_record_once(world: World) -> None:
    bs = world.source.bootstrap
    a = AdminClient({"bootstrap.servers": bs})
    for f in a.create_topics([NewTopic("bulk", 2, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20, "batch.num.messages": 10000})
    n = 120_000
    for i in range(n):
        while True:
            try:
                p.produce("bulk", f"bulk-{i}".encode(), partition=i % 2)
                break
            except BufferError:
                p.poll(0.1)
    p.flush(60)
    state = world.tmp / "state"
    cmd = [sys.executable, "-m", "kafkalite", "migrate", "--from", bs, "--to", world.target.sasl_bootstrap,
           "--command-config", str(world.target_props), "--state-dir", str(state), "--topics", "bulk",
           "--groups", "none"]
    proc = subprocess.Popen(cmd, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = state / "offsets.journal"
    deadline = time.monotonic() + 120
    killed_at = 0
    while time.monotonic() < deadline and proc.poll() is None:
        text = journal.read_text() if journal.exists() else ""
        copied = [int(line.split()[3]) for line in text.splitlines() if line.startswith("t bulk ")]
        if copied and max(copied) > 1000:
            proc.send_signal(signal.SIGKILL)
            killed_at = max(copied)
            break
        time.sleep(0.05)
    proc.wait(30)
    assert killed_at, "the copy finished (or never started) before the kill"
    assert proc.returncode == -signal.SIGKILL
    from kafkalite.migration.offsetmap import load

    journaled = sum(m.records for (t, _p), m in load(journal).items() if t == "bulk")
    again = subprocess.run([*cmd, "--verify", "--json"], capture_output=True, text=True, timeout=240,
                           cwd=str(REPO))
    assert again.returncode == 0, f"{again.stdout}\n{again.stderr}"
    report = json.loads(again.stdout)
    assert report["records"] < n, "the second run copied everything again"
    # every record is accounted for once: journaled by the killed run, found on the target after its journal
    # (delivered, or in flight, when it died), or written by the second run
    assert journaled + report["matched"] + report["records"] == n, (journaled, report["matched"], report["records"])
    values = [m.value() for m in _read_all(_target(world), "bulk")]
    assert len(values) == n and len(set(values)) == n, "duplicates or losses after the resume"
    assert report["verify"]["differences"] == []


def test_verify_finds_a_record_altered_after_the_copy(world: World) -> None:
    from kafkalite_storage.batch import CRC_OFFSET, compute_crc, iter_batches

    seg = world.source.data_dir / "altered-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    pos = data.find(b"orig-7")
    assert pos > 0
    data[pos:pos + 6] = b"EDIT-7"
    for bpos, hdr in iter_batches(bytes(data)):
        if bpos <= pos < bpos + hdr.size:
            data[bpos + CRC_OFFSET:bpos + CRC_OFFSET + 4] = compute_crc(data[bpos:bpos + hdr.size]).to_bytes(4, "big")
    seg.write_bytes(bytes(data))
    r = _migrate(world, "--verify-only", "--topics", "altered", "--groups", "none")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "altered-0: source offset 7 / target offset 7: value differ" in r.stdout
