"""(2) Several members split a topic's partitions; leaving and crashing members trigger rebalances.

Members are separate processes (Java kafka-clients 3.9 with the eager range and the cooperative-sticky
assignors; confluent-kafka, kafka-python and aiokafka members are small Python programs, kafkajs a
node script) that print every
assignment and record as JSON lines, commit synchronously after each batch and on revocation, and
leave the group on SIGTERM. Exactly-once reading is checked across the rebalances: every record is
read once, by one member.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from harness.topics import create_topic
from test_groups_support import CACHE, JAVA_DEPS, NODE_MODULES, committed, missing, produce, write_script

PARTITIONS = 6

JAVA_MEMBER = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

public class GroupMember {
    static volatile boolean stop = false;
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("group.id", a[2]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("session.timeout.ms", "6000");
        p.put("heartbeat.interval.ms", "500");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("partition.assignment.strategy", a[3]);
        final KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
        final Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true; c.wakeup();
            try { main.join(30000); } catch (InterruptedException e) { }
        }));
        final Set<TopicPartition> owned = new TreeSet<>(Comparator.comparing(TopicPartition::partition));
        c.subscribe(Collections.singletonList(a[1]), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                if (!parts.isEmpty()) c.commitSync();
                owned.removeAll(parts); report(owned);
            }
            public void onPartitionsAssigned(Collection<TopicPartition> parts) { owned.addAll(parts); report(owned); }
            public void onPartitionsLost(Collection<TopicPartition> parts) { owned.removeAll(parts); report(owned); }
        });
        boolean pending = false;   // records read whose commit was refused: commit again after the next poll
        try {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> r : rs)
                    System.out.println("{\"r\":[" + r.partition() + "," + r.offset() + ",\"" + new String(r.value(), "UTF-8") + "\"]}");
                System.out.flush();
                if (!rs.isEmpty() || pending) {
                    // KafkaConsumer.commitSync: RebalanceInProgressException while a rebalance is under way
                    // (cooperative-sticky hands out records during one); "complete the rebalance by calling
                    // poll() and then retry". The revocation callback commits what a lost partition had.
                    try { c.commitSync(); pending = false; }
                    catch (org.apache.kafka.common.errors.RebalanceInProgressException e) { pending = true; }
                }
            }
        } catch (org.apache.kafka.common.errors.WakeupException e) {
        } finally {
            c.close();
            System.out.println("{\"closed\":true}");
            System.out.flush();
        }
    }
    static void report(Set<TopicPartition> owned) {
        StringBuilder sb = new StringBuilder("{\"a\":[");
        boolean first = true;
        for (TopicPartition tp : owned) { if (!first) sb.append(','); sb.append(tp.partition()); first = false; }
        System.out.println(sb.append("]}"));
        System.out.flush();
    }
}
"""

PY_MEMBER = r"""
import json, signal, sys
client, bootstrap, topic, group = sys.argv[1:5]
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
def out(obj):
    print(json.dumps(obj), flush=True)
if client == "confluent-kafka":
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    owned = set()
    def assigned(cons, parts):
        owned.update(p.partition for p in parts); out({"a": sorted(owned)})
    def revoked(cons, parts):
        if parts:
            try:
                cons.commit(asynchronous=False)
            except Exception:
                pass
        owned.difference_update(p.partition for p in parts); out({"a": sorted(owned)})
    c.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
    from confluent_kafka import KafkaError, KafkaException
    pending = False   # records read whose commit was refused by a rebalance: commit again after the next poll
    while not stop:
        msgs = c.consume(100, 0.1)
        good = [m for m in msgs if not m.error()]
        for m in good:
            out({"r": [m.partition(), m.offset(), m.value().decode()]})
        if good or pending:
            try:
                c.commit(asynchronous=False)
                pending = False
            except KafkaException as exc:
                if exc.args[0].code() not in (KafkaError.REBALANCE_IN_PROGRESS, KafkaError._NO_OFFSET):
                    raise
                pending = exc.args[0].code() == KafkaError.REBALANCE_IN_PROGRESS
    c.close()
elif client == "aiokafka":
    import asyncio
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

    async def main():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500)
        owned = set()

        class L(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                if revoked:
                    await c.commit()
                owned.difference_update(p.partition for p in revoked); out({"a": sorted(owned)})

            async def on_partitions_assigned(self, assigned):
                owned.update(p.partition for p in assigned); out({"a": sorted(owned)})

        c.subscribe([topic], listener=L())
        await c.start()
        while not stop:
            batch = await c.getmany(timeout_ms=100)
            n = 0
            for _tp, msgs in batch.items():
                for m in msgs:
                    out({"r": [m.partition, m.offset, m.value.decode()]}); n += 1
            if n:
                await c.commit()
        await c.stop()

    asyncio.run(main())
else:
    import time
    from kafka import KafkaConsumer, ConsumerRebalanceListener
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500)
    owned = set()
    class L(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            # kafka-python 3 forbids blocking calls in a sync listener; every batch is already
            # committed right after it is read, so nothing is pending here
            owned.difference_update(p.partition for p in revoked); out({"a": sorted(owned)})
        def on_partitions_assigned(self, assigned):
            owned.update(p.partition for p in assigned); out({"a": sorted(owned)})
    c.subscribe([topic], listener=L())
    # kafka-python 3.0.12 can hang forever if its first join happens before it has the topic's
    # metadata: the leader then rejoins only because its metadata snapshot changed, and if poll()
    # times out while that join is in flight, the finished assignment sets the snapshot equal again,
    # need_rejoin() turns False and the in-flight join is never completed (heartbeats stay off, no
    # partitions). Having the metadata before the first poll (= the first JoinGroup) avoids it.
    while not c.partitions_for_topic(topic):
        time.sleep(0.1)
    while not stop:
        batch = c.poll(timeout_ms=100)
        n = 0
        for _tp, msgs in batch.items():
            for m in msgs:
                out({"r": [m.partition, m.offset, m.value.decode()]}); n += 1
        if n:
            c.commit()
    c.close()
out({"closed": True})
"""


