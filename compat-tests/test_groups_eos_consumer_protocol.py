"""Exactly-once consume-transform-produce with the consumer in ``group.protocol=consumer`` (KIP-848), issue #30:
confluent-kafka 2.16.1 and the Java client 3.9.1.

Each member is a process with a KIP-848 consumer (read_committed, no auto-commit) and its own transactional
producer (KIP-447: one transactional.id per member). Per batch it begins a transaction, writes each input record
upper-cased to the output topic (same partition, the input value as key), holds the transaction open for a while
(so rebalances happen while it is open), sends the batch's next offsets with ``consumer_group_metadata()`` /
``groupMetadata()`` (member id + member epoch: TxnOffsetCommit v3+) and commits. An abortable error aborts the
transaction and rewinds the batch's partitions to their committed offsets. Members print JSON lines: assignment
changes ``{"a"}``, committed batches ``{"c"}``, refused transactions ``{"e"}``.

The group goes through: one member; a second joining (a rebalance while transactions are open); the first
leaving cleanly (SIGTERM, mid-stream); a third joining and the second being SIGKILLed with a transaction open
(its partitions move once its session times out; its transaction is aborted by the coordinator after
transaction.timeout.ms, 10 s here; the new owner's read_committed OffsetFetch waits for that: require_stable).

Checked with read_committed readers (confluent-kafka and the Java client): every input record's output is there
exactly once, and the group's committed offsets equal the input's end offsets (everything consumed committed).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.broker import BrokerProcess
from harness.topics import create_topic
from test_groups_consumer_protocol import BROKER_ARGS, Member, commit_start_offsets, wait_for
from test_groups_support import CACHE, JAVA4_DEPS, JAVA_DEPS, committed, missing, produce, write_script

PARTITIONS = 4
TXN_TIMEOUT_MS = 10_000
HOLD_S = 0.3   # how long each transaction stays open before its offsets are sent and it commits

PY_EOS = r"""
import json, signal, sys, time
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING
bootstrap, src, dst, group, txn_id, hold = sys.argv[1:7]
hold = float(hold)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
def out(obj):
    obj["t"] = time.time()
    print(json.dumps(obj), flush=True)
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
              "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": "read_committed"})
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": TXN_TIMEOUT_MS,
              "linger.ms": 5})
p.init_transactions(30)
owned = set()
def assigned(cons, parts):
    owned.update((x.topic, x.partition) for x in parts); out({"a": sorted(owned)})
def revoked(cons, parts):
    owned.difference_update((x.topic, x.partition) for x in parts); out({"a": sorted(owned)})
