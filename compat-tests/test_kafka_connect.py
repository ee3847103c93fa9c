"""Kafka Connect (distributed mode, the jars of ``tools/bootstrap.sh eco``) against a kafkalite process.

- The worker's config, offset and status topics are created by Connect on kafkalite with the partitions and
  ``cleanup.policy=compact`` it asks for; a pre-existing config topic that is not compacted is refused, as
  Connect checks through DescribeConfigs.
- The workers of one group agree through Connect's own embedded protocol over JoinGroup/SyncGroup (sessioned,
  protocol version 2, which ``exactly.once.source.support=enabled`` requires).
- FileStreamSource -> topic -> FileStreamSink moves a file line by line; the source runs exactly once
  (``exactly.once.support=required``: a transactional producer per task, its offsets written in the same
  transactions). A worker stopped gracefully resumes from its stored offsets: the output file is exact. A worker
  SIGKILLed mid-run leaves no duplicate in the topic under read_committed (the sink, at least once by design,
  may write a line again: every line is there, in order of first appearance).

All REST calls go to the worker's own API.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import connect

from conftest import missing

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

WAIT_S = connect.WAIT_S
GROUP = "eco-connect"


@pytest.fixture(scope="module")
def connect_ready() -> None:
    reason = connect.connect_missing()
    if reason:
        missing(reason)


@pytest.fixture
def workers() -> Iterator[list[connect.ConnectWorker]]:
    started: list[connect.ConnectWorker] = []
    yield started
    for w in started:
        w.kill()


def topic_partitions(bootstrap: str) -> dict[str, int]:
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
    return {t: len(m.partitions) for t, m in topics.items()}


def topic_config(bootstrap: str, topic: str, name: str) -> str:
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = admin.describe_configs([res])[res].result(timeout=30)
    return str(entries[name].value)


def read_topic(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[tuple[int, int, Any, Any]]:
    """(partition, offset, key, value) of every record up to the end of each partition (the LSO under
    read_committed), ordered by partition and offset."""
    parts = topic_partitions(bootstrap)[topic]
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "eco-connect-check", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    out: list[tuple[int, int, Any, Any]] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while len(eof) < parts and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            if m.error():
                eof.add(m.partition())
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value()))
    c.close()
    assert len(eof) == parts, f"no end of partition seen on {topic}"
    return sorted(out, key=lambda r: (r[0], r[1]))


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for(cond: Any, what: str, worker: connect.ConnectWorker) -> None:
    deadline = time.monotonic() + WAIT_S
    while not cond():
        assert worker.alive(), f"Connect exited:\n{worker.tail()}"
        assert time.monotonic() < deadline, f"{what} not reached in {WAIT_S}s:\n{worker.tail()}"
        time.sleep(0.3)


def test_filestream_exactly_once_source_across_graceful_and_sigkill_restarts(
        broker: Any, connect_ready: None, tmp_path: Path, workers: list[connect.ConnectWorker]) -> None:
    bs, topic = broker.bootstrap, "connect-lines"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    src_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    lines = [f"line {i:04d} {'x' * (i % 13)}" for i in range(620)]

    def append(a: int, b: int) -> None:
        with open(src_file, "a") as f:
            f.write("".join(line + "\n" for line in lines[a:b]))

    append(0, 300)
    w = connect.ConnectWorker(tmp_path / "worker", bs, GROUP, **{"exactly.once.source.support": "enabled"})
    workers.append(w)
    w.start_and_wait()
    # Connect's embedded protocol: the sessioned version, as exactly-once source support requires
    assert "with protocol version 2 and got assignment" in w.text(), w.tail()
    # the internal topics as Connect created them (DistributedConfig's defaults: 25 / 5 / 1 partitions)
    parts = topic_partitions(bs)
    assert {t: parts[t] for t in parts if t.startswith(GROUP)} == {
        f"{GROUP}-offsets": 25, f"{GROUP}-status": 5, f"{GROUP}-configs": 1}
    for t in ("offsets", "status", "configs"):
        assert topic_config(bs, f"{GROUP}-{t}", "cleanup.policy") == "compact"

    w.put_connector("eco-src", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(src_file), "topic": topic, "batch.size": "50",
        "exactly.once.support": "required", "transaction.boundary": "poll"})
    w.put_connector("eco-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": str(sink_file), "topics": topic})
    w.wait_running("eco-src", 1)
    w.wait_running("eco-sink", 1)
    wait_for(lambda: lines_of(sink_file) == lines[:300], "the first 300 lines in the sink file", w)

    # a graceful stop (the JVM's shutdown hook stops the herder: 128 + SIGTERM), more input while it is down,
    # a restart: the source resumes at its stored file position, the sink at its committed offset
    assert w.stop(signal.SIGTERM) == 143
    append(300, 400)
    w.start_and_wait()
    w.wait_running("eco-src", 1)
    wait_for(lambda: lines_of(sink_file) == lines[:400], "exactly lines 0-399 in the sink file", w)

    # SIGKILL mid-run: whatever the source task had open is aborted or completed, never duplicated
    append(400, 500)
    w.stop(signal.SIGKILL)
    append(500, 600)
    w.start_and_wait()
    w.wait_running("eco-src", 1)
    wait_for(lambda: len(read_topic(bs, topic)) >= 600, "600 committed records", w)
    committed = read_topic(bs, topic)
    assert [v.decode() for _, _, _, v in committed] == lines[:600]
    assert all(k is None for _, _, k, _ in committed)
    # every transaction committed (read_uncommitted shows the same records), and the log holds the control
    # markers between them (one transaction per poll: several before each restart and after it)
    assert read_topic(bs, topic, "read_uncommitted") == committed
    gaps = [b[1] - a[1] - 1 for a, b in zip(committed, committed[1:], strict=False) if b[1] != a[1] + 1]
    assert len(gaps) >= 3 and set(gaps) == {1}, gaps
    # the sink is at least once: after the SIGKILL it may write lines again, never lose or reorder one
    wait_for(lambda: list(dict.fromkeys(lines_of(sink_file))) == lines[:600], "every line in the sink file", w)

    # the source task's offset in Connect's offsets topic: the file position after the last line
    stored = [json.loads(v) for _, _, k, v in read_topic(bs, f"{GROUP}-offsets")
              if k is not None and json.loads(k) == ["eco-src", {"filename": str(src_file)}]]
    assert stored and stored[-1] == {"position": src_file.stat().st_size}
    # and the connector's offsets as the REST API reports them (KIP-875)
    code, offsets = w.rest("GET", "/connectors/eco-src/offsets")
    assert code == 200, offsets
    assert offsets == {"offsets": [{"partition": {"filename": str(src_file)},
                                    "offset": {"position": src_file.stat().st_size}}]}

    # zombie fencing from outside (kafka-transactions forceTerminateTransaction: KafkaAdminClient 4.4 calls
    # Admin.fenceProducers, the call Connect's leader makes for KIP-618): the task's transactional producer is
    # fenced, its next transaction fails the task; restarted through the REST API it takes a new epoch and goes
    # on, still exactly once
    tool = connect.tools_missing()
    if tool:
        missing(tool)
    txn_id = f"{GROUP}-eco-src-0"
    p = connect.run_tool("tools", "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", bs,
                         "forceTerminateTransaction", "--transactionalId", txn_id)
    assert p.returncode == 0, p.stdout + p.stderr
    append(600, 610)
    deadline = time.monotonic() + WAIT_S
    while (st := w.rest("GET", "/connectors/eco-src/status")[1])["tasks"][0]["state"] != "FAILED":
        assert time.monotonic() < deadline, st
        time.sleep(0.3)
    # transaction.version 2 (Connect 4.4's producer, as against Kafka 4.4): the fenced producer's next write adds its
    # partition at the old epoch and is answered INVALID_PRODUCER_EPOCH, which Connect reports as a transaction
    # that expired; with the classic protocol it reads ProducerFencedException
    trace = st["tasks"][0]["trace"]
    assert "fenced" in trace.lower() or "before its producer transaction expired" in trace, trace
    code, _ = w.rest("POST", "/connectors/eco-src/tasks/0/restart")
    assert code == 204
    deadline = time.monotonic() + WAIT_S  # the status shows FAILED until the restarted task reports in
    while (st := w.rest("GET", "/connectors/eco-src/status")[1])["tasks"][0]["state"] != "RUNNING":
        assert time.monotonic() < deadline, st
        time.sleep(0.3)
    append(610, 620)
    wait_for(lambda: len(read_topic(bs, topic)) >= 620, "620 committed records", w)
    assert [v.decode() for _, _, _, v in read_topic(bs, topic)] == lines
    assert w.stop(signal.SIGTERM) == 143


@pytest.mark.ecosystem
def test_config_topic_must_be_compacted(broker: Any, connect_ready: None, tmp_path: Path,
                                        workers: list[connect.ConnectWorker]) -> None:
    """Connect reads the config topic's cleanup.policy (DescribeConfigs) and refuses one that is not compact."""
    bs, group = broker.bootstrap, "eco-connect-bad"
    admin = AdminClient({"bootstrap.servers": bs})
    t = f"{group}-configs"
    admin.create_topics([NewTopic(t, 1, 1, config={"cleanup.policy": "delete"})])[t].result(timeout=30)
    w = connect.ConnectWorker(tmp_path / "worker", bs, group)
    workers.append(w)
    w.start()
    deadline = time.monotonic() + WAIT_S
    want = f"Topic '{t}' supplied via the 'config.storage.topic' property is required to have " \
           "'cleanup.policy=compact'"
    while want not in w.text():
        assert time.monotonic() < deadline, w.tail()
        time.sleep(0.3)
    assert "found the topic currently has 'cleanup.policy=delete'" in w.text()