NODE_MEMBER = r"""
const { Kafka, logLevel } = require('kafkajs');
const [bootstrap, topic, group] = process.argv.slice(2);
const out = o => process.stdout.write(JSON.stringify(o) + "\n");
(async () => {
  const kafka = new Kafka({ brokers: [bootstrap], clientId: 'groups-member', logLevel: logLevel.NOTHING });
  // kafkajs heartbeats (and so learns of a rebalance) only between fetches: with the default 5 s
  // fetch long poll every join, leave and rebalance waited up to 5 s
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500,
                                    maxWaitTimeInMs: 500 });
  consumer.on(consumer.events.GROUP_JOIN, e => {
    const parts = (e.payload.memberAssignment[topic] || []).slice().sort((x, y) => x - y);
    out({ a: parts });
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatch: async ({ batch }) => {
    if (batch.messages.length === 0) return;
    for (const m of batch.messages) out({ r: [batch.partition, parseInt(m.offset), m.value.toString()] });
    await consumer.commitOffsets([{ topic, partition: batch.partition,
                                    offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
  }});
  process.on('SIGTERM', async () => { await consumer.disconnect(); out({ closed: true }); process.exit(0); });
})().catch(e => { console.error(e); process.exit(1); });
"""


class Member:
    """One member process; a reader thread collects its JSON lines, another drains its stderr into a bounded
    tail (a pipe nobody reads fills at 64 KiB and then blocks the member on its next log line: kafkajs logs
    every retried error there during coordinator moves and restarts)."""

    def __init__(self, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     start_new_session=True)
        self.assignment: list[int] = []
        self.records: list[tuple[int, int, str]] = []
        self.closed = False
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        self._err_tail = bytearray()
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            with self.lock:
                self._err_tail += chunk
                del self._err_tail[:-6000]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            with self.lock:
                if "a" in msg:
                    self.assignment = msg["a"]
                elif "r" in msg:
                    self.records.append(tuple(msg["r"]))
                elif msg.get("closed"):
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

    def stderr(self) -> str:
        """The last 3000 characters the member wrote to stderr so far (waits briefly for the end if it exited)."""
        if self.proc.poll() is not None:
            self._err_thread.join(5)
        with self.lock:
            return bytes(self._err_tail).decode(errors="replace")[-3000:]


def _java_member_cp() -> str:
    javac = shutil.which("javac")
    jars = sorted(JAVA_DEPS.glob("*.jar"))
    if javac is None or not jars:
        missing("javac or the Java kafka-clients jars (.deps/java) are not installed")
    out = CACHE / "java-member"
    src = out / "GroupMember.java"
    if not ((out / "GroupMember.class").exists() and src.exists() and src.read_text() == JAVA_MEMBER):
        out.mkdir(parents=True, exist_ok=True)
        src.write_text(JAVA_MEMBER)
        subprocess.run([javac, "-cp", ":".join(map(str, jars)), "-d", str(out), str(src)], check=True,
                       capture_output=True, timeout=180)
    return ":".join([str(out), *map(str, jars)])


