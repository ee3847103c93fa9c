"""The exactly-once streaming sink (``exactlyOnce=true``) under failures, and the at-least-once default.

A streaming query copies an input topic to an output topic through the ``kafkalite`` source and sink, in several
micro-batches. Failures are injected mid-batch through the sink's ``testHookDir`` option: a task that fails once
after writing its rows (Spark retries it: the master is ``local[2,3]``), the broker SIGKILLed and restarted
while the batch's transactions are open, and the Spark driver process SIGKILLed after committing half of a
batch's transactions (then the query is restarted from its checkpoint). A read_committed consumer must then see
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

if os.environ.get("CI"):  # CI installs the spark extra: a missing pyspark must fail, not skip
    import pyspark  # noqa: F401
else:
    pytest.importorskip("pyspark", reason="the spark extra is not installed (tools/bootstrap.sh spark)")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka import TopicPartition as KTP  # noqa: E402

from kafkalite.tests.test_spark_batch import create_topic, make_spark  # noqa: E402

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


def query(spark: Any, bs: str, src: str, dst: str, ckpt: Path, hooks: Path, exactly_once: bool) -> Any:
    return (spark.readStream.format("kafkalite").option("kafka.bootstrap.servers", bs)
            .option("subscribe", src).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "200")
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
    arm(tmp_path, "fail-task-1-0", "fail-task-2-1")  # batches 1 and 2: one task each fails after writing
    run_to_end(spark, bs, src, dst, tmp_path, exactly_once)
    assert (tmp_path / "hooks" / "failed-task-1-0").exists() and (tmp_path / "hooks" / "failed-task-2-1").exists()
    committed = output(bs, dst)
    everything = output(bs, dst, "read_uncommitted")
    assert sorted(set(committed)) == list(range(N))
    if exactly_once:
        assert committed == list(range(N))  # each row once; the failed attempts' rows were aborted
        assert len(everything) > N  # ... though they are in the log
    else:
        assert len(committed) > N  # at-least-once: the failed tasks' rows were written twice
        assert committed == everything


def test_broker_sigkill_mid_batch(spark: Any, broker: ProcBroker, tmp_path: Path) -> None:
    bs = broker.bootstrap_servers
    src, dst = "in-broker", "out-broker"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "pause-1-before-commit")  # batch 1's tasks have written; its transactions are open
    hooks = tmp_path / "hooks"
    q = query(spark, bs, src, dst, tmp_path / "ckpt", hooks, True)
    deadline = time.monotonic() + WAIT_S
    while not (hooks / "at-1-before-commit").exists():
        assert time.monotonic() < deadline and q.isActive, "batch 1 never reached its commit"
        time.sleep(0.2)
    broker.kill()
    broker.start()
    (hooks / "go-1-before-commit").touch()
    q.awaitTermination(WAIT_S)
    assert not q.isActive
    if q.exception() is not None:  # a read or write that met the dead broker: restart from the checkpoint
        run_to_end(spark, bs, src, dst, tmp_path, True, runs=2)
    assert output(bs, dst) == list(range(N))


DRIVER = """
import sys
from kafkalite.tests.test_spark_batch import make_spark
from kafkalite.tests.test_spark_eos import query
from pathlib import Path
bs, src, dst, tmp = sys.argv[1:5]
spark = make_spark()
q = query(spark, bs, src, dst, Path(tmp) / "ckpt", Path(tmp) / "hooks", True)
q.awaitTermination(300)
sys.exit(0 if q.exception() is None and not q.isActive else 1)
"""


def test_driver_sigkill_mid_commit(broker: ProcBroker, tmp_path: Path) -> None:
    """The driver dies after committing half of batch 1's transactions; the restarted query completes it."""
    bs = broker.bootstrap_servers
    src, dst = "in-driver", "out-driver"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "pause-1-half-committed")
    hooks = tmp_path / "hooks"
    args = [sys.executable, "-c", DRIVER, bs, src, dst, str(tmp_path)]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    first = subprocess.Popen(args, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + WAIT_S
        while not (hooks / "at-1-half-committed").exists():
            assert time.monotonic() < deadline and first.poll() is None, "batch 1 never reached its commit"
            time.sleep(0.2)
        partial = output(bs, dst)
        assert 200 < len(partial) < 400  # batch 0 and part of batch 1 are visible
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the driver, its JVM and Python workers: all started here
        first.wait(30)
    second = subprocess.run(args, env=env, timeout=WAIT_S, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert output(bs, dst) == list(range(N))
