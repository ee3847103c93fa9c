"""Consumer-group drivers for the group compatibility tests (no tests in this module).

One function per client that joins a group, reads ``count`` records from a subscribed topic, commits
synchronously and closes, returning what it read and how long the first record took (from creating the
consumer, at the client's default settings). Java and kafkajs run small programs of our own (compiled /
written on first use into a cache directory) since the shared drivers know no groups.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.tests.support.requires import missing  # skip loudly; fail under CI=true (one rule)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
JAVA_DEPS = REPO / ".deps" / "java"
JAVA4_DEPS = REPO / ".deps" / "java4"   # kafka-clients 4.4.0 (tools/bootstrap.sh java4)
NODE_MODULES = HERE / "node_modules"
CACHE = Path(os.environ.get("KAFKALITE_GROUPS_CACHE", "/tmp/kafkalite-groups-compat"))

PY_CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")
ALL_CLIENTS = (*PY_CLIENTS, "java", "kafkajs")
# the group members of the clients added in #24: Java 4.4 (GroupConsume compiled against it) and the Go and Rust
# drivers' group_consume (harness/clients/native.py); rskafka has no consumer groups
NEW_GROUP_CLIENTS = ("java4", "franz-go", "sarama", "kafka-go", "rust-rdkafka")


def write_script(path: Path, text: str) -> None:
    """Write a driver script only if it changed, atomically (temp file + rename): member processes
    started a moment earlier may still be opening the file, and rewriting it in place could hand them
    an empty or half-written script."""
    if path.exists() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)




@dataclass
class GroupRead:
    records: list[tuple[int, int, bytes]] = field(default_factory=list)  # (partition, offset, value)
    first_s: float | None = None  # consumer creation -> first record

    @property
    def values(self) -> list[bytes]:
        return [v for _, _, v in self.records]


# -- producing / admin (confluent-kafka, the most forgiving client) --------------------------------------
def produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for partition, value in values:
        p.produce(topic, value, partition=partition)
    assert p.flush(30) == 0


def admin(bootstrap: str):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch through a consumer that never joins the group).

    A freshly (re)started Apache Kafka answers NOT_COORDINATOR and then COORDINATOR_LOAD_IN_PROGRESS until it
    has loaded its ``__consumer_offsets`` partitions; clients retry those, and so does this helper. (Through a
    consumer, not the admin API: retrying list_consumer_group_offsets crashed librdkafka 2.16 with an unserved
    background event.)"""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
    from harness.broker import reference_run

    if not reference_run():   # kafkalite: one OffsetFetch through the admin API (no coordinator loading to wait out)
        from confluent_kafka import ConsumerGroupTopicPartitions

        adm = admin(bootstrap)  # keep a reference: a collected AdminClient never completes its futures
        fut = adm.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])])
        res = fut[group].result(30)
        return {tp.partition: tp.offset for tp in res.topic_partitions}
    retriable = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                 KafkaError.COORDINATOR_NOT_AVAILABLE}
    deadline = time.monotonic() + 30
    while True:
        # read_uncommitted: librdkafka then asks OffsetFetch with require_stable=false, as the admin API does
        # (offsets pending in an open transaction do not hold the answer back)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                      "isolation.level": "read_uncommitted"})
        try:
            got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
            return {tp.partition: tp.offset for tp in got}
        except KafkaException as e:
            if e.args[0].code() not in retriable or time.monotonic() > deadline:
                raise
        finally:
            c.close()
        time.sleep(0.2)


# -- python clients --------------------------------------------------------------------------------------
def _kafka_python(bootstrap: str, topic: str, group: str, count: int, timeout_s: float,
                  assignor: str | None) -> GroupRead:
    from kafka import KafkaConsumer

    kw = {}
    if assignor == "roundrobin":
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        kw["partition_assignment_strategy"] = [RoundRobinPartitionAssignor]
    t0 = time.monotonic()
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, **kw)
    # topic metadata before the first poll (= the first JoinGroup): works around a kafka-python 3.0.12
    # hang (see the kafka-python member in test_groups_rebalance.py)
    while not c.partitions_for_topic(topic) and time.monotonic() - t0 < timeout_s:
        time.sleep(0.1)
    out = GroupRead()
    try:
        while len(out.records) < count and time.monotonic() - t0 < timeout_s:
            for msgs in c.poll(timeout_ms=200).values():
                for m in msgs:
                    if out.first_s is None:
                        out.first_s = time.monotonic() - t0
                    out.records.append((m.partition, m.offset, m.value))
        c.commit()
    finally:
        c.close()
    return out


