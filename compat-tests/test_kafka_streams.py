"""Kafka Streams 4.4 applications (compat-tests/streams/EcoStreams.java, built with javac against the jars of
``tools/bootstrap.sh eco``) against a kafkalite process.

- a word count with a persistent (RocksDB) store under ``processing.guarantee=exactly_once_v2``: the
  repartition and changelog topics are created with the partitions and the configs Streams asks for; the
  Streams JVM is SIGKILLed mid-run and restarted (its store restored from the changelog); the committed output
  holds every word's counts strictly increasing and ending at the exact count;
- a windowed count (10 s tumbling windows, 5 s grace) where records later than the grace are dropped;
- a foreign-key table join whose results follow updates to both tables;
- two instances with ``num.standby.replicas=1``: each count task active on one and a standby on the other; one
  instance SIGKILLed (the other takes every task over), then the broker SIGKILLed and restarted; counts exact;
- Kafka 4.4's ``kafka-streams-application-reset`` (StreamsResetter) resets the stopped application's input
  offsets and deletes its internal topics; the next run counts everything again, exactly.

Exact expectations are computed here from what was produced.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import struct
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import eco

from conftest import missing

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

WAIT_S = 180.0  # a hang bound on 2 shared cores, not a speed assertion
VOCAB = ["kafka", "streams", "lite", "broker", "topic", "record", "offset", "commit", "state", "store", "join"]


@pytest.fixture(scope="module")
def streams_ready() -> None:
    reason = eco.streams_missing()
    if reason:
        missing(reason)
    eco.compile_streams_apps()


def _committed(bootstrap: str, group: str, topic: str, partition: int) -> tuple[int, bytes]:
    """(offset, metadata bytes) the group committed, by OffsetFetch v8 straight from the broker (one broker: it is
    the coordinator)."""
    from differential.wireconn import WireConn

    from kafkalite_wire.messages import OffsetFetchRequest as OF

    with WireConn(bootstrap) as conn:
        r = conn.request(OF(groups=[OF.OffsetFetchRequestGroup(group_id=group, topics=[
            OF.OffsetFetchRequestTopics(name=topic, partition_indexes=[partition])])], require_stable=True), 8)
    (g,) = r.groups
    assert g.error_code == 0, g
    (p,) = g.topics[0].partitions
    assert p.error_code == 0, p
    return p.committed_offset, (p.metadata or "").encode("utf-8", "surrogateescape")


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        f.result(timeout=30)


def produce(bootstrap: str, topic: str, records: list[tuple[str, str | None]],
            timestamps: list[int] | None = None, partition: int | None = None) -> None:
    pr = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i, (k, v) in enumerate(records):
        kw: dict[str, Any] = {"key": k, "value": v}
        if timestamps is not None:
            kw["timestamp"] = timestamps[i]
        if partition is not None:
            kw["partition"] = partition
        pr.produce(topic, **kw)
    assert pr.flush(60) == 0


def read_all(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[tuple[int, int, bytes, bytes]]:
    """(partition, offset, key, value) of every record up to the end (the LSO under read_committed)."""
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30).topics[topic]
    parts = sorted(meta.partitions)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eco-check", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    out: list[tuple[int, int, bytes, bytes]] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while len(eof) < len(parts) and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            if m.error():
                eof.add(m.partition())
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value()))
    c.close()
    assert len(eof) == len(parts), f"no end of partition seen on {topic}"
    return out


class StreamsApp:
    """One Streams JVM (its own session, so its process group is ours to signal)."""

    def __init__(self, mode: str, bootstrap: str, app_id: str, state_dir: Path, log: Path, *props: str) -> None:
        self.log = log
        self._from = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as f:
            self.proc = subprocess.Popen(eco.streams_command("EcoStreams", mode, bootstrap, app_id, str(state_dir),
                                                             *props), stdout=f, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def text(self) -> str:
        return self.log.read_bytes()[self._from:].decode(errors="replace")

    def wait_state(self, state: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while f"STATE {state}" not in self.text():
            assert self.proc.poll() is None, f"Streams exited ({self.proc.returncode}):\n{self.text()[-6000:]}"
            assert time.monotonic() < deadline, f"no {state} in {WAIT_S}s:\n{self.text()[-6000:]}"
            time.sleep(0.2)

    def kill(self, sig: int = signal.SIGKILL) -> int:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(30)


@pytest.fixture
def apps() -> Iterator[list[StreamsApp]]:
    started: list[StreamsApp] = []
    yield started
    for a in started:
        if a.proc.poll() is None:
            a.kill(signal.SIGKILL)


def wait_until(cond: Callable[[], bool], what: str, app: StreamsApp) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert app.proc.poll() is None, f"Streams exited ({app.proc.returncode}):\n{app.text()[-6000:]}"
        assert time.monotonic() < deadline, f"{what} not reached in {WAIT_S}s:\n{app.text()[-6000:]}"
        time.sleep(0.5)


def dynamic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """The topic's configs set at creation (source DYNAMIC_TOPIC_CONFIG)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([res])[res].result(timeout=30)
    return {k: e.value for k, e in entries.items()
            if e.source == 1}  # ConfigSource.DYNAMIC_TOPIC_CONFIG


