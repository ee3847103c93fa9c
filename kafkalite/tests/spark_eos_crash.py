"""SIGKILL of the broker and of the Spark driver mid-batch under the exactly-once sink (``make spark-crash``).

Not collected by ``make test`` (each run starts Spark driver processes and takes minutes); the helpers are
those of ``test_spark_eos.py``. A read_committed consumer must see every input row exactly once.
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

from kafkalite.tests.test_spark_batch import make_spark
from kafkalite.tests.test_spark_eos import (
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
        # batch 0, and of batch 1 at most the committed share below the open transactions (they hold the LSO)
        assert 300 <= len(partial) < 600
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the driver, its JVM and Python workers: all started here
        first.wait(30)
    (hooks / "pause-1-half-committed").unlink()
    second = subprocess.run(args, env=env, timeout=WAIT_S, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert output(bs, dst) == list(range(N))
