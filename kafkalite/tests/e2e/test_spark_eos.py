"""The exactly-once streaming sink (``exactlyOnce=true``) under failures, the at-least-once default, and
transactional reads through the source (last test).

A streaming query copies an input topic to an output topic through the ``kafkalite`` source and sink, in several
micro-batches. Failures are injected mid-batch through the sink's ``testHookDir`` option: a task that fails once
after writing its rows (Spark retries it: the master is ``local[2,3]``), the broker SIGKILLed and restarted
while the batch's transactions are open, and the Spark driver process SIGKILLed after committing half of a
batch's transactions (then the query is restarted from its checkpoint; those two live in ``spark_eos_crash.py``, run by ``make
spark-crash``, as they take minutes). A read_committed consumer must then see
every input row exactly once in the output topic; with the option off, the failed task's rows appear twice
(Spark's documented at-least-once sink). The broker runs as a process (``kafkalite serve``) so it can be killed.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("pyspark", "confluent_kafka")   # the module imports them: a loud skip, or a failure under CI=true

from confluent_kafka import Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka import TopicPartition as KTP  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from kafkalite.tests.clients.test_spark_batch import create_topic, make_spark  # noqa: E402

WAIT_S = 180.0  # bounds a hang; not a speed assertion
N = 600


class ProcBroker:
    """``kafkalite serve`` as a child process: SIGKILL and restart on the same port and data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.start()

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_") or k == "KAFKALITE_REFERENCE"}
        for _ in range(20):
            log = open(self.data_dir.parent / f"{self.data_dir.name}.log", "a")  # noqa: SIM115
            proc = subprocess.Popen(
                [sys.executable, "-m", "kafkalite", "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir",
                 str(self.data_dir)], stdout=subprocess.PIPE, stderr=log, text=True, env=env)
            log.close()
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.startswith("kafkalite ready on "):
                self.proc = proc
                self.port = int(line.strip().rsplit(":", 1)[1])
                return
            proc.wait(30)
            time.sleep(0.5)  # the killed broker's port may take a moment to be free
        raise AssertionError("the broker did not start")

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark("local[2,3]")  # up to 3 attempts per task, as on a cluster
    yield s
    s.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcBroker]:
    b = ProcBroker(tmp_path_factory.mktemp("eos") / "data")
    yield b
    b.stop()


def fill(bs: str, topic: str, n: int = N, partitions: int = 3) -> None:
    create_topic(bs, topic, partitions)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, str(i).encode(), str(i).encode(), partition=i % partitions)
    assert p.flush(60) == 0