def _line(i: int) -> str:
    return f"{VOCAB[i % 7]} {VOCAB[(i * 3) % 11]}, {VOCAB[i % 5].upper()}!"


def test_wordcount_exactly_once_v2_across_sigkill(broker: Any, streams_ready: None, tmp_path: Path,
                                                  apps: list[StreamsApp]) -> None:
    bs, app_id = broker.bootstrap, "eco-wc"
    create_topics(bs, {"wc-in": 2, "wc-out": 2})
    lines = [_line(i) for i in range(1200)]
    want = Counter(w for line in lines for w in line.lower().replace(",", " ").replace("!", " ").split())
    produce(bs, "wc-in", [(f"l{i}", line) for i, line in enumerate(lines[:600])])
    log, state = tmp_path / "streams.log", tmp_path / "state"
    eos = "processing.guarantee=exactly_once_v2"
    apps.append(StreamsApp("wordcount", bs, app_id, state, log, eos))
    apps[-1].wait_state("RUNNING")
    wait_until(lambda: len(read_all(bs, "wc-out")) > 0, "first committed counts", apps[-1])

    # the internal topics, as Streams asked for them (KafkaStreams 4.4: RepartitionTopicConfig,
    # UnwindowedUnversionedChangelogTopicConfig, InternalTopicConfig's message.timestamp.type)
    topics = AdminClient({"bootstrap.servers": bs}).list_topics(timeout=30).topics
    assert {t: len(topics[t].partitions) for t in topics if t.startswith(app_id)} == {
        f"{app_id}-words-repartition": 2, f"{app_id}-counts-changelog": 2}
    assert dynamic_configs(bs, f"{app_id}-words-repartition") == {
        "cleanup.policy": "delete", "segment.bytes": "52428800", "retention.ms": "-1",
        "message.timestamp.type": "CreateTime"}
    assert dynamic_configs(bs, f"{app_id}-counts-changelog") == {
        "cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}

    # more input while it runs, SIGKILL mid-run, the rest, restart on the same state dir
    produce(bs, "wc-in", [(f"l{i}", lines[i]) for i in range(600, 900)])
    assert apps[-1].kill(signal.SIGKILL) == -signal.SIGKILL
    produce(bs, "wc-in", [(f"l{i}", lines[i]) for i in range(900, 1200)])
    apps.append(StreamsApp("wordcount", bs, app_id, state, log, eos))

    def final() -> dict[str, int]:
        last: dict[str, int] = {}
        for _, _, k, v in read_all(bs, "wc-out"):
            last[k.decode()] = struct.unpack(">q", v)[0]
        return last

    wait_until(lambda: final() == dict(want), "the exact final counts", apps[-1])
    # exactly once: per word, the committed counts only ever grow (a replay would restart below a seen count
    # or overshoot); every word's last count is exact
    seen: dict[str, list[int]] = {}
    for _, _, k, v in sorted(read_all(bs, "wc-out"), key=lambda r: (r[0], r[1])):
        seen.setdefault(k.decode(), []).append(struct.unpack(">q", v)[0])
    for word, counts in seen.items():
        assert counts == sorted(set(counts)), (word, counts)
        assert counts[-1] == want[word]
    stop_cleanly(apps[-1])


def stop_cleanly(app: StreamsApp) -> None:
    """SIGTERM: the shutdown hook closes Streams (the JVM then exits 128 + 15, as any JVM on SIGTERM)."""
    assert app.kill(signal.SIGTERM) == 143
    assert "STATE NOT_RUNNING" in app.text(), app.text()[-6000:]


def internal_topics(bootstrap: str, app_id: str) -> dict[str, int]:
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
    return {t: len(topics[t].partitions) for t in topics if t.startswith(app_id + "-")}


# an hour ago, a multiple of the 10 s window size (windows start at W0 + 10 s * n): recent enough that no broker's
# retention deletes the windows' changelog under the test (Kafka's cleaner runs retention on compact,delete logs
# right after cleaning; records stamped 2023 went within seconds)
W0 = (int(time.time() * 1000) // 10_000 - 360) * 10_000


def test_windowed_count_with_grace_across_sigkill(broker: Any, streams_ready: None, tmp_path: Path,
                                                  apps: list[StreamsApp]) -> None:
    """One input partition, so stream time is the largest timestamp seen. A record is dropped once its window
    end <= stream time - grace.

    The second half starts with b9, late for the stream time (16 s) that the first instance reached and
    committed (in the offset's metadata, checked here). Streams 4.4 still counts it after the restart: the
    window aggregate's grace check uses the processor's own ``observedStreamTime``
    (AbstractKStreamTimeWindowAggregateProcessor: -1 at construction, raised only by the records it
    processes), not the task's restored partition time, so the first record after a restart is never too
    late. Apache Kafka does the same (MATRIX.md)."""
    bs, app_id = broker.bootstrap, "eco-win"
    create_topics(bs, {"win-in": 1, "win-out": 1})
    first = [("a", 1), ("b", 2), ("a", 3), ("a", 12), ("b", 8), ("a", 16)]  # b8 at stream time 12: end 10 > 12 - 5
    second = [("b", 9), ("a", 25), ("b", 14), ("b", 21), ("a", 29), ("b", 31), ("a", 24)]
    # b9: the restarted processor's stream time is 9: counted; b14: end 20 <= 25 - 5: dropped; a24: end 30 >
    # 31 - 5: counted
    want = {"a@0": 2, "b@0": 3, "a@10": 2, "a@20": 3, "b@20": 1, "b@30": 1}
    eos = "processing.guarantee=exactly_once_v2"
    log, state = tmp_path / "streams.log", tmp_path / "state"

    def send(events: list[tuple[str, int]]) -> None:
        produce(bs, "win-in", [(k, f"{k}{t}") for k, t in events], [W0 + 1000 * t for _, t in events], 0)

    def final() -> dict[str, int]:
        last: dict[str, int] = {}
        for _, _, k, v in read_all(bs, "win-out"):
            key, start = k.decode().split("@")
            last[f"{key}@{(int(start) - W0) // 1000}"] = struct.unpack(">q", v)[0]
        return last

    send(first)
    apps.append(StreamsApp("windowed", bs, app_id, state, log, eos))
    apps[-1].wait_state("RUNNING")
    wait_until(lambda: final() == {"a@0": 2, "b@0": 2, "a@10": 2}, "the first half's counts", apps[-1])
    assert apps[-1].kill(signal.SIGKILL) == -signal.SIGKILL
    # the committed offset carries the task's partition time (Streams' metadata v2: a version byte, then the
    # time as a big-endian long, base64), stored through TxnOffsetCommit and returned by OffsetFetch
    # (read with an OffsetFetch of our codec: confluent-kafka's TopicPartition.metadata reads the client's buffer
    # past its size and failed to decode now and then; the broker's bytes are what this checks)
    assert _committed(bs, app_id, "win-in", 0) == (6, base64.b64encode(b"\x02" + struct.pack(">q", W0 + 16_000)))
    send(second)
    apps.append(StreamsApp("windowed", bs, app_id, state, log, eos))
    wait_until(lambda: final() == want, "the exact windowed counts", apps[-1])
    assert internal_topics(bs, app_id) == {f"{app_id}-win-counts-changelog": 1}
    # WindowedChangelogTopicConfig: compact + delete, retention = the store's (size + grace) + 1 day
    assert dynamic_configs(bs, f"{app_id}-win-counts-changelog") == {
        "cleanup.policy": "compact,delete", "retention.ms": str(15_000 + 86_400_000),
        "message.timestamp.type": "CreateTime"}
    stop_cleanly(apps[-1])


def test_foreign_key_join_follows_both_tables(broker: Any, streams_ready: None, tmp_path: Path,
                                              apps: list[StreamsApp]) -> None:
    bs, app_id = broker.bootstrap, "eco-fk"
    create_topics(bs, {"orders": 2, "products": 1, "enriched": 2})
    produce(bs, "products", [("p1", "apple"), ("p2", "pear")])
    produce(bs, "orders", [("o1", "p1:3"), ("o2", "p2:1"), ("o3", "p3:7")])  # p3: no product yet

    def final() -> dict[str, str | None]:
        last: dict[str, str | None] = {}
        for _, _, k, v in read_all(bs, "enriched"):
            last[k.decode()] = None if v is None else v.decode()
        return last

    log, state = tmp_path / "streams.log", tmp_path / "state"
    apps.append(StreamsApp("fkjoin", bs, app_id, state, log, "processing.guarantee=exactly_once_v2"))
    apps[-1].wait_state("RUNNING")
    wait_until(lambda: final() == {"o1": "apple x3", "o2": "pear x1"}, "the first join results", apps[-1])
    produce(bs, "products", [("p2", "nashi")])
    wait_until(lambda: final() == {"o1": "apple x3", "o2": "nashi x1"}, "a product update reaching o2", apps[-1])
    produce(bs, "orders", [("o1", "p2:4")])
    produce(bs, "products", [("p3", "fig")])
    produce(bs, "orders", [("o2", None)])  # a deleted order: its result is deleted (a tombstone)
    wait_until(lambda: final() == {"o1": "nashi x4", "o2": None, "o3": "fig x7"}, "the final join", apps[-1])
    topics = internal_topics(bs, app_id)
    subs = [t for t in topics if t.endswith("-topic")]
    assert len(subs) == 2 and all("SUBSCRIPTION" in t for t in subs), topics
    for t in subs:  # both subscription topics are repartition topics
        assert dynamic_configs(bs, t) == {"cleanup.policy": "delete", "segment.bytes": "52428800",
                                          "retention.ms": "-1", "message.timestamp.type": "CreateTime"}, t
    for t in set(topics) - set(subs):
        assert t.endswith("-changelog"), topics
        assert dynamic_configs(bs, t) == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}, t
    stop_cleanly(apps[-1])


# -- standbys, a SIGKILLed instance and a SIGKILLed broker; the application reset tool -------------------------
def word_counts(bs: str, topic: str, since: dict[int, int] | None = None) -> dict[str, int]:
    """The last committed count of each word in ``topic`` (only records at or after ``since[partition]``)."""
    last: dict[str, int] = {}
    for p, off, k, v in sorted(read_all(bs, topic), key=lambda r: (r[0], r[1])):
        if since is None or off >= since.get(p, 0):
            last[k.decode()] = struct.unpack(">q", v)[0]
    return last


def tasks_of(app: StreamsApp) -> tuple[set[str], set[str]] | None:
    """This instance's (active, standby) task ids as it last printed them on becoming RUNNING."""
    lines = [ln for ln in app.text().splitlines() if ln.startswith("TASKS ")]
    if not lines:
        return None
    act, sb = (part.split("=", 1)[1] for part in lines[-1].split()[1:])
    return set(filter(None, act.split(","))), set(filter(None, sb.split(",")))


def running(app: StreamsApp) -> bool:
    states = [ln for ln in app.text().splitlines() if ln.startswith("STATE ")]
    return bool(states) and states[-1] == "STATE RUNNING"


@pytest.mark.ecosystem
def test_standby_takes_over_after_sigkill_and_survives_a_broker_sigkill(
        broker: Any, streams_ready: None, tmp_path: Path, apps: list[StreamsApp]) -> None:
    """Two instances with num.standby.replicas=1: each stateful task (sub-topology 1, the count) is active on
    one instance and a standby on the other. Instance 1 is SIGKILLed: instance 2 takes every task over (its
    standbys become active). The broker is SIGKILLed and restarted on its data dir: Streams goes on. The
    committed counts end exact, each word's counts only growing."""
    bs, app_id = broker.bootstrap, "eco-sb"
    create_topics(bs, {"sb-in": 2, "sb-out": 2})
    lines = [_line(i) for i in range(900)]
    want = Counter(w for line in lines for w in line.lower().replace(",", " ").replace("!", " ").split())
    props = ("eco.in=sb-in", "eco.out=sb-out", "processing.guarantee=exactly_once_v2", "num.standby.replicas=1")
    for n in (1, 2):
        apps.append(StreamsApp("wordcount", bs, app_id, tmp_path / f"state{n}", tmp_path / f"streams{n}.log",
                               *props))
    one, two = apps

    def balanced() -> bool:
        t1, t2 = tasks_of(one), tasks_of(two)
        if t1 is None or t2 is None or not (running(one) and running(two)):
            return False
        (a1, s1), (a2, s2) = t1, t2
        stateful = {"1_0", "1_1"}
        return (a1 | a2 == {"0_0", "0_1", "1_0", "1_1"} and not a1 & a2 and s1 == a2 & stateful
                and s2 == a1 & stateful and bool(a1 & stateful) and bool(a2 & stateful))

    wait_until(balanced, "each count task active on one instance and a standby on the other", two)
    produce(bs, "sb-in", [(f"l{i}", lines[i]) for i in range(300)])
    wait_until(lambda: len(word_counts(bs, "sb-out")) > 0, "first committed counts", two)

    assert one.kill(signal.SIGKILL) == -signal.SIGKILL
    wait_until(lambda: (tasks_of(two) or (set(), set()))[0] == {"0_0", "0_1", "1_0", "1_1"},
               "instance 2 running every task", two)
    produce(bs, "sb-in", [(f"l{i}", lines[i]) for i in range(300, 600)])
    broker.restart(signal.SIGKILL)
    produce(bs, "sb-in", [(f"l{i}", lines[i]) for i in range(600, 900)])
    wait_until(lambda: word_counts(bs, "sb-out") == dict(want), "the exact final counts", two)
    seen: dict[str, list[int]] = {}
    for _, _, k, v in sorted(read_all(bs, "sb-out"), key=lambda r: (r[0], r[1])):
        seen.setdefault(k.decode(), []).append(struct.unpack(">q", v)[0])
    for word, counts in seen.items():
        assert counts == sorted(set(counts)), (word, counts)
    stop_cleanly(two)


@pytest.mark.ecosystem
def test_application_reset_tool_reprocesses_from_scratch(broker: Any, streams_ready: None, tmp_path: Path,
                                                          apps: list[StreamsApp]) -> None:
    """Kafka 4.4's kafka-streams-application-reset (org.apache.kafka.tools.StreamsResetter) against kafkalite:
    the stopped application's committed input offsets go back to the earliest, its repartition and changelog
    topics are deleted; run again on a fresh state dir it counts everything from the start, exactly once."""
    from harness import connect

    reason = connect.tools_missing()
    if reason:
        missing(reason)
    bs, app_id = broker.bootstrap, "eco-reset"
    create_topics(bs, {"rs-in": 2, "rs-out": 2})
    lines = [_line(i) for i in range(400)]
    want = Counter(w for line in lines for w in line.lower().replace(",", " ").replace("!", " ").split())
    produce(bs, "rs-in", [(f"l{i}", line) for i, line in enumerate(lines)])
    props = ("eco.in=rs-in", "eco.out=rs-out", "processing.guarantee=exactly_once_v2")
    apps.append(StreamsApp("wordcount", bs, app_id, tmp_path / "state", tmp_path / "streams.log", *props))
    wait_until(lambda: word_counts(bs, "rs-out") == dict(want), "the exact counts", apps[-1])
    stop_cleanly(apps[-1])
    internal = {f"{app_id}-words-repartition", f"{app_id}-counts-changelog"}
    assert set(internal_topics(bs, app_id)) == internal

    p = connect.run_tool("tools", "org.apache.kafka.tools.StreamsResetter", "--bootstrap-server", bs,
                         "--application-id", app_id, "--input-topics", "rs-in", "--force")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Done." in p.stdout, p.stdout
    c = Consumer({"bootstrap.servers": bs, "group.id": app_id})
    committed = c.committed([TopicPartition("rs-in", q) for q in range(2)], timeout=30)
    c.close()
    assert [(t.partition, t.offset) for t in committed] == [(0, 0), (1, 0)]
    deadline = time.monotonic() + WAIT_S
    while set(internal_topics(bs, app_id)) & internal:
        assert time.monotonic() < deadline, internal_topics(bs, app_id)
        time.sleep(0.2)

    # the output so far ends here; a second run on a fresh state dir counts every line again
    meta = Consumer({"bootstrap.servers": bs, "group.id": "eco-check"})
    ends = {q: meta.get_watermark_offsets(TopicPartition("rs-out", q), timeout=30)[1] for q in range(2)}
    meta.close()
    apps.append(StreamsApp("wordcount", bs, app_id, tmp_path / "state-2", tmp_path / "streams.log", *props))
    wait_until(lambda: word_counts(bs, "rs-out", since=ends) == dict(want), "the exact counts, again", apps[-1])
    assert set(internal_topics(bs, app_id)) == internal
    stop_cleanly(apps[-1])