def start_member(kind: str, bootstrap: str, topic: str, group: str) -> Member:
    if kind.startswith("java-"):
        strategy = {"java-range": "org.apache.kafka.clients.consumer.RangeAssignor",
                    "java-cooperative": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}[kind]
        return Member(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", _java_member_cp(),
                       "GroupMember", bootstrap, topic, group, strategy])
    CACHE.mkdir(parents=True, exist_ok=True)
    if kind == "kafkajs":
        node = shutil.which("node")
        if node is None or not (NODE_MODULES / "kafkajs").is_dir():
            missing("node or compat-tests/node_modules/kafkajs is not installed")
        js = CACHE / "group_member.js"
        write_script(js, NODE_MEMBER)
        return Member([node, str(js), bootstrap, topic, group], env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
    script = CACHE / "py_member.py"
    write_script(script, PY_MEMBER)
    return Member([sys.executable, str(script), kind, bootstrap, topic, group], env=dict(os.environ))


def wait_for(cond, timeout: float, what: str, members: list[Member]) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    state = [(m.proc.poll(), m.assignment, len(m.records)) for m in members]
    errs = "\n".join(m.stderr() for m in members if m.proc.poll() not in (None, 0, -9))
    raise AssertionError(f"timed out waiting for {what}; members (rc, assignment, records): {state}\n{errs}")


def wait_committed(bootstrap: str, group: str, topic: str, total: int, members: list[Member]) -> None:
    """Wait until the group's committed offsets cover the first ``total`` records (``total / PARTITIONS``
    per partition: records are produced round-robin over the partitions)."""
    want = dict.fromkeys(range(PARTITIONS), total // PARTITIONS)
    wait_for(lambda: committed(bootstrap, group, topic, PARTITIONS) == want, 60,
             f"committed offsets {want}", members)


def _twice(members: list[Member]) -> str:
    """Which member read each record read more than once, at which (partition, offset) (failure messages)."""
    who: dict[tuple[int, int, str], list[int]] = {}
    for i, m in enumerate(members):
        for r in m.records:
            who.setdefault(r, []).append(i)
    dup = {r: ms for r, ms in who.items() if len(ms) > 1}
    return f"read twice (partition, offset, value): members {sorted(dup.items())[:20]}"


def covers(members: list[Member]) -> bool:
    parts = [p for m in members for p in m.assignment]
    return sorted(parts) == list(range(PARTITIONS)) and all(m.assignment for m in members)


def all_records(members: list[Member]) -> list[tuple[int, int, str]]:
    return [r for m in members for r in m.records]


KINDS = ["java-range", "java-cooperative", "confluent-kafka", "kafka-python", "aiokafka", "kafkajs"]


@pytest.mark.parametrize("kind", KINDS)
def test_members_split_rebalance_on_leave_and_crash(kind: str, broker, topic: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    group = f"rb-{uuid.uuid4().hex[:8]}"
    members = [start_member(kind, bs, topic, group) for _ in range(3)]
    try:
        wait_for(lambda: covers(members), 90, "three members to split the partitions", members)
        produce(bs, topic, [(i % PARTITIONS, f"a{i}".encode()) for i in range(60)])
        wait_for(lambda: len(all_records(members)) >= 60, 60, "60 records", members)
        wait_committed(bs, group, topic, 60, members)
        # a member leaves cleanly: the other two take over its partitions
        members[0].stop(signal.SIGTERM)
        assert members[0].closed
        rest = members[1:]
        wait_for(lambda: covers(rest), 60, "two members to cover every partition after a leave", members)
        produce(bs, topic, [(i % PARTITIONS, f"b{i}".encode()) for i in range(60, 90)])
        wait_for(lambda: len(all_records(members)) >= 90, 60, "90 records", members)
        wait_committed(bs, group, topic, 90, members)  # a crash must not lose a commit: no redelivery
        # a member crashes: after its session timeout the survivor owns everything
        rest[0].stop(signal.SIGKILL)
        survivor = rest[1]
        wait_for(lambda: covers([survivor]), 60, "the survivor to own every partition after a crash", members)
        produce(bs, topic, [(i % PARTITIONS, f"c{i}".encode()) for i in range(90, 120)])
        wait_for(lambda: len(all_records(members)) >= 120, 60, "120 records", members)
        time.sleep(1.0)
        recs = all_records(members)
        values = sorted(v for _p, _o, v in recs)
        expected = sorted([f"a{i}" for i in range(60)] + [f"b{i}" for i in range(60, 90)]
                          + [f"c{i}" for i in range(90, 120)])
        assert values == expected, "every record read exactly once across the rebalances; " + _twice(members)
    finally:
        for m in members:
            m.stop(signal.SIGKILL, timeout=10)


@pytest.mark.parametrize("kind", KINDS)
def test_live_member_survives_broker_restarts(kind: str, broker_factory, topic: str) -> None:
    """A member keeps consuming across a clean restart and a crash of the broker: the group and its
    offsets come back from __consumer_offsets, and nothing is read twice or lost."""
    b = broker_factory()
    create_topic(b.bootstrap, topic, PARTITIONS)
    group = f"lv-{uuid.uuid4().hex[:8]}"
    m = start_member(kind, b.bootstrap, topic, group)
    try:
        wait_for(lambda: covers([m]), 90, "the member to own every partition", [m])
        produce(b.bootstrap, topic, [(i % PARTITIONS, f"l{i}".encode()) for i in range(12)])
        wait_for(lambda: len(m.records) >= 12, 60, "12 records", [m])
        total = 12
        for sig in (signal.SIGTERM, signal.SIGKILL):
            wait_committed(b.bootstrap, group, topic, total, [m])  # the last commit has landed
            b.restart(sig)
            produce(b.bootstrap, topic, [(i % PARTITIONS, f"l{i}".encode()) for i in range(total, total + 12)])
            total += 12
            wait_for(lambda n=total: len(m.records) >= n, 90, f"{total} records after restart", [m])
        time.sleep(1.0)
        assert sorted(v for _p, _o, v in m.records) == sorted(f"l{i}" for i in range(total))
    finally:
        m.stop(signal.SIGKILL, timeout=10)
