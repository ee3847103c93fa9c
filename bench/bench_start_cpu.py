"""Start-up CPU: what ``python -m kafkalite serve`` spends, in all its threads, until it has answered its first
ApiVersions request.

Wall-clock start-to-ready (bench_brokers) swings with the shared machine's load; CPU time does much less, so
this is the figure to compare two source trees by (``--trees kafkalite,kafkalite@DIR``, DIR a tree as
bench/README.md describes). Spawns alternate between the trees so load drifts hit them alike. The CPU is
read from ``/proc/<pid>/task/*/schedstat`` (nanoseconds on CPU per thread) right after the answer arrives,
before the process is stopped, so shutdown is not counted; interpreter start-up and imports are.

    python -m bench.bench_start_cpu --trees kafkalite,kafkalite@/tmp/base --spawns 8
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _brokers

BENCH_TIMEOUT = 300
_READY_RE = re.compile(rb"kafkalite ready on ([0-9.]+):(\d+)")


def _cpu_ns(pid: int) -> int:
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):   # a thread that just ended
            pass
    return total


def _api_versions(host: str, port: int, timeout: float) -> None:
    from kafkalite_wire import api
    from kafkalite_wire.headers import RequestHeader
    from kafkalite_wire.messages import ApiVersionsRequest

    frame = api.encode_request(RequestHeader(18, 3, 1, "bench"), ApiVersionsRequest(
        client_software_name="bench", client_software_version="1"))
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(frame)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            data = s.recv(65536)
            if not data:
                raise RuntimeError("connection closed before the ApiVersions answer")
            buf += data


def spawn_once(name: str, timeout: float = 60.0) -> tuple[float, float]:
    """(CPU ms, wall ms) of one spawn until its first ApiVersions answer."""
    tree = _brokers.source_tree(name)
    workdir = Path(tempfile.mkdtemp(prefix="bench-startcpu-"))
    log_path = workdir / "broker.log"
    env = _brokers.broker_env()
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                                 str(workdir / "data"), "--log-level", "WARNING"], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir, env=env,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while not (m := _READY_RE.search(log_path.read_bytes())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not start: {log_path.read_bytes()[-2000:]!r}")
            time.sleep(0.002)
        _api_versions(m.group(1).decode(), int(m.group(2)), timeout)
        wall_ms = (time.perf_counter() - t0) * 1e3
        return _cpu_ns(proc.pid) / 1e6, wall_ms
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        _brokers._rmtree(workdir)


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", default="kafkalite", help="comma-separated: kafkalite, kafkalite@DIR")
    ap.add_argument("--spawns", type=int, default=8, help="spawns of each tree (alternating)")
    ap.add_argument("--quick", action="store_true", help="3 spawns each")
    args, _ = ap.parse_known_args(sys.argv[1:])
    names = args.trees.split(",")
    spawns = 3 if args.quick else args.spawns
    cpu: dict[str, list[float]] = {n: [] for n in names}
    wall: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(spawns):
        for name in names:
            c, w = spawn_once(name)
            cpu[name].append(c)
            wall[name].append(w)
    rows = [{"tree": n, "spawns": len(v), "median_cpu_ms": round(statistics.median(v), 1),
             "min_cpu_ms": round(min(v), 1), "max_cpu_ms": round(max(v), 1),
             "median_wall_ms": round(statistics.median(wall[n]), 1)} for n, v in cpu.items()]
    for r in rows:
        print(f"{r['tree']}: CPU to first ApiVersions answer median {r['median_cpu_ms']} ms "
              f"(min {r['min_cpu_ms']}, max {r['max_cpu_ms']}, {r['spawns']} spawns); "
              f"wall median {r['median_wall_ms']} ms")
    return {"rows": rows}


if __name__ == "__main__":
    main()