c.subscribe([src], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
while not stop:
    msgs = [m for m in c.consume(50, 0.2) if not m.error()]
    if not msgs:
        continue
    p.begin_transaction()
    nxt = {}
    for m in msgs:
        p.produce(dst, key=m.value(), value=m.value().upper(), partition=m.partition())
        nxt[(m.topic(), m.partition())] = m.offset() + 1
    time.sleep(hold)   # the transaction stays open while the group may rebalance
    try:
        meta = c.consumer_group_metadata()
        p.send_offsets_to_transaction([TopicPartition(t, q, o) for (t, q), o in nxt.items()], meta, 30)
        p.commit_transaction(30)
        out({"c": [[t, q, o] for (t, q), o in sorted(nxt.items())], "n": len(msgs)})
    except KafkaException as exc:
        err = exc.args[0]
        out({"e": f"{err.name()}: {err.str()}", "abortable": err.txn_requires_abort(), "fatal": err.fatal()})
        if not err.txn_requires_abort():
            raise
        p.abort_transaction(30)
        mine = [TopicPartition(t, q) for (t, q) in nxt if (t, q) in owned]
        for tp in (c.committed(mine, 30) if mine else []):
            c.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
c.close()
p.flush(30)
out({"closed": True})
""".replace("TXN_TIMEOUT_MS", str(TXN_TIMEOUT_MS))

JAVA_EOS = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.*;

public class Kip848Eos {
    static volatile boolean stop = false;
    static void out(String json) {
        System.out.println(json.substring(0, json.length() - 1) + ",\"t\":" + System.currentTimeMillis() / 1000.0 + "}");
        System.out.flush();
    }
    public static void main(String[] a) throws Exception {
        String bs = a[0], src = a[1], dst = a[2], group = a[3], txnId = a[4];
        long holdMs = Long.parseLong(a[5]);
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bs);
        cp.put("group.id", group);
        cp.put("group.protocol", "consumer");
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        cp.put("isolation.level", "read_committed");
        cp.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        cp.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bs);
        pp.put("transactional.id", txnId);
        pp.put("transaction.timeout.ms", a[6]);
        pp.put("linger.ms", "5");
        pp.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        pp.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        final KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
        final KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp);
        p.initTransactions();
        final Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop = true; c.wakeup();
            try { main.join(30000); } catch (InterruptedException e) { }
        }));
        final Set<TopicPartition> owned = new HashSet<>();
        c.subscribe(Collections.singletonList(src), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> parts) { owned.removeAll(parts); report(owned); }
            public void onPartitionsAssigned(Collection<TopicPartition> parts) { owned.addAll(parts); report(owned); }
            public void onPartitionsLost(Collection<TopicPartition> parts) { owned.removeAll(parts); report(owned); }
        });
        try {
            while (!stop) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
                if (rs.isEmpty()) continue;
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new TreeMap<>(
                    Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    String v = new String(r.value(), "UTF-8");
                    p.send(new ProducerRecord<>(dst, r.partition(), r.value(), v.toUpperCase().getBytes("UTF-8")));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                Thread.sleep(holdMs);   // the transaction stays open while the group may rebalance
                try {
                    p.sendOffsetsToTransaction(next, c.groupMetadata());
                    p.commitTransaction();
                    StringBuilder sb = new StringBuilder("{\"c\":[");
                    boolean first = true;
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
                        if (!first) sb.append(',');
                        sb.append("[\"").append(e.getKey().topic()).append("\",").append(e.getKey().partition())
                          .append(',').append(e.getValue().offset()).append(']');
                        first = false;
                    }
                    out(sb.append("],\"n\":").append(rs.count()).append('}').toString());
                } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException e) {
                    throw e;
                } catch (KafkaException e) {
                    out("{\"e\":\"" + e.toString().replace("\\", "/").replace("\"", "'") + "\",\"abortable\":true}");
                    p.abortTransaction();
                    Set<TopicPartition> mine = new HashSet<>(next.keySet());
                    mine.retainAll(c.assignment());
                    Map<TopicPartition, OffsetAndMetadata> com = mine.isEmpty() ? Collections.emptyMap() : c.committed(mine);
                    for (TopicPartition tp : mine) {
                        OffsetAndMetadata o = com.get(tp);
                        if (o != null) c.seek(tp, o.offset()); else c.seekToBeginning(Collections.singletonList(tp));
                    }
                }
            }
        } catch (WakeupException e) {
        } finally {
            c.close();
            p.close();
            out("{\"closed\":true}");
        }
    }
    static void report(Set<TopicPartition> owned) {
        StringBuilder sb = new StringBuilder("{\"a\":[");
        boolean first = true;
        for (TopicPartition tp : owned) {
            if (!first) sb.append(',');
            sb.append("[\"").append(tp.topic()).append("\",").append(tp.partition()).append(']');
            first = false;
        }
        out(sb.append("]}").toString());
    }
}
"""


class EosMember(Member):
    """A member process; besides assignments it reports committed batches and refused transactions."""

    def __init__(self, cmd: list[str], name: str) -> None:
        self.commits: list[tuple[float, list[tuple[str, int, int]], int]] = []
        self.refused: list[dict] = []
        super().__init__(cmd, name)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if "a" in msg:
                self.assignment = [(t, p) for t, p in msg["a"]]
                self.history.append((msg["t"], frozenset(self.assignment)))
            elif "c" in msg:
                self.commits.append((msg["t"], [tuple(x) for x in msg["c"]], msg["n"]))
            elif "e" in msg:
                self.refused.append(msg)
                self.errors.append(f"{msg['t']:.3f} {msg['e']}")
            elif msg.get("closed"):
                self.history.append((msg["t"], frozenset()))
                self.closed = True


def _java_cp(deps: Path = JAVA_DEPS) -> str:
    """The member compiled against the jars of ``deps`` (.deps/java: 3.9.1; .deps/java4: 4.4.0)."""
    import shutil

    javac = shutil.which("javac")
    jars = sorted(deps.glob("*.jar"))
    if javac is None or not jars:
        missing(f"javac or the Java kafka-clients jars ({deps}) are not installed")
    out = CACHE / f"kip848-{deps.name}-eos"
    src = out / "Kip848Eos.java"
    if not ((out / "Kip848Eos.class").exists() and src.exists() and src.read_text() == JAVA_EOS):
        out.mkdir(parents=True, exist_ok=True)
        src.write_text(JAVA_EOS)
        subprocess.run([javac, "-cp", ":".join(map(str, jars)), "-d", str(out), str(src)], check=True,
                       capture_output=True, timeout=180)
    return ":".join([str(out), *map(str, jars)])


def start_eos_member(kind: str, bootstrap: str, src: str, dst: str, group: str, name: str) -> EosMember:
    txn_id = f"{group}-{name}"   # KIP-447: each member its own transactional id
    if kind in ("java", "java4"):
        cp = _java_cp(JAVA4_DEPS if kind == "java4" else JAVA_DEPS)
        return EosMember(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "Kip848Eos",
                          bootstrap, src, dst, group, txn_id, str(int(HOLD_S * 1000)), str(TXN_TIMEOUT_MS)], name)
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        missing("confluent-kafka is not installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    script = CACHE / "kip848_eos_member.py"
    write_script(script, PY_EOS)
    return EosMember([sys.executable, str(script), bootstrap, src, dst, group, txn_id, str(HOLD_S)], name)


@pytest.fixture
def eos_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", extra_args=BROKER_ARGS)
    b.start()
    try:
        yield b
    finally:
        b.kill()


def read_committed_confluent(bs: str, topic: str, partitions: int, count: int,
                             timeout_s: float = 90.0) -> list[tuple[int, str]]:
    """(partition, value) of ``topic``'s records by a read_committed reader: until ``count`` are read (a
    crashed member's open transaction holds the last stable offset back until the coordinator aborts it), then
    two more seconds for any record too many."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"r-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    out: list[tuple[int, str]] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        extra = None
        while time.monotonic() < deadline and (extra is None or time.monotonic() < extra):
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append((m.partition(), m.value().decode()))
            if extra is None and len(out) >= count:
                extra = time.monotonic() + 2
        return out
    finally:
        c.close()


def read_committed_java(get_client, bs: str, topic: str, partitions: int, count: int) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    recs = get_client("java").consume(bs, topic, list(range(partitions)), count, timeout_s=60.0,
                                      config={"isolation.level": "read_committed"})
    return [(r.partition, r.value.decode()) for r in recs]


def _end_offsets(inputs: dict[int, int]) -> dict[int, int]:
    return {p: inputs.get(p, 0) for p in range(PARTITIONS)}


@pytest.mark.parametrize("kind", ["confluent-kafka", "java", "java4"])
def test_eos_consume_transform_produce_across_rebalances(kind: str, eos_broker: BrokerProcess, get_client,
                                                         topic: str) -> None:
    b = eos_broker
    bs = b.bootstrap
    src, dst, group = f"{topic}-in", f"{topic}-out", f"eos848-{uuid.uuid4().hex[:8]}"
    create_topic(bs, src, PARTITIONS)
    create_topic(bs, dst, PARTITIONS)
    commit_start_offsets(bs, group, src, PARTITIONS)   # see test_groups_consumer_protocol.commit_start_offsets
    sent: list[tuple[int, str]] = []

    def more(tag: str, n: int) -> None:
        batch = [(i % PARTITIONS, f"{tag}{i}") for i in range(n)]
        produce(bs, src, [(p, v.encode()) for p, v in batch])
        sent.extend(batch)

    def all_committed(what: str, members: list[EosMember], timeout: float = 120) -> None:
        want = _end_offsets(dict(Counter(p for p, _ in sent)))
        wait_for(lambda: committed(bs, group, src, PARTITIONS) == want, timeout, f"{what}: offsets {want}", members)

    members: list[EosMember] = []
    try:
        members.append(start_eos_member(kind, bs, src, dst, group, "m0"))
        more("a", 40)
        all_committed("one member", members)
        members.append(start_eos_member(kind, bs, src, dst, group, "m1"))   # a rebalance with transactions open
        for k in range(6):
            more(f"b{k}-", 10)
            time.sleep(0.5)
        wait_for(lambda: all(m.assignment for m in members), 90, "both members to own partitions", members)
        all_committed("two members", members)
        members[0].stop(signal.SIGTERM)                                     # a member leaves, mid-stream
        more("c", 40)
        all_committed("after a leave", members)
        members.append(start_eos_member(kind, bs, src, dst, group, "m2"))
        wait_for(lambda: members[2].assignment and len(members[1].assignment) < PARTITIONS, 90,
                 "the third member to take partitions", members)
        more("d", 40)
        time.sleep(HOLD_S / 2)
        members[1].stop(signal.SIGKILL)                                     # a crash, maybe with a transaction open
        more("e", 40)
        all_committed("after a crash", members, timeout=150)
    finally:
        for m in members:
            m.stop(signal.SIGKILL, timeout=10)

    refused = [e for m in members for e in m.refused]
    assert all(e.get("abortable") for e in refused), f"a transaction failed for good: {refused}"
    assert sum(len(m.commits) for m in members) >= 3
    assert sum(1 for _t, a in members[0].history if a) >= 2, "m0's assignment changed while it worked (rebalance)"
    want = Counter((p, v.upper()) for p, v in sent)
    got = Counter(read_committed_confluent(bs, dst, PARTITIONS, sum(want.values())))
    assert got == want, (f"outputs not exactly once: missing {want - got}, extra {got - want}; "
                         f"refused {refused}")
    got_java = Counter(read_committed_java(get_client, bs, dst, PARTITIONS, sum(want.values())))
    assert got_java == want
    assert committed(bs, group, src, PARTITIONS) == _end_offsets(dict(Counter(p for p, _ in sent)))
    if os.environ.get("KIP848_EOS_REPORT"):
        print({m.name: (len(m.commits), m.errors) for m in members})