def output(bs: str, topic: str, level: str = "read_committed", partitions: int = 3) -> list[int]:
    """Every row value of ``topic`` as ``level`` sees it, read to the end (the LSO under read_committed)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "verify", "enable.auto.commit": False,
                  "enable.partition.eof": True, "isolation.level": level})
    c.assign([KTP(topic, p, 0) for p in range(partitions)])
    out: list[int] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + WAIT_S
    while len(at_end) < partitions and time.monotonic() < deadline:
        for m in c.consume(10_000, 1.0):
            if m.error() is not None:
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                at_end.add(m.partition())
            else:
                at_end.discard(m.partition())
                out.append(int(m.value()))
    c.close()
    assert len(at_end) == partitions, "did not reach the end of every partition"
    return sorted(out)


def query(spark: Any, bs: str, src: str, dst: str, ckpt: Path, hooks: Path, exactly_once: bool,
          per_batch: int = 300) -> Any:
    return (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bs)
            .option("subscribe", src).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(per_batch))
            .load().selectExpr("key", "value")
            .writeStream.format("kafkalite").option("kafka.bootstrap.servers", bs).option("topic", dst)
            .option("exactlyOnce", str(exactly_once).lower()).option("testHookDir", str(hooks))
            .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())


def run_to_end(spark: Any, bs: str, src: str, dst: str, tmp: Path, exactly_once: bool, runs: int = 1) -> int:
    """Run the query until it finishes; a run that fails is restarted from its checkpoint (up to ``runs``)."""
    hooks = tmp / "hooks"
    hooks.mkdir(exist_ok=True)
    for attempt in range(1, runs + 1):
        q = query(spark, bs, src, dst, tmp / "ckpt", hooks, exactly_once)
        q.awaitTermination(WAIT_S)
        assert not q.isActive, "query hung"
        if q.exception() is None:
            return attempt
    raise AssertionError(f"query failed {runs} times: {q.exception()}")


def arm(tmp: Path, *names: str) -> None:
    (tmp / "hooks").mkdir(exist_ok=True)
    for name in names:
        (tmp / "hooks" / name).touch()


@pytest.mark.parametrize("exactly_once", [True, False], ids=["exactly-once", "at-least-once"])
def test_task_failure_retried(spark: Any, broker: ProcBroker, tmp_path: Path, exactly_once: bool) -> None:
    bs = broker.bootstrap_servers
    src, dst = f"in-task-{exactly_once}", f"out-task-{exactly_once}"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "fail-task-0-0", "fail-task-1-1")  # batches 0 and 1: one task each fails after writing
    run_to_end(spark, bs, src, dst, tmp_path, exactly_once)
    assert (tmp_path / "hooks" / "failed-task-0-0").exists() and (tmp_path / "hooks" / "failed-task-1-1").exists()
    committed = output(bs, dst)
    everything = output(bs, dst, "read_uncommitted")
    assert sorted(set(committed)) == list(range(N))
    if exactly_once:
        assert committed == list(range(N))  # each row once; the failed attempts' rows were aborted
        assert len(everything) > N  # ... though they are in the log
    else:
        assert len(committed) > N  # at-least-once: the failed tasks' rows were written twice
        assert committed == everything


def test_failed_batch_aborts_its_open_transactions(spark: Any, broker: ProcBroker, tmp_path: Path) -> None:
    """A batch whose job fails (one task fails every attempt) has Spark call ``abort``: the successful tasks'
    open transactions are aborted at once, instead of holding the output's last stable offset back until their
    timeout, and nothing of the batch is visible to read_committed readers."""
    bs = broker.bootstrap_servers
    src, dst = "in-abort", "out-abort"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "fail-task-always-0-0")
    q = query(spark, bs, src, dst, tmp_path / "ckpt", tmp_path / "hooks", True)
    with pytest.raises(Exception, match="injected failure of task 0 of batch 0"):
        q.awaitTermination(WAIT_S)
    assert not q.isActive
    assert output(bs, dst) == []
    assert len(output(bs, dst, "read_uncommitted")) > 0  # tasks 1 and 2 did write (then were aborted)
    hw, lso = _end_offsets(bs, dst, "read_uncommitted"), _end_offsets(bs, dst, "read_committed")
    assert lso == hw  # no open transaction left: the markers are written, readers are not held back


def _end_offsets(bs: str, topic: str, level: str) -> dict[int, int]:
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec

    admin = AdminClient({"bootstrap.servers": bs})  # kept referenced: its futures die with it
    iso = IsolationLevel.READ_COMMITTED if level == "read_committed" else IsolationLevel.READ_UNCOMMITTED
    fs = admin.list_offsets({KTP(topic, p): OffsetSpec.latest() for p in range(3)}, isolation_level=iso,
                            request_timeout=30)
    return {k.partition: f.result(timeout=60).offset for k, f in fs.items()}


# -- transactional reads ------------------------------------------------------------------------------------
# Transactional reads through the ``kafkalite`` source: ``kafka.isolation.level=read_committed``.
#
# A real transactional producer (confluent-kafka) writes committed and aborted transactions interleaved with
# plain records, and a second one leaves a transaction open, holding the partition's last stable offset (LSO)
# back. A read_committed read (batch, and streaming across a restart) must return exactly the committed and
# non-transactional records below the LSO: no aborted record, no control record (the COMMIT/ABORT markers take
# offsets too), nothing of the open transaction nor anything after it on its partition until it commits. A
# read_uncommitted read of the same topic sees the aborted and open records (markers still never appear).

def _txn_producer(bs: str, txn_id: str) -> Any:
    p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id, "linger.ms": 2})
    p.init_transactions(30)
    return p


def _send(p: Any, topic: str, names: list[str]) -> None:
    for name in names:
        p.produce(topic, name.encode(), name.encode(), partition=int(name.rsplit("-", 1)[1]) % 2)
    assert p.flush(30) == 0


def _names(prefix: str, lo: int, hi: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(lo, hi)]


def _read(spark: Any, bs: str, topic: str, level: str) -> list[tuple[str, int, int]]:
    df = (spark.read.format("kafkalite").option("kafka.bootstrap.servers", bs).option("subscribe", topic)
          .option("kafka.isolation.level", level).load())
    return sorted((r.value.decode(), r.partition, r.offset) for r in df.collect())


def _lso(bs: str, topic: str) -> dict[int, int]:
    from confluent_kafka import IsolationLevel
    from confluent_kafka import TopicPartition as KTP
    from confluent_kafka.admin import OffsetSpec

    admin = AdminClient({"bootstrap.servers": bs})  # kept referenced: its futures die with it
    fs = admin.list_offsets({KTP(topic, p): OffsetSpec.latest() for p in (0, 1)},
                            isolation_level=IsolationLevel.READ_COMMITTED, request_timeout=30)
    return {k.partition: f.result(timeout=60).offset for k, f in fs.items()}


def test_read_committed_batch_and_stream(spark: Any, broker: ProcBroker, tmp_path: Path) -> None:
    bs, topic = broker.bootstrap_servers, "rc"
    create_topic(bs, topic, 2)
    a = _txn_producer(bs, "rc-a")
    plain = Producer({"bootstrap.servers": bs})
    committed = []
    for k, commit in enumerate((True, False, True, False, True)):
        a.begin_transaction()
        names = _names("commit" if commit else "abort", 10 * k, 10 * k + 10)
        _send(a, topic, names)
        (a.commit_transaction if commit else a.abort_transaction)(30)
        if commit:
            committed += names
        between = _names("plain", 10 * k, 10 * k + 4)  # non-transactional records between the transactions
        _send(plain, topic, between)
        committed += between
    # An open transaction on partition 0 holds its LSO back; later committed records above it are invisible.
    b = _txn_producer(bs, "rc-b")
    b.begin_transaction()
    open_names = ["open-0", "open-2", "open-4"]
    _send(b, topic, open_names)
    a.begin_transaction()
    late = _names("late", 0, 6)
    _send(a, topic, late)
    a.commit_transaction(30)
    late_visible = [n for n in late if int(n.rsplit("-", 1)[1]) % 2 == 1]  # partition 1 has no open txn
    lso = _lso(bs, topic)

    rows = _read(spark, bs, topic, "read_committed")
    assert sorted(n for n, _, _ in rows) == sorted(committed + late_visible)
    assert all(off < lso[p] for _, p, off in rows)
    everything = _read(spark, bs, topic, "read_uncommitted")
    names = [n for n, _, _ in everything]
    assert len(names) == 50 + 20 + 3 + 6 and not any(n.startswith(("\x00",)) for n in names)
    assert {n.split("-")[0] for n in names} == {"commit", "abort", "plain", "open", "late"}

    # Streaming, read_committed: the first run stops at the LSO; after the open transaction commits, a
    # restart from the checkpoint delivers the rest, each record once.
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> None:
        q = (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bs)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("kafka.isolation.level", "read_committed").load()
             .selectExpr("CAST(value AS STRING) AS v").writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
        q.awaitTermination(WAIT_S)
        assert not q.isActive and q.exception() is None

    def sink() -> list[str]:
        return sorted(r.v for r in spark.read.schema("v string").parquet(str(out)).collect())

    run()
    assert sink() == sorted(committed + late_visible)
    b.commit_transaction(30)
    run()
    assert sink() == sorted(committed + late + open_names)


# -- per-micro-batch atomicity ------------------------------------------------------------------------------

def test_driver_crash_between_task_commits_rolls_the_batch_forward(spark: Any, broker: ProcBroker,
                                                                   tmp_path: Path) -> None:
    """The driver "dies" (a test hook: commit raises, abort does nothing) after committing some of batch 1's
    transactions. Until the query restarts a read_committed reader sees batch 0 and at most part of batch 1;
    the restarted query commits the rest of batch 1's *original* transactions (the decision recorded before the
    sweep names them), so every row is there once and nothing was written twice, not even aborted: the log
    holds exactly N rows. (Before decisions, the re-run aborted the rest and wrote it again.)"""
    bs = broker.bootstrap_servers
    src, dst = "in-half", "out-half"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "crash-1-half-committed")
    q = query(spark, bs, src, dst, tmp_path / "ckpt", tmp_path / "hooks", True)
    with pytest.raises(Exception, match="simulated driver crash at half-committed of batch 1"):
        q.awaitTermination(WAIT_S)
    assert not q.isActive
    partial = output(bs, dst)
    assert 300 <= len(partial) < N and len(set(partial)) == len(partial)
    run_to_end(spark, bs, src, dst, tmp_path, True)
    assert output(bs, dst) == list(range(N))
    assert output(bs, dst, "read_uncommitted") == list(range(N))  # rolled forward, not rewritten
