"""KIP-848 consumer groups (``group.protocol=consumer``) with real clients: confluent-kafka 2.16.1 and the Java
client 3.9.1.

Members are separate processes printing JSON lines: every assignment change with a wall-clock time stamp
(``{"t": ..., "a": [...]}``, written after the client's revoke/assign callback), and every record read. They commit
synchronously after each batch and on revocation. Checked:

* three members joining one by one and leaving: at every moment every partition is owned by at most one member
  (the time-stamped assignment reports never overlap: the broker hands a partition over only after its owner
  revoked it), each member ends up with a share, and every record is read exactly once;
* a member restarted, and the broker restarted (SIGTERM and SIGKILL): consumption resumes exactly where it was
  committed, no record lost or read twice (the group's records and offsets come back from __consumer_offsets);
* a regex subscription picks up a topic created after the member joined.

The broker runs with a 500 ms heartbeat interval and a 6 s session timeout (group.consumer.*) so the test is
quick; Kafka's defaults are 5 s and 45 s.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.broker import BrokerProcess
from harness.topics import create_topic
from test_groups_support import CACHE, JAVA4_DEPS, JAVA_DEPS, committed, missing, produce, write_script

PARTITIONS = 6
# the minimums too: Apache Kafka refuses to start (and to format) with an interval or timeout below its minimum
BROKER_ARGS = ["--override", "group.consumer.heartbeat.interval.ms=500",
               "--override", "group.consumer.min.heartbeat.interval.ms=500",
               "--override", "group.consumer.session.timeout.ms=6000",
               "--override", "group.consumer.min.session.timeout.ms=6000"]
if os.environ.get("KIP848_BROKER_LOG_LEVEL"):   # e.g. DEBUG: the coordinator logs every assignment and commit
    BROKER_ARGS += ["--log-level", os.environ["KIP848_BROKER_LOG_LEVEL"]]

PY_MEMBER = r"""
import json, os, signal, sys, time
bootstrap, topic, group = sys.argv[1:4]
instance = sys.argv[4] if len(sys.argv) > 4 else None
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
def out(obj):
    obj["t"] = time.time()
    print(json.dumps(obj), flush=True)
from confluent_kafka import Consumer
protocol = os.environ.get("KIP848_PROTOCOL") or "consumer"
conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
        "auto.offset.reset": "earliest", "enable.auto.commit": False}
if protocol == "classic":
    conf.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
if instance:
    conf["group.instance.id"] = instance
if os.environ.get("KIP848_ASSIGNOR"):
    conf["group.remote.assignor"] = os.environ["KIP848_ASSIGNOR"]
if os.environ.get("KIP848_RDKAFKA_DEBUG"):   # librdkafka's debug contexts (stderr goes to a file then)
    conf["debug"] = os.environ["KIP848_RDKAFKA_DEBUG"]
c = Consumer(conf)
owned = set()
def assigned(cons, parts):
    owned.update((p.topic, p.partition) for p in parts); out({"a": sorted(owned)})
def revoked(cons, parts):
    if parts:
        try:
            cons.commit(asynchronous=False)
        except Exception as exc:   # reported: a refused revoke-time commit explains a re-read (kept for diagnosis)
            out({"e": f"commit on revoke of {[(p.topic, p.partition) for p in parts]}: {exc}"})
    owned.difference_update((p.topic, p.partition) for p in parts); out({"a": sorted(owned)})
c.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
while not stop:
    msgs = c.consume(100, 0.1)
    good = [m for m in msgs if not m.error()]
    for m in good:
        out({"r": [m.topic(), m.partition(), m.offset(), m.value().decode()]})
    if good:
        c.commit(asynchronous=False)
