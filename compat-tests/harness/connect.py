"""Kafka Connect and MirrorMaker 2 processes for the compat tests (#25): a distributed worker
(``ConnectDistributed``) or a dedicated MirrorMaker (``MirrorMaker``), run from the jars of
``tools/bootstrap.sh eco`` (``.deps/eco/connect``), each JVM in its own session so a test may SIGTERM (a graceful
stop: the herder leaves its group and flushes offsets) or SIGKILL it, and its REST API driven over HTTP.

Nothing is downloaded at run time: a missing jar set is reported by ``connect_missing()`` (the tests skip
loudly, fail under ``CI=true``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness import eco

CONNECT = "connect-runtime, connect-file, connect-json, connect-mirror 4.3.1 (kafka-clients 4.3.1)"
WAIT_S = 180.0  # a hang bound on 2 shared cores, not a speed assertion


def connect_missing() -> str | None:
    if shutil.which("java") is None:
        return "java not on PATH"
    names = {j.name for j in eco.jars("connect")}
    for want in ("connect-runtime-", "connect-file-", "connect-mirror-"):
        if not any(n.startswith(want) for n in names):
            return f"Kafka Connect jars ({want}*) missing in {eco.ECO / 'connect'}: run tools/bootstrap.sh eco"
    return None


def tools_missing() -> str | None:
    if shutil.which("java") is None:
        return "java not on PATH"
    if not any(j.name.startswith("kafka-tools-") for j in eco.jars("tools")):
        return f"Kafka's tools jars missing in {eco.ECO / 'tools'}: run tools/bootstrap.sh eco"
    return None


def java(jar_set: str, main: str, *args: str, heap: str = "256m") -> list[str]:
    """``java`` with a bounded heap and a quick-starting JIT running ``main`` on one jar set's classpath."""
    cp = os.pathsep.join(str(j) for j in eco.jars(jar_set))
    return ["java", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-cp", cp, main, *args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class JavaProcess:
    """One JVM (and its successors after restarts) logging into one file; its own session, so its process group
    is ours to signal."""

    def __init__(self, cmd: list[str], log: Path, cwd: Path) -> None:
        self.cmd, self.log, self.cwd = cmd, log, cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self._from = 0

    def start(self) -> None:
        self._from = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as f:
            f.write(f"\n===== compat harness: {' '.join(self.cmd[-2:])}\n".encode())
            f.flush()
            self.proc = subprocess.Popen(self.cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.cwd, start_new_session=True)

    def text(self) -> str:
        """What this run (since the last start) logged."""
        return self.log.read_bytes()[self._from:].decode(errors="replace")

    def tail(self, n: int = 6000) -> str:
        return self.text()[-n:]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
            raise

    def kill(self) -> None:
        if self.alive():
            self.stop(signal.SIGKILL)


class ConnectWorker(JavaProcess):
    """A distributed Connect worker whose config, offset and status topics live on the broker it is given.
    The REST port is picked once and kept across restarts."""

    def __init__(self, workdir: Path, bootstrap: str, group: str, **overrides: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.props = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "config.storage.topic": f"{group}-configs",
            "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.port}",
            # the FileStream connectors are on the classpath: no plugin.path scan at start
            "plugin.discovery": "only_scan",
            # a SIGKILLed worker's member leaves the group after this, not Connect's 10 s default
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "1000",
            "scheduled.rebalance.max.delay.ms": "3000",
            **overrides,
        }
        props = write_properties(workdir / "worker.properties", self.props)
        super().__init__(java("connect", "org.apache.kafka.connect.cli.ConnectDistributed", str(props)),
                         workdir / "worker.log", workdir)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_and_wait(self) -> None:
        """Start the JVM and wait until its REST API answers and the herder has joined its group."""
        self.start()
        deadline = time.monotonic() + WAIT_S
        while "Herder started" not in self.text() or "Kafka Connect started" not in self.text():
            assert self.alive(), f"Connect exited ({self.proc and self.proc.returncode}):\n{self.tail()}"
            assert time.monotonic() < deadline, f"Connect not started in {WAIT_S}s:\n{self.tail()}"
            time.sleep(0.2)

    def rest(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw) if raw else None

    def put_connector(self, name: str, config: dict[str, str]) -> None:
        """Create or update a connector. A request the herder cannot serve yet (a rebalance in progress: 409)
        is retried."""
        deadline = time.monotonic() + WAIT_S
        while True:
            code, body = self.rest("PUT", f"/connectors/{name}/config", config)
            if code in (200, 201):
                return
            assert code == 409 and time.monotonic() < deadline, (code, body, self.tail())
            time.sleep(0.5)

    def wait_running(self, name: str, tasks: int) -> dict[str, Any]:
        """Wait until the connector and ``tasks`` tasks report RUNNING; a FAILED one fails with its trace."""
        deadline = time.monotonic() + WAIT_S
        while True:
            code, st = self.rest("GET", f"/connectors/{name}/status")
            if code == 200:
                states = [st["connector"]["state"]] + [t["state"] for t in st["tasks"]]
                assert "FAILED" not in states, json.dumps(st, indent=1)
                if len(st["tasks"]) == tasks and set(states) == {"RUNNING"}:
                    return st
            assert self.alive(), f"Connect exited:\n{self.tail()}"
            assert time.monotonic() < deadline, f"{name} not RUNNING in {WAIT_S}s: {st}\n{self.tail()}"
            time.sleep(0.3)


class MirrorMaker(JavaProcess):
    """A dedicated MirrorMaker 2 (``connect-mirror-maker``: ``org.apache.kafka.connect.mirror.MirrorMaker``) over
    an mm2.properties."""

    def __init__(self, workdir: Path, props: dict[str, str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        path = write_properties(workdir / "mm2.properties", props)
        super().__init__(java("connect", "org.apache.kafka.connect.mirror.MirrorMaker", str(path), heap="384m"),
                         workdir / "mm2.log", workdir)


def run_tool(jar_set: str, main: str, *args: str, timeout: float = WAIT_S) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools to completion (stdout and stderr captured)."""
    return subprocess.run(java(jar_set, main, *args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
