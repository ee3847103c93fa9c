"""A Spark standalone cluster on this machine, from the pyspark install: one master and N workers.

The pip package of pyspark has no ``sbin/start-master.sh``, but it has ``bin/spark-class``, which runs the
master (``org.apache.spark.deploy.master.Master``) and the workers (``...deploy.worker.Worker``) in the
foreground; each is a JVM of its own, and each worker launches the executors of an application as further JVMs
with their own Python workers, which is how a user scales a pipeline out. Everything binds 127.0.0.1 and is
stopped (SIGTERM, then SIGKILL) when the context ends.

    with StandaloneCluster(workers=2, work_dir=tmp) as url:     # url = "spark://127.0.0.1:<port>"
        SparkSession.builder.master(url)...
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    def __init__(self, work_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        import pyspark

        self.home = Path(pyspark.__file__).parent
        self.work_dir = work_dir
        self.workers, self.cores, self.memory = workers, cores, memory
        self.procs: list[subprocess.Popen[bytes]] = []
        self.url = ""

    def _spawn(self, name: str, *args: str) -> Path:
        log = self.work_dir / f"{name}.log"
        env = {**os.environ, "SPARK_HOME": str(self.home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_WORKER_DIR": str(self.work_dir / f"{name}-work")}
        with open(log, "wb") as f:
            self.procs.append(subprocess.Popen([str(self.home / "bin" / "spark-class"), *args], stdout=f,
                                               stderr=subprocess.STDOUT, env=env, start_new_session=True))
        return log

    def _wait_for(self, log: Path, text: str, count: int = 1, timeout: float = 180.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if log.exists() and log.read_text(errors="replace").count(text) >= count:
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        raise RuntimeError(f"standalone cluster: no {text!r} in {log.name}:\n"
                           + log.read_text(errors="replace")[-3000:])

    def __enter__(self) -> str:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        self.url = f"spark://127.0.0.1:{port}"
        master_log = self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                 "--port", str(port), "--webui-port", str(_free_port()))
        try:
            self._wait_for(master_log, "I have been elected leader")
            for i in range(self.workers):
                self._spawn(f"worker{i}", "org.apache.spark.deploy.worker.Worker", self.url, "--host",
                            "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory, "--webui-port",
                            str(_free_port()))
            self._wait_for(master_log, "Registering worker", count=self.workers)
        except BaseException:
            self.stop()
            raise
        return self.url

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)  # each was started in a session of its own, by us
        for p in reversed(self.procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(30)
        self.procs.clear()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