c.close()
out({"closed": True})
"""

JAVA_MEMBER = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

public class Kip848Member {
    static volatile boolean stop = false;
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("group.id", a[2]);
        String protocol = a.length > 3 ? a[3] : "consumer";
        p.put("group.protocol", protocol);
        if (protocol.equals("classic")) {
            p.put("session.timeout.ms", "6000");
            p.put("heartbeat.interval.ms", "500");
        }
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        // a topic argument starting with ^ is a Pattern: the 3.9 consumer matches it against its metadata on the
        // client and sends the matching names (SubscribedTopicNames); a short metadata age finds new topics soon
        final boolean pattern = a[1].startsWith("^");
        if (pattern) p.put("metadata.max.age.ms", "1000");
        final KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
        final Thread main = Thread.currentThread();
        // SIGTERM ends the loop after the poll in progress and its commit: no wakeup(), which would make that
        // commitSync (or the revocation's) throw WakeupException after the records were printed; close() then
        // commits nothing for partitions it gives up as lost (a rebalance in progress), and the next owner would
        // read those records again
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true;
            try { main.join(30000); } catch (InterruptedException e) { }
        }));
        final Set<String> owned = new TreeSet<>();
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                if (!parts.isEmpty()) commit(c, "commit on revoke of " + parts);
                for (TopicPartition tp : parts) owned.remove(tp.topic() + ":" + tp.partition());
                report(owned);
            }
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                for (TopicPartition tp : parts) owned.add(tp.topic() + ":" + tp.partition());
                report(owned);
            }
            public void onPartitionsLost(Collection<TopicPartition> parts) { onPartitionsRevoked(Collections.emptyList());
                for (TopicPartition tp : parts) owned.remove(tp.topic() + ":" + tp.partition());
                report(owned); }
        };
        if (pattern) c.subscribe(java.util.regex.Pattern.compile(a[1]), listener);
        else c.subscribe(Collections.singletonList(a[1]), listener);
        try {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : rs)
                    System.out.println("{\"r\":[\"" + r.topic() + "\"," + r.partition() + "," + r.offset() + ",\""
                        + new String(r.value(), "UTF-8") + "\"],\"t\":" + System.currentTimeMillis() / 1000.0 + "}");
                if (!rs.isEmpty()) commit(c, "commit after poll");
                System.out.flush();
            }
        } finally {
            c.close();
            System.out.println("{\"closed\":true,\"t\":" + System.currentTimeMillis() / 1000.0 + "}");
            System.out.flush();
        }
    }
    // a refused commit is reported (the test's diagnosis names it) and thrown on, as before
    static void commit(KafkaConsumer<byte[], byte[]> c, String what) {
        try {
            c.commitSync();
        } catch (RuntimeException e) {
            String msg = (what + ": " + e).replace("\\", "/").replace("\"", "'");
            System.out.println("{\"e\":\"" + msg + "\",\"t\":" + System.currentTimeMillis() / 1000.0 + "}");
            System.out.flush();
            throw e;
        }
    }
    static void report(Set<String> owned) {
        StringBuilder sb = new StringBuilder("{\"a\":[");
        boolean first = true;
        for (String tp : owned) {
            String[] x = tp.split(":");
            if (!first) sb.append(',');
            sb.append("[\"").append(x[0]).append("\",").append(x[1]).append("]");
            first = false;
        }
        System.out.println(sb.append("],\"t\":").append(System.currentTimeMillis() / 1000.0).append("}"));
        System.out.flush();
    }
}
"""


