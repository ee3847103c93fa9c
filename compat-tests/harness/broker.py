"""A real kafkalite broker process for the compatibility tests.

The broker is started exactly as a user would start it::

    python -m kafkalite serve --listen 127.0.0.1:0 --data-dir DIR [--emulate-kafka X.Y]

and announces itself with one stdout line ``kafkalite ready on 127.0.0.1:PORT`` once clients can connect.
Both stdout and stderr go to one log file so a failing test can show what the broker said.

``restart()`` stops the process (SIGTERM = clean shutdown, SIGKILL = crash) and starts a new one on the *same*
data directory and the *same* port, so clients that keep their bootstrap address reconnect by themselves.

For developing the harness against a peer broker, ``KAFKALITE_COMPAT_PEER=tansu`` starts the Tansu binary from
``.deps/peers/tansu`` instead (in-memory storage: a restart loses data there).

``KAFKALITE_COMPAT_BROKER=kafka`` starts Apache Kafka 4.4 (``.deps/kafka-4.4``, see ``harness/reference.py``) in
kafkalite's place: the same data dir (Kafka's ``log.dirs``, formatted on the first start), a fixed port kept across
restarts, ``--override`` settings as server.properties entries; other kafkalite-only arguments raise
``ReferenceUnsupported``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness import reference

REPO = Path(__file__).resolve().parents[2]
READY_RE = re.compile(rb"kafkalite ready on (\S+):(\d+)")
# a hang bound only (a restart after SIGKILL recovers the logs first, on 2 loaded cores in CI)
READY_TIMEOUT_S = float(os.environ.get("KAFKALITE_COMPAT_READY_TIMEOUT", "90"))


class BrokerStartError(RuntimeError):
    pass


def reference_run() -> bool:
    """True when the compat tests run against Apache Kafka (KAFKALITE_COMPAT_BROKER=kafka)."""
    return os.environ.get("KAFKALITE_COMPAT_BROKER", "kafkalite") == "kafka"


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies (PR_SET_PDEATHSIG), so a JVM broker never
    outlives a killed pytest (it would hold its ports and 512 MB)."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


_HANDED_OUT: set[int] = set()


def _free_port() -> int:
    """A free loopback port, never one this process handed out before: the kernel may give a just-closed ephemeral
    port again at once, and two listeners of one server on the same port make Kafka refuse to start (a CI run
    saw PLAINTEXT and SASL_PLAINTEXT both on one port)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise RuntimeError("no free loopback port not handed out before")


