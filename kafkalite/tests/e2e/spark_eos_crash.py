"""SIGKILL of the broker, of the Spark driver and of an executor JVM mid-batch under the exactly-once sink,
and a driver crash before a batch's decision (``make spark-crash``).

Not collected by ``make test`` (each run starts Spark driver processes, the executor test a standalone
cluster, and they take minutes); the helpers are those of ``test_spark_eos.py``. A read_committed consumer
must see every input row exactly once.
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

from kafkalite.tests.clients.test_spark_batch import make_spark
from kafkalite.tests.e2e.test_spark_eos import (
    WAIT_S,
    N,
    ProcBroker,
    arm,
    create_topic,
    fill,
    output,
    query,
    run_to_end,
)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = make_spark("local[2,3]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcBroker]:
    b = ProcBroker(tmp_path_factory.mktemp("eos-crash") / "data")
    yield b
    b.stop()


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
from kafkalite.tests.clients.test_spark_batch import make_spark
from kafkalite.tests.e2e.test_spark_eos import query
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
        # batch 0, and of batch 1 at most the committed share below the open transactions (they hold the LSO)
        assert 300 <= len(partial) < 600
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the driver, its JVM and Python workers: all started here
        first.wait(30)
    (hooks / "pause-1-half-committed").unlink()
    second = subprocess.run(args, env=env, timeout=WAIT_S, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert output(bs, dst) == list(range(N))
    # the decision was recorded before the sweep: the restart committed the rest of batch 1's original
    # transactions instead of writing their rows again
    assert output(bs, dst, "read_uncommitted") == list(range(N))


def test_driver_crash_before_decision_aborts_the_batch_whole(spark: Any, broker: ProcBroker,
                                                             tmp_path: Path) -> None:
    """The driver "dies" (test hook) with batch 1's transactions open and no decision recorded: readers see
    exactly batch 0; the restart aborts all of batch 1 and writes it again: each row once to read_committed
    readers, and the log holds batch 1 twice (once aborted)."""
    bs = broker.bootstrap_servers
    src, dst = "in-undecided", "out-undecided"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "crash-1-before-decision")
    q = query(spark, bs, src, dst, tmp_path / "ckpt", tmp_path / "hooks", True)
    with pytest.raises(Exception, match="simulated driver crash at before-decision of batch 1"):
        q.awaitTermination(WAIT_S)
    first_batch = output(bs, dst)
    assert len(first_batch) == 300 and len(set(first_batch)) == 300  # batch 0 whole, nothing of batch 1
    run_to_end(spark, bs, src, dst, tmp_path, True)
    assert output(bs, dst) == list(range(N))
    everything = output(bs, dst, "read_uncommitted")
    assert len(everything) == N + 300 and sorted(set(everything)) == list(range(N))


CLUSTER_DRIVER = """
import sys
from kafkalite.tests.clients.test_spark_batch import make_spark
from kafkalite.tests.e2e.test_spark_eos import query
from pathlib import Path
bs, src, dst, tmp, master = sys.argv[1:6]
spark = make_spark(master)
q = query(spark, bs, src, dst, Path(tmp) / "ckpt", Path(tmp) / "hooks", True)
q.awaitTermination(600)
sys.exit(0 if q.exception() is None and not q.isActive else 1)
"""


def _executor_of(pid: int) -> int:
    """The executor JVM (``CoarseGrainedExecutorBackend``) a Python worker runs under: walk up its parents."""
    while pid > 1:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"CoarseGrainedExecutorBackend" in cmd:
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError("no executor JVM above the paused task")


def test_executor_sigkill_mid_batch_on_standalone_cluster(broker: ProcBroker, tmp_path: Path) -> None:
    """On a standalone cluster (a master, two workers, executor JVMs of their own), task 1 of batch 1 pauses
    after writing its rows inside its open transaction; its executor JVM is SIGKILLed. Spark re-runs the lost
    tasks elsewhere: the re-run fences the dead attempt's transaction (aborting its rows) and writes again."""
    from kafkalite.spark.cluster import StandaloneCluster

    bs = broker.bootstrap_servers
    src, dst = "in-executor", "out-executor"
    fill(bs, src)
    create_topic(bs, dst, 3)
    arm(tmp_path, "pause-task-1-1")
    hooks = tmp_path / "hooks"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    with StandaloneCluster(tmp_path / "cluster", workers=2) as url:
        args = [sys.executable, "-c", CLUSTER_DRIVER, bs, src, dst, str(tmp_path), url]
        driver = subprocess.Popen(args, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                  stderr=open(tmp_path / "driver.log", "wb"))  # noqa: SIM115
        try:
            deadline = time.monotonic() + 2 * WAIT_S
            while not (hooks / "at-task-1-1").exists():
                assert time.monotonic() < deadline and driver.poll() is None, "task 1 of batch 1 never paused"
                time.sleep(0.2)
            worker = int((hooks / "at-task-1-1").read_text())
            os.kill(_executor_of(worker), signal.SIGKILL)  # a JVM the cluster started, under this test
            assert driver.wait(2 * WAIT_S) == 0, (tmp_path / "driver.log").read_text()[-3000:]
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(30)
    assert output(bs, dst) == list(range(N))
    assert len(output(bs, dst, "read_uncommitted")) > N  # the killed attempt had written its rows