class Member:
    """One member process; a reader thread collects its time-stamped assignment reports and records."""

    def __init__(self, cmd: list[str], name: str, env: dict[str, str] | None = None) -> None:
        self.name = name
        # KIP848_MEMBER_LOG_DIR (diagnosis): each member's stdout lines are copied to <name>-<stamp>.out there and
        # its stderr (e.g. librdkafka's debug log, KIP848_RDKAFKA_DEBUG) goes to <name>-<stamp>.err
        log_dir = os.environ.get("KIP848_MEMBER_LOG_DIR")
        stamp = f"{name}-{time.monotonic_ns()}"
        self.copy = None
        err = subprocess.PIPE
        if log_dir:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            err = open(Path(log_dir) / f"{stamp}.err", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, start_new_session=True, env=env)
        if log_dir:
            err.close()   # type: ignore[union-attr]
            self.copy = open(Path(log_dir) / f"{stamp}.out", "w")  # noqa: SIM115
        self.assignment: list[tuple[str, int]] = []
        self.history: list[tuple[float, frozenset[tuple[str, int]]]] = []
        self.records: list[tuple[str, int, int, str]] = []
        self.errors: list[str] = []   # commits the member saw refused (diagnostics)
        self.closed = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        # stderr is drained into a bounded tail (a pipe nobody reads blocks the member at 64 KiB of log)
        self._err_tail = bytearray()
        self._err_lock = threading.Lock()
        if self.proc.stderr is not None:
            threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            with self._err_lock:
                self._err_tail += chunk
                del self._err_tail[:-3000]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if self.copy is not None:
                self.copy.write(line + "\n")
                self.copy.flush()
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if "a" in msg:
                self.assignment = [(t, p) for t, p in msg["a"]]
                self.history.append((msg["t"], frozenset(self.assignment)))
            elif "r" in msg:
                self.records.append(tuple(msg["r"]))  # type: ignore[arg-type]
            elif "e" in msg:
                self.errors.append(f"{msg['t']:.3f} {msg['e']}")
            elif msg.get("closed"):
                self.history.append((msg["t"], frozenset()))
                self.closed = True

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.thread.join(10)
        if sig == signal.SIGKILL:
            self.history.append((time.time(), frozenset()))

    def stderr(self) -> str:
        """The last 3,000 bytes the member wrote to stderr (empty when KIP848_MEMBER_LOG_DIR took it)."""
        with self._err_lock:
            return bytes(self._err_tail).decode(errors="replace")


def _java_cp(deps: Path = JAVA_DEPS) -> str:
    """The member compiled against the jars of ``deps`` (.deps/java: 3.9.1; .deps/java4: 4.4.0)."""
    import shutil

    javac = shutil.which("javac")
    jars = sorted(deps.glob("*.jar"))
    if javac is None or not jars:
        missing(f"javac or the Java kafka-clients jars ({deps}) are not installed")
    out = CACHE / f"kip848-{deps.name}-member"
    src = out / "Kip848Member.java"
    if not ((out / "Kip848Member.class").exists() and src.exists() and src.read_text() == JAVA_MEMBER):
        out.mkdir(parents=True, exist_ok=True)
        src.write_text(JAVA_MEMBER)
        subprocess.run([javac, "-cp", ":".join(map(str, jars)), "-d", str(out), str(src)], check=True,
                       capture_output=True, timeout=180)
    return ":".join([str(out), *map(str, jars)])