class BrokerProcess:
    """One broker process (and its successors after restarts) over one data directory."""

    def __init__(self, data_dir: Path, log_path: Path, emulate: str | None = None,
                 extra_args: list[str] | None = None, kind: str | None = None,
                 reference_config: reference.ReferenceConfig | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path)
        self.emulate = emulate
        self.extra_args = list(extra_args or [])
        self.peer = os.environ.get("KAFKALITE_COMPAT_PEER", "")
        # kafkalite or kafka (the reference); None: as KAFKALITE_COMPAT_BROKER says
        self.kind = kind or ("kafka" if reference_run() else "kafkalite")
        self._ref: reference.ReferenceConfig | None = reference_config
        self._fixed_ref = reference_config is not None   # a cluster's node: its config is given whole
        self.proc: subprocess.Popen[bytes] | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.starts = 0
        self.last_exit: int | None = None  # exit status of the previous process (after stop/restart)
        self._start_pos = 0

    # -- lifecycle ---------------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def _command(self) -> list[str]:
        if self.kind == "kafka":
            return self._reference_command()
        if self.peer == "tansu":
            if not self.port:
                self.port = _free_port()
            url = f"tcp://127.0.0.1:{self.port}"
            return [str(REPO / ".deps/peers/tansu"), "broker", "--listener-url", url,
                    "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
        cmd = [sys.executable, "-m", "kafkalite", "serve", "--listen", f"127.0.0.1:{self.port}",
               "--data-dir", str(self.data_dir)]
        if self.emulate:
            cmd += ["--emulate-kafka", self.emulate]
        return cmd + self.extra_args

    def _reference_command(self) -> list[str]:
        """Kafka's command; on the first start also its server.properties and the formatted data dir."""
        props = reference.translate_args(self.extra_args, self.emulate)
        if self._fixed_ref and self._ref is not None:
            self._ref.write()
        elif self._ref is None or self._ref.overrides != props:
            if self._ref is None:
                self.port = self.port or _free_port()
                cport = _free_port()
            else:
                cport = self._ref.controller_port
            self._ref = reference.ReferenceConfig(self.data_dir, self.port, cport, props)
            self._ref.write()
            self.port = self._ref.client_port()   # a test's own listeners (--config) name it
        if not self._ref.formatted():
            self._ref.format(self.log_path)
        return self._ref.broker_command()

    def start(self) -> str:
        self.launch()
        return self.wait_ready()

    def launch(self) -> None:
        """Start the process (not waiting for it to be ready: :meth:`wait_ready`)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = self._command()
        with open(self.log_path, "ab") as log:
            start_pos = log.tell()
            self._start_pos = start_pos
            log.write(f"\n===== compat harness: start #{self.starts + 1}: {' '.join(cmd)}\n".encode())
            log.flush()
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=str(REPO), env=env, start_new_session=True,
                                         preexec_fn=_die_with_parent if self.kind == "kafka" else None)
        self.starts += 1

    def wait_ready(self) -> str:
        start_pos = self._start_pos
        if self.kind == "kafka":
            self._wait_mark(start_pos, reference.READY_MARK)
            self._wait_port()
        elif self.peer:
            self._wait_port()
        else:
            self._wait_ready(start_pos)
        return self.bootstrap

    def _wait_mark(self, start_pos: int, mark: bytes) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert self.proc is not None
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start_pos)
                if mark in f.read():
                    return
            if self.proc.poll() is not None:
                raise BrokerStartError(f"{self.kind} exited with {self.proc.returncode} before it was ready:\n"
                                       + self.log_tail())
            time.sleep(0.1)
        self.kill()
        raise BrokerStartError(f"no {mark.decode()!r} line within {READY_TIMEOUT_S}s:\n" + self.log_tail())

    def _wait_ready(self, start_pos: int) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert self.proc is not None
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(start_pos)
                m = READY_RE.search(f.read())
            if m:
                self.host, self.port = m.group(1).decode(), int(m.group(2))
                return
            if self.proc.poll() is not None:
                raise BrokerStartError(f"broker exited with {self.proc.returncode} before it was ready:\n"
                                       + self.log_tail())
            time.sleep(0.05)
        self.kill()
        raise BrokerStartError(f"no 'kafkalite ready on' line within {READY_TIMEOUT_S}s:\n" + self.log_tail())

    def _wait_port(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                socket.create_connection((self.host, self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise BrokerStartError("peer broker did not open its port:\n" + self.log_tail())

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int | None:
        """Stop the process with ``sig``; SIGKILL it if it has not exited after ``timeout`` seconds."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return proc.returncode if proc else None
        proc.send_signal(sig)
        try:
            self.last_exit = proc.wait(timeout)
            if self.kind == "kafka" and sig == signal.SIGTERM and self.last_exit == 128 + signal.SIGTERM:
                self.last_exit = 0   # the JVM's status after its shutdown hook ran the controlled shutdown
            with open(self.log_path, "ab") as log:
                log.write(f"\n===== compat harness: stopped with signal {sig}: exit {self.last_exit}\n".encode())
            return self.last_exit
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            raise BrokerStartError(f"broker ignored signal {sig} for {timeout}s (killed)") from None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def restart(self, sig: int = signal.SIGTERM) -> str:
        """Stop (clean with SIGTERM, crash with SIGKILL) and start again on the same data dir and port."""
        self.stop(sig)
        return self.start()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- logs --------------------------------------------------------------------------------------------
    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, pos: int, max_bytes: int = 40_000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(pos)
                data = f.read()
        except OSError:
            return ""
        if len(data) > max_bytes:
            data = b"...(cut)...\n" + data[-max_bytes:]
        return data.decode("utf-8", "replace")

    def log_tail(self, max_bytes: int = 8000) -> str:
        return self.log_since(max(0, self.log_size() - max_bytes), max_bytes)