def _confluent(bootstrap: str, topic: str, group: str, count: int, timeout_s: float,
               assignor: str | None, instance_id: str | None = None) -> GroupRead:
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}
    if assignor:
        conf["partition.assignment.strategy"] = assignor
    if instance_id:
        conf["group.instance.id"] = instance_id
    t0 = time.monotonic()
    c = Consumer(conf)
    c.subscribe([topic])
    out = GroupRead()
    try:
        while len(out.records) < count and time.monotonic() - t0 < timeout_s:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                raise AssertionError(f"confluent-kafka consumer error: {m.error()}")
            if out.first_s is None:
                out.first_s = time.monotonic() - t0
            out.records.append((m.partition(), m.offset(), m.value()))
        if out.records:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return out


def _aiokafka(bootstrap: str, topic: str, group: str, count: int, timeout_s: float,
              assignor: str | None) -> GroupRead:
    async def run() -> GroupRead:
        from aiokafka import AIOKafkaConsumer

        t0 = time.monotonic()
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False)
        await c.start()
        out = GroupRead()
        try:
            while len(out.records) < count and time.monotonic() - t0 < timeout_s:
                batch = await c.getmany(timeout_ms=200)
                for msgs in batch.values():
                    for m in msgs:
                        if out.first_s is None:
                            out.first_s = time.monotonic() - t0
                        out.records.append((m.partition, m.offset, m.value))
            await c.commit()
        finally:
            await c.stop()
        return out

    return asyncio.run(run())


# -- Java ------------------------------------------------------------------------------------------------
JAVA_SRC = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

public class GroupConsume {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], group = a[2];
        int count = Integer.parseInt(a[3]);
        String assignor = a[4];
        long timeoutMs = Long.parseLong(a[5]);
        long t0 = System.nanoTime();
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        if (!assignor.equals("default")) p.put("partition.assignment.strategy", assignor);
        if (a.length > 6) p.put("group.instance.id", a[6]);
        StringBuilder out = new StringBuilder("{\"records\":[");
        long first = -1;
        int n = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(Collections.singletonList(topic));
            while (n < count && (System.nanoTime() - t0) / 1_000_000 < timeoutMs) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (first < 0) first = (System.nanoTime() - t0) / 1_000_000;
                    if (n > 0) out.append(',');
                    out.append('[').append(r.partition()).append(',').append(r.offset()).append(",\"")
                       .append(new String(r.value(), "UTF-8")).append("\"]");
                    n++;
                }
            }
            c.commitSync();
        }
        out.append("],\"first_ms\":").append(first).append('}');
        System.out.println(out);
    }
}
"""


def _java_classes(deps: Path = JAVA_DEPS) -> Path:
    javac = shutil.which("javac")
    jars = sorted(deps.glob("*.jar"))
    if javac is None or not jars:
        missing(f"javac or the Java kafka-clients jars ({deps}) are not installed")
    out = CACHE / deps.name
    cls = out / "GroupConsume.class"
    src = out / "GroupConsume.java"
    if not (cls.exists() and src.exists() and src.read_text() == JAVA_SRC):
        out.mkdir(parents=True, exist_ok=True)
        src.write_text(JAVA_SRC)
        subprocess.run([javac, "-cp", ":".join(map(str, jars)), "-d", str(out), str(src)], check=True,
                       capture_output=True, timeout=180)
    return out


def _java(bootstrap: str, topic: str, group: str, count: int, timeout_s: float, assignor: str | None,
          instance_id: str | None = None, deps: Path = JAVA_DEPS) -> GroupRead:
    classes = _java_classes(deps)
    cp = ":".join([str(classes), *map(str, sorted(deps.glob("*.jar")))])
    strategy = {"cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                "range": "org.apache.kafka.clients.consumer.RangeAssignor",
                "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor"}.get(assignor or "", "default")
    args = [bootstrap, topic, group, str(count), strategy, str(int(timeout_s * 1000))]
    if instance_id:
        args.append(instance_id)
    proc = subprocess.run(["java", "-cp", cp, "GroupConsume", *args], capture_output=True, timeout=timeout_s + 60)
    if proc.returncode != 0:
        raise AssertionError(f"java GroupConsume failed: {proc.stderr.decode()[-3000:]}")
    line = [x for x in proc.stdout.decode().splitlines() if x.startswith("{")][-1]
    data = json.loads(line)
    return GroupRead([(p, o, v.encode()) for p, o, v in data["records"]],
                     data["first_ms"] / 1000 if data["first_ms"] >= 0 else None)


# -- kafkajs ---------------------------------------------------------------------------------------------
NODE_SRC = r"""
const { Kafka, logLevel } = require('kafkajs');
const [bootstrap, topic, group, countS, timeoutS] = process.argv.slice(2);
const count = parseInt(countS), timeoutMs = parseInt(timeoutS);
(async () => {
  const t0 = Date.now();
  const kafka = new Kafka({ brokers: [bootstrap], clientId: 'groups-compat', logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId: group });
  const records = []; let first = -1; let done;
  const finished = new Promise(r => { done = r; });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => {
    if (records.length >= count) return;
    if (first < 0) first = Date.now() - t0;
    records.push([partition, parseInt(message.offset), message.value.toString()]);
    await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
    if (records.length >= count) done();
  }});
  const timer = setTimeout(done, timeoutMs);
  await finished; clearTimeout(timer);
  await consumer.disconnect();
  console.log(JSON.stringify({ records, first_ms: first }));
})().catch(e => { console.error(e); process.exit(1); });
"""


def _kafkajs(bootstrap: str, topic: str, group: str, count: int, timeout_s: float,
             assignor: str | None) -> GroupRead:
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "kafkajs").is_dir():
        missing("node or compat-tests/node_modules/kafkajs is not installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    script = CACHE / "group_consume.js"
    write_script(script, NODE_SRC)
    proc = subprocess.run([node, str(script), bootstrap, topic, group, str(count), str(int(timeout_s * 1000))],
                          capture_output=True, timeout=timeout_s + 60, env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
    if proc.returncode != 0:
        raise AssertionError(f"kafkajs group consume failed: {proc.stderr.decode()[-3000:]}")
    data = json.loads([x for x in proc.stdout.decode().splitlines() if x.startswith("{")][-1])
    return GroupRead([(p, o, v.encode()) for p, o, v in data["records"]],
                     data["first_ms"] / 1000 if data["first_ms"] >= 0 else None)


def _kcat(bootstrap: str, topic: str, group: str, count: int, timeout_s: float, assignor: str | None) -> GroupRead:
    """kcat's balanced consumer (-G, librdkafka 2.0.2 on Debian): reads to the end (-e), auto-commits
    on exit. first_s is the whole run (kcat reports no per-record times)."""
    kcat = shutil.which("kcat")
    if kcat is None:
        missing("kcat is not installed")
    t0 = time.monotonic()
    proc = subprocess.run([kcat, "-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-e", "-q",
                           "-f", "%p %o %s\\n", topic], capture_output=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise AssertionError(f"kcat -G failed: {proc.stderr.decode()[-3000:]}")
    out = GroupRead(first_s=time.monotonic() - t0)
    for line in proc.stdout.decode().splitlines():
        p, o, v = line.split(" ", 2)
        out.records.append((int(p), int(o), v.encode()))
    return out


def _java4(bootstrap: str, topic: str, group: str, count: int, timeout_s: float, assignor: str | None,
           instance_id: str | None = None) -> GroupRead:
    return _java(bootstrap, topic, group, count, timeout_s, assignor, instance_id, deps=JAVA4_DEPS)


def line_driver_group_consume(name: str, bootstrap: str, topic: str, group: str, count: int, timeout_s: float,
                              config: dict[str, str] | None = None) -> GroupRead:
    """The client's driver (one process for this call): group_consume, committing after every poll."""
    from harness.clients import make_client

    c = make_client(name, CACHE / "driver-logs")
    reason = c.missing()
    if reason:
        missing(f"client {name}: {reason}")
    try:
        recs = c.group_consume(bootstrap, topic, count, group, timeout_s=timeout_s, config=config)  # type: ignore[attr-defined]
    finally:
        c.close()
    first = getattr(c, "last_first_ms", None)
    return GroupRead([(r.partition, r.offset or 0, r.value or b"") for r in recs],
                     first / 1000 if first is not None and first >= 0 else None)