def start_member(kind: str, bootstrap: str, topic: str, group: str, name: str = "",
                 instance: str | None = None, assignor: str | None = None, protocol: str = "consumer") -> Member:
    """A member process; ``protocol="classic"`` makes it a JoinGroup/SyncGroup member (6 s session timeout)."""
    if kind in ("java", "java4"):
        cp = _java_cp(JAVA4_DEPS if kind == "java4" else JAVA_DEPS)
        return Member(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "Kip848Member",
                       bootstrap, topic, group, protocol], name)
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        missing("confluent-kafka is not installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    script = CACHE / "kip848_member.py"
    write_script(script, PY_MEMBER)
    env = dict(os.environ, KIP848_ASSIGNOR=assignor or "", KIP848_PROTOCOL=protocol)
    return Member([sys.executable, str(script), bootstrap, topic, group, *([instance] if instance else [])], name,
                  env)


@pytest.fixture
def kip848_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", extra_args=BROKER_ARGS)
    b.start()
    try:
        yield b
    finally:
        b.kill()


def wait_for(cond, timeout: float, what: str, members: list[Member]) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    state = [(m.name, m.proc.poll(), m.assignment, len(m.records)) for m in members]
    errs = "\n".join(m.stderr() for m in members if m.proc.poll() not in (None, 0, -9))
    raise AssertionError(f"timed out waiting for {what}; members (rc, assignment, records): {state}\n{errs}")


def covers(members: list[Member], topic: str, partitions: int = PARTITIONS) -> bool:
    parts = sorted(p for m in members for t, p in m.assignment if t == topic)
    return parts == list(range(partitions)) and all(m.assignment for m in members)


def assert_never_shared(members: list[Member]) -> None:
    """Replays every member's time-stamped reports in time order: no partition is ever owned by two members."""
    events = sorted((t, i, a) for i, m in enumerate(members) for t, a in m.history)
    owned: dict[int, frozenset[tuple[str, int]]] = {}
    for t, i, a in events:
        owned[i] = a
        seen: dict[tuple[str, int], int] = {}
        for j, parts in owned.items():
            for tp in parts:
                assert tp not in seen, f"{tp} owned by {members[seen[tp]].name} and {members[j].name} at {t}"
                seen[tp] = j


# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: retriable. After a restart Apache Kafka
# answers NOT_COORDINATOR until its group coordinator has loaded __consumer_offsets (clients ask again).
COORDINATOR_RETRIABLE = (14, 15, 16)


def describe(b: BrokerProcess, group: str) -> tuple[int, list[tuple[str, int]]]:
    """ConsumerGroupDescribe v1 over a raw connection: (group epoch, [(member id, member epoch)]); asked again
    while the coordinator is loading, as a client would."""
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import ConsumerGroupDescribeRequest

    deadline = time.monotonic() + 60
    while True:
        with RawClient(b.host, b.port) as c:
            g = c.request(ConsumerGroupDescribeRequest(group_ids=[group]), 1).groups[0]
        if g.error_code not in COORDINATOR_RETRIABLE or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert g.error_code == 0, (g.error_code, g.error_message)
    return g.group_epoch, sorted((m.member_id, m.member_epoch) for m in g.members)


def _listed(bootstrap: str, group: str):  # type: ignore[no-untyped-def]
    from test_groups_support import admin

    adm = admin(bootstrap)
    res = adm.list_consumer_groups(request_timeout=30).result(30)
    return next(g for g in res.valid if g.group_id == group)


def diagnose(members: list[Member]) -> str:
    """For a failed exactly-once check: which records were read twice, by whom at which offsets, the members'
    assignment histories and any commit they saw refused."""
    seen: dict[str, list[str]] = {}
    for m in members:
        for _t, p, o, v in m.records:
            seen.setdefault(v, []).append(f"{m.name}@p{p}/{o}")
    twice = {v: who for v, who in sorted(seen.items()) if len(who) > 1}
    lines = [f"read twice: {twice}"]
    for m in members:
        lines.append(f"{m.name}: history {[(round(t, 3), sorted(a)) for t, a in m.history]} errors {m.errors}")
    return "\n".join(lines)


def commit_start_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> None:
    """Commit offset 0 for every partition before any member starts (an admin commit to a new group), so
    that no member resets a partition with ``auto.offset.reset``.

    Why: librdkafka 2.16 can re-read a partition from the beginning after it started it by an offset reset
    during an incremental rebalance. Seen in the debug log of a failing run: the partition waits for its
    ListOffsets answer (queued behind the connection's 500 ms Fetch long poll, as on any Kafka broker) while the
    revocation of another partition pauses and resumes it twice; each resume sends a new ListOffsets; the
    answers to the older ones arrive "outdated" and re-arm the offset query timer ("outdated offset response:
    (re)starting offset query timer"), the newest answer starts the fetch, and 500 ms later the stale timer
    fires on the active partition ("timed offset query for offset BEGINNING ... in state active") and rewinds
    it to 0 - records already read and committed are delivered again. The broker answered every request
    correctly and in order; with a committed offset the client starts from OffsetFetch and never arms that
    timer. (What these tests check is the handover: revocation before reassignment and commits landing.)"""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    committed(bootstrap, group, topic, partitions)   # waits out a new Kafka's NOT_COORDINATOR (offsets loading)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, 0) for p in range(partitions)])
    result = admin.alter_consumer_group_offsets([request])[group].result(30)
    assert all(tp.error is None for tp in result.topic_partitions), result.topic_partitions


def values(members: list[Member]) -> list[str]:
    return sorted(v for m in members for _t, _p, _o, v in m.records)


@pytest.mark.parametrize("kind", ["confluent-kafka", "java", "java4"])
def test_three_members_join_and_leave(kind: str, kip848_broker: BrokerProcess, topic: str) -> None:
    bs = kip848_broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    group = f"k848-{uuid.uuid4().hex[:8]}"
    commit_start_offsets(bs, group, topic, PARTITIONS)
    produce(bs, topic, [(i % PARTITIONS, f"a{i}".encode()) for i in range(60)])
    members: list[Member] = []
    try:
        for n in range(3):   # one by one: each join moves partitions off the others first
            members.append(start_member(kind, bs, topic, group, f"m{n}"))
            wait_for(lambda k=n + 1: covers(members[:k], topic), 90, f"{n + 1} members to split the partitions",
                     members)
            produce(bs, topic, [(i % PARTITIONS, f"b{n}-{i}".encode()) for i in range(12)])
        wait_for(lambda: len(values(members)) >= 96, 60, "96 records", members)
        # uniform: 6 partitions over 3 (the last joiner's two arrive once their previous owners revoked them,
        # which on a loaded machine can come after the 96 records)
        wait_for(lambda: all(len(m.assignment) == 2 for m in members), 60, "two partitions each", members)
        members[0].stop(signal.SIGTERM)                        # a clean leave
        assert members[0].closed
        wait_for(lambda: covers(members[1:], topic), 60, "two members after a leave", members)
        produce(bs, topic, [(i % PARTITIONS, f"c{i}".encode()) for i in range(30)])
        wait_for(lambda: len(values(members)) >= 126, 60, "126 records", members)
        want_committed = dict.fromkeys(range(PARTITIONS), 126 // PARTITIONS)
        wait_for(lambda: committed(bs, group, topic, PARTITIONS) == want_committed, 60, "the commits", members)
        members[1].stop(signal.SIGKILL)                        # a crash: fenced after the session timeout
        wait_for(lambda: covers(members[2:], topic), 60, "the survivor to own everything", members)
        produce(bs, topic, [(i % PARTITIONS, f"d{i}".encode()) for i in range(12)])
        want = sorted([f"a{i}" for i in range(60)] + [f"b{n}-{i}" for n in range(3) for i in range(12)]
                      + [f"c{i}" for i in range(30)] + [f"d{i}" for i in range(12)])
        wait_for(lambda: len(values(members)) >= len(want), 60, "every record", members)
        time.sleep(1.0)
        assert values(members) == want, ("every record read exactly once across the rebalances; "
                                         + diagnose(members))
        assert_never_shared(members)
    finally:
        for m in members:
            m.stop(signal.SIGKILL, timeout=10)


# Kafka's default member session (45 s) for the restart test: a Kafka broker takes 10-30 s to come back here,
# and a member whose session ran out meanwhile is fenced, so its next commit fails (CommitFailedException) and the
# records it read since are read again -- not what the test is about
RESUME_ARGS = [*BROKER_ARGS, "--override", "group.consumer.session.timeout.ms=45000"]


@pytest.mark.parametrize("kind", ["confluent-kafka", "java", "java4"])
def test_resume_after_member_and_broker_restarts(kind: str, tmp_path: Path, topic: str) -> None:
    """Commit, then restart the member, then the broker (SIGTERM, then SIGKILL): reading resumes exactly at the
    committed offsets -- the group (epochs, members, assignments) and its offsets come back from
    __consumer_offsets -- and nothing is read twice or lost."""
    b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", extra_args=RESUME_ARGS)
    b.start()
    create_topic(b.bootstrap, topic, PARTITIONS)
    group = f"k848r-{uuid.uuid4().hex[:8]}"
    m = start_member(kind, b.bootstrap, topic, group, "first")
    members = [m]
    total = 0

    def more(n: int) -> None:
        nonlocal total
        produce(b.bootstrap, topic, [(i % PARTITIONS, f"r{i}".encode()) for i in range(total, total + n)])
        total += n

    def settled() -> None:
        wait_for(lambda: len(values(members)) >= total, 90, f"{total} records", members)
        want = dict.fromkeys(range(PARTITIONS), total // PARTITIONS)
        wait_for(lambda: committed(b.bootstrap, group, topic, PARTITIONS) == want, 60, "the commits", members)

    try:
        wait_for(lambda: covers([m], topic), 90, "the member to own every partition", members)
        more(12)
        settled()
        m.stop(signal.SIGTERM)                      # the member restarts: resumes at the commits
        m = start_member(kind, b.bootstrap, topic, group, "second")
        members.append(m)
        more(12)
        settled()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            before = describe(b, group)
            b.restart(sig)
            # the group came back from __consumer_offsets: the same epoch and member (no rejoin needed), or, if
            # the member's session ran out before it reached the restarted broker (it restarts when the
            # coordinator has loaded the group), a later epoch: never a group started afresh
            after = describe(b, group)
            assert after == before or after[0] > before[0], (before, after)
            more(12)
            settled()
            assert describe(b, group)[0] >= before[0]
        time.sleep(1.0)
        assert values(members) == sorted(f"r{i}" for i in range(total))
    finally:
        for x in members:
            x.stop(signal.SIGKILL, timeout=10)
        b.kill()


@pytest.mark.parametrize("kind", ["confluent-kafka", "java", "java4"])
def test_regex_subscription_picks_up_a_topic_created_later(kind: str, kip848_broker: BrokerProcess,
                                                           topic: str) -> None:
    """A member subscribes to ``^<prefix>-.*``; a topic created after it joined is assigned to it and read.
    confluent-kafka (librdkafka 2.16) sends the regex to the broker (SubscribedTopicRegex, v1), resolved there;
    the Java client 3.9.1 matches its java.util.regex Pattern against its own metadata and sends the matching
    topic names (SubscribedTopicNames, ConsumerGroupHeartbeat v0; AsyncKafkaConsumer.updatePatternSubscription),
    so it finds a new topic at its next metadata refresh."""
    bs = kip848_broker.bootstrap
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    create_topic(bs, f"{prefix}-one", 2)
    create_topic(bs, f"other{prefix}", 2)
    group = f"k848x-{uuid.uuid4().hex[:8]}"
    m = start_member(kind, bs, f"^{prefix}-.*", group, "rx")
    try:
        wait_for(lambda: covers([m], f"{prefix}-one", 2), 90, "the member to own the first topic", [m])
        names, regex = _member_subscription(kip848_broker, group)
        if kind == "confluent-kafka":   # librdkafka joins its regexes as one alternation: "(^rx...-.*)"
            assert names == [] and regex == f"(^{prefix}-.*)"
        else:
            assert (names, regex) == ([f"{prefix}-one"], "")   # Kafka describes "no regex" as "", not null
        listed = _listed(bs, group)   # ListGroups v5: Kafka's group type and state of a consumer group
        assert (listed.type.name, listed.state.name, listed.is_simple_consumer_group) == \
            ("CONSUMER", "STABLE", False)
        create_topic(bs, f"{prefix}-two", 3)
        wait_for(lambda: sorted(p for t, p in m.assignment if t == f"{prefix}-two") == [0, 1, 2], 90,
                 "the topic created later to be assigned", [m])
        produce(bs, f"{prefix}-two", [(i % 3, f"x{i}".encode()) for i in range(9)])
        produce(bs, f"other{prefix}", [(0, b"not-mine")])
        wait_for(lambda: len(m.records) >= 9, 60, "the new topic's records", [m])
        time.sleep(0.5)
        assert sorted(v for _t, _p, _o, v in m.records) == sorted(f"x{i}" for i in range(9))
        assert all(t.startswith(f"{prefix}-") for t, _p in m.assignment)
    finally:
        m.stop(signal.SIGKILL, timeout=10)


def _member_subscription(b: BrokerProcess, group: str) -> tuple[list[str], str | None]:
    """What the group's only member subscribed with (ConsumerGroupDescribe v1): (topic names, regex)."""
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import ConsumerGroupDescribeRequest

    with RawClient(b.host, b.port) as c:
        m = c.request(ConsumerGroupDescribeRequest(group_ids=[group]), 1).groups[0].members[0]
    return sorted(m.subscribed_topic_names), m.subscribed_topic_regex


def test_static_member_restart_keeps_its_partitions(kip848_broker: BrokerProcess, topic: str) -> None:
    """confluent-kafka with group.instance.id: a restarted static member (left with epoch -2) comes back under a
    new member id with its old partitions, without a rebalance of the others (the group epoch is unchanged)."""
    bs = kip848_broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    group = f"k848s-{uuid.uuid4().hex[:8]}"
    a = start_member("confluent-kafka", bs, topic, group, "a", instance="ia")
    b = start_member("confluent-kafka", bs, topic, group, "b", instance="ib")
    members = [a, b]
    try:
        wait_for(lambda: covers([a, b], topic), 90, "two static members to split the partitions", members)
        wait_for(lambda: describe(kip848_broker, group)[1] and all(
            e == describe(kip848_broker, group)[0] for _m, e in describe(kip848_broker, group)[1]), 30,
            "a stable group", members)
        mine = sorted(a.assignment)
        epoch, before = describe(kip848_broker, group)
        a.stop(signal.SIGTERM)
        a2 = start_member("confluent-kafka", bs, topic, group, "a2", instance="ia")
        members.append(a2)
        wait_for(lambda: sorted(a2.assignment) == mine, 60, "the static member's partitions back", members)
        epoch2, after = describe(kip848_broker, group)
        assert epoch2 == epoch and len(after) == 2 and after != before   # same epoch, a new member id
        assert_never_shared(members)
    finally:
        for m in members:
            m.stop(signal.SIGKILL, timeout=10)


def test_empty_classic_group_converts_to_consumer_protocol(kip848_broker: BrokerProcess, topic: str) -> None:
    """A classic group's committed offsets carry over when its (now empty) group is joined by a consumer-protocol
    member, as Kafka 4.0 converts an empty classic group; ListGroups then reports it as a CONSUMER group."""
    from confluent_kafka import Consumer

    bs = kip848_broker.bootstrap
    create_topic(bs, topic, 2)
    group = f"k848c-{uuid.uuid4().hex[:8]}"
    produce(bs, topic, [(i % 2, f"o{i}".encode()) for i in range(10)])
    classic = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                        "enable.auto.commit": False, "group.protocol": "classic"})
    classic.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 10 and time.monotonic() < deadline:
        m = classic.poll(0.2)
        if m is not None and not m.error():
            seen += 1
    classic.commit(asynchronous=False)
    classic.close()
    assert seen == 10
    assert _listed(bs, group).type.name == "CLASSIC"
    produce(bs, topic, [(i % 2, f"n{i}".encode()) for i in range(6)])
    m = start_member("confluent-kafka", bs, topic, group, "new")
    try:
        wait_for(lambda: len(m.records) >= 6, 60, "the records after the classic commits", [m])
        time.sleep(0.5)
        assert sorted(v for _t, _p, _o, v in m.records) == sorted(f"n{i}" for i in range(6))
        assert _listed(bs, group).type.name == "CONSUMER"
    finally:
        m.stop(signal.SIGKILL, timeout=10)


def test_range_assignor_chosen_by_the_members(kip848_broker: BrokerProcess, topic: str) -> None:
    """Members asking for ``group.remote.assignor=range`` get contiguous ranges of partitions."""
    bs = kip848_broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    group = f"k848g-{uuid.uuid4().hex[:8]}"
    members = [start_member("confluent-kafka", bs, topic, group, f"r{i}", assignor="range") for i in range(2)]
    try:
        wait_for(lambda: covers(members, topic), 90, "two members to split the partitions", members)
        wait_for(lambda: sorted(sorted(p for _t, p in m.assignment) for m in members) == [[0, 1, 2], [3, 4, 5]],
                 30, "contiguous ranges", members)
        from kafkalite.tests.support.rawclient import RawClient
        from kafkalite_wire.messages import ConsumerGroupDescribeRequest

        with RawClient(kip848_broker.host, kip848_broker.port) as c:
            assert c.request(ConsumerGroupDescribeRequest(group_ids=[group]), 1).groups[0].assignor_name == "range"
        assert_never_shared(members)
    finally:
        for m in members:
            m.stop(signal.SIGKILL, timeout=10)


def test_offset_delete_and_group_admin_across_group_types(kip848_broker: BrokerProcess, topic: str) -> None:
    """OffsetDelete against a live consumer group: GROUP_SUBSCRIBED_TO_TOPIC for the topic its member subscribes
    to, allowed for another topic (Kafka's rule); ListGroups / DescribeGroups (confluent-kafka's admin: KIP-848
    ConsumerGroupDescribe, falling back to DescribeGroups for the classic group) / DeleteGroups across a classic
    and a consumer group."""
    from confluent_kafka import (
        ConsumerGroupState,
        ConsumerGroupTopicPartitions,
        ConsumerGroupType,
        TopicPartition,
    )
    from test_groups_support import admin

    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import OffsetDeleteRequest

    bs = kip848_broker.bootstrap
    other = f"{topic}-other"
    create_topic(bs, topic, 2)
    create_topic(bs, other, 1)
    group, classic_group = f"k848o-{uuid.uuid4().hex[:8]}", f"k848oc-{uuid.uuid4().hex[:8]}"
    adm = admin(bs)
    # offsets committed while the group does not exist yet (a simple commit), carried into the consumer group;
    # first wait out a new Kafka's NOT_COORDINATOR while it creates and loads __consumer_offsets (the admin API
    # reports it per partition, without raising)
    committed(bs, group, other, 1)
    altered = adm.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [TopicPartition(other, 0, 5), TopicPartition(topic, 0, 0)])])[group].result(30)
    assert all(tp.error is None for tp in altered.topic_partitions), altered.topic_partitions
    assert committed(bs, group, other, 1) == {0: 5}
    m = start_member("confluent-kafka", bs, topic, group, "live")
    c = start_member("confluent-kafka", bs, topic, classic_group, "classic", protocol="classic")
    try:
        wait_for(lambda: covers([m], topic, 2) and covers([c], topic, 2), 90, "both groups assigned", [m, c])

        def delete(tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
            T = OffsetDeleteRequest.OffsetDeleteRequestTopic
            P = OffsetDeleteRequest.OffsetDeleteRequestPartition
            by: dict[str, list[int]] = {}
            for t, p in tps:
                by.setdefault(t, []).append(p)
            with RawClient(kip848_broker.host, kip848_broker.port) as rc:
                r = rc.request(OffsetDeleteRequest(group_id=group, topics=[
                    T(name=t, partitions=[P(partition_index=p) for p in ps]) for t, ps in by.items()]), 0)
            assert r.error_code == 0
            return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}

        assert delete([(topic, 0), (other, 0)]) == {(topic, 0): 86, (other, 0): 0}   # GROUP_SUBSCRIBED_TO_TOPIC
        assert committed(bs, group, other, 1) == {0: -1001}                          # gone
        assert committed(bs, group, topic, 1)[0] >= 0                                # kept

        listed = {g.group_id: (g.type.name, g.state.name)
                  for g in adm.list_consumer_groups(request_timeout=30).result(30).valid}
        assert listed[group] == ("CONSUMER", "STABLE") and listed[classic_group] == ("CLASSIC", "STABLE")
        only = adm.list_consumer_groups(request_timeout=30, types={ConsumerGroupType.CLASSIC}).result(30).valid
        assert classic_group in {g.group_id for g in only} and group not in {g.group_id for g in only}
        d = adm.describe_consumer_groups([group, classic_group], request_timeout=30)
        dc, dk = d[group].result(30), d[classic_group].result(30)
        assert (dc.type.name, dc.state, len(dc.members)) == ("CONSUMER", ConsumerGroupState.STABLE, 1)
        assert (dk.type.name, dk.state, len(dk.members)) == ("CLASSIC", ConsumerGroupState.STABLE, 1)
        assert sorted(p.partition for p in dc.members[0].assignment.topic_partitions) == [0, 1]

        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            adm.delete_consumer_groups([group], request_timeout=30)[group].result(30)
        m.stop(signal.SIGTERM)
        c.stop(signal.SIGTERM)
        adm.delete_consumer_groups([group, classic_group], request_timeout=30)[group].result(30)
        left = {g.group_id for g in adm.list_consumer_groups(request_timeout=30).result(30).valid}
        assert group not in left
        assert committed(bs, group, topic, 1) == {0: -1001}
    finally:
        m.stop(signal.SIGKILL, timeout=10)
        c.stop(signal.SIGKILL, timeout=10)