def _line_driver(name: str):  # type: ignore[no-untyped-def]
    def run(bootstrap: str, topic: str, group: str, count: int, timeout_s: float, assignor: str | None) -> GroupRead:
        return line_driver_group_consume(name, bootstrap, topic, group, count, timeout_s)
    return run


DRIVERS = {"kcat": _kcat, "kafka-python": _kafka_python, "confluent-kafka": _confluent, "aiokafka": _aiokafka,
           "java": _java, "kafkajs": _kafkajs, "java4": _java4,
           **{n: _line_driver(n) for n in NEW_GROUP_CLIENTS if n != "java4"}}


def group_consume(client: str, bootstrap: str, topic: str, group: str, count: int, *, timeout_s: float = 60.0,
                  assignor: str | None = None, instance_id: str | None = None) -> GroupRead:
    """Join ``group``, read ``count`` records of ``topic``, commit what was read, close.

    ``instance_id`` (static membership) is supported by the Java and confluent-kafka drivers."""
    if instance_id:
        return DRIVERS[client](bootstrap, topic, group, count, timeout_s, assignor, instance_id)
    return DRIVERS[client](bootstrap, topic, group, count, timeout_s, assignor)


def run_members(fns: list) -> list:  # type: ignore[type-arg]
    """Run callables in threads at once and return their results (re-raising the first failure)."""
    results: list = [None] * len(fns)
    errors: list[BaseException] = []

    def wrap(i: int) -> None:
        try:
            results[i] = fns[i]()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
