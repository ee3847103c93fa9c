"""The built-in schema registry: latencies, lookups/s from concurrent clients, and start-up over a full
``_schemas``, each as a ratio to a baseline measured in the same run.

``kafkalite serve --schema-registry`` processes on loopback; the clients are plain ``http.client``, one
connection per request (the registry answers ``Connection: close``, as every kafkalite HTTP sidecar does).

- register: ``--schemas`` distinct Avro records under as many subjects (each a new id and an append to
  ``_schemas``, answered once committed): p50/p99;
- lookup by id (``GET /schemas/ids/{id}``) and lookup by schema (``POST /subjects/{s}``: parse, canonicalise,
  find): p50/p99, next to ``GET /`` (``{}``: the same HTTP server, no registry work) as the floor;
- lookups/s: ``GET /schemas/ids/{id}`` from 1 and from ``--clients`` client processes for ``--seconds`` each,
  next to ``GET /`` from as many, alternating, medians of ``--rounds``: the ratio is what the registry work costs
  over the bare HTTP round trip;
- start-up: the broker restarted over the data dir whose ``_schemas`` holds the schemas, with the registry
  (ready = ``GET /subjects`` answers with every subject) and without it (ready = the broker answers Metadata:
  the same storage, no replay) and over an empty ``_schemas``, alternating, medians of ``--starts``; plus the
  replay time the broker logs ("... records in X s").

No peer registry runs here: Karapace is not on PyPI (its project page is 404 from this machine) and Confluent
Schema Registry is neither on PyPI nor on Maven Central (the bench has nothing to compare against but itself).

    python -m bench.bench_registry [--schemas 10000] [--seconds 3] [--clients 4] [--starts 3] [--rounds 3] [--quick]
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _kprobe, _proc
from bench._brokers import broker_env

BENCH_TIMEOUT = 900
_REPLAY_RE = re.compile(rb"records in ([0-9.]+) s")
_READY_RE = re.compile(rb"kafkalite ready on (\S+):(\d+)")
CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
READY_TIMEOUT_S = 120.0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def request(port: int, method: str, path: str, body: Any = None) -> Any:
    """One request on a connection of its own; the JSON answer, or RuntimeError for a status other than 200."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, None if body is None else json.dumps(body), CT if body is not None else {})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
        return json.loads(data)
    finally:
        conn.close()


class Broker:
    """``kafkalite serve`` over ``data`` (with the registry when ``registry``), timed from spawn to ready."""

    def __init__(self, data: Path, registry: bool, expect_subjects: int | None = None) -> None:
        self.port = _free_port() if registry else None
        self.log = data.with_suffix(".log")
        cmd = [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data)]
        if registry:
            cmd += ["--schema-registry", f"127.0.0.1:{self.port}"]
        self.log.write_bytes(b"")
        with open(self.log, "ab") as out:
            t0 = time.perf_counter()
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=broker_env(), start_new_session=True)
        try:
            host, kport = self._ready_line(t0)
            while not _kprobe.metadata_ok(host, kport, timeout=1.0):
                self._check(t0)
                time.sleep(0.005)
            if registry:
                got = self.request("GET", "/subjects")   # waits until _schemas is read back
                if expect_subjects is not None and len(got) != expect_subjects:
                    raise RuntimeError(f"the registry lists {len(got)} subjects, not {expect_subjects}")
            self.ready_s = time.perf_counter() - t0
        except BaseException:
            self.stop()
            raise

    def _check(self, t0: float) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"broker exited with {self.proc.returncode}: {self.log.read_bytes()[-2000:]!r}")
        if time.perf_counter() - t0 > READY_TIMEOUT_S:
            raise TimeoutError(f"broker not ready in {READY_TIMEOUT_S} s")

    def _ready_line(self, t0: float) -> tuple[str, int]:
        while True:
            m = _READY_RE.search(self.log.read_bytes())
            if m:
                return m.group(1).decode(), int(m.group(2))
            self._check(t0)
            time.sleep(0.005)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        assert self.port is not None
        return request(self.port, method, path, body)

    def replay_s(self) -> float | None:
        found = _REPLAY_RE.findall(self.log.read_bytes())
        return float(found[-1]) if found else None

    def stop(self) -> None:
        _proc.kill_tree(self.proc.pid, grace=30.0)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


def _schema(i: int) -> dict[str, str]:
    return {"schema": json.dumps({"type": "record", "name": f"R{i}", "namespace": "bench",
                                  "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                             {"name": f"f{i}", "type": ["null", "int"], "default": None}]})}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000, 3)


def _timed(calls: list[tuple[str, str, Any]], port: int) -> list[float]:
    out = []
    for method, path, body in calls:
        t = time.perf_counter()
        request(port, method, path, body)
        out.append(time.perf_counter() - t)
    return out


def _client(port: int, paths: list[str], seconds: float, start: Any, out: Any) -> None:
    """A client process: GETs ``paths`` round robin from ``start`` for ``seconds``; puts its count on ``out``."""
    start.wait()
    n, stop = 0, time.perf_counter() + seconds
    while time.perf_counter() < stop:
        request(port, "GET", paths[n % len(paths)])
        n += 1
    out.put(n)


def rate(port: int, paths: list[str], seconds: float, clients: int) -> float:
    """Requests per second from ``clients`` processes at once (fork: no re-import of the bench)."""
    ctx = multiprocessing.get_context("fork")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_client, args=(port, paths[k::clients] or paths, seconds, start, out))
             for k in range(clients)]
    for p in procs:
        p.start()
    t0 = time.perf_counter()
    start.set()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    took = time.perf_counter() - t0
    for p in procs:
        p.join(30)
    return total / took


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemas", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=3.0, help="per lookups/s run")
    ap.add_argument("--clients", type=int, default=4, help="client processes of the concurrent lookups/s runs")
    ap.add_argument("--starts", type=int, default=3, help="restarts of each kind (medians)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating lookups/s runs of each kind (medians)")
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if args.quick or os.environ.get("BENCH_QUICK"):
        args.schemas, args.seconds, args.starts, args.rounds = min(args.schemas, 500), min(args.seconds, 1.0), 1, 1
    work = Path(tempfile.mkdtemp(prefix="bench-registry-"))
    try:
        return _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    n = args.schemas
    rnd = random.Random(1)
    empty_dir, data = work / "empty", work / "data"
    Broker(empty_dir, registry=True).stop()   # creates _schemas

    reg = Broker(data, registry=True)
    port = reg.port
    assert port is not None
    try:
        register = _timed([("POST", f"/subjects/s{i}/versions", _schema(i)) for i in range(n)], port)
        sample = rnd.sample(range(n), min(n, 2000))
        by_id = _timed([("GET", f"/schemas/ids/{1 + i}", None) for i in sample], port)
        by_schema = _timed([("POST", f"/subjects/s{i}", _schema(i)) for i in sample], port)
        root = _timed([("GET", "/", None)] * len(sample), port)
        id_paths = [f"/schemas/ids/{1 + i}" for i in sample]
        runs: dict[str, list[float]] = {}
        for _ in range(args.rounds):   # alternating, so drift on the shared cores hits both kinds alike
            for k in sorted({1, args.clients}):
                runs.setdefault(f"by_id_per_s_{k}_clients", []).append(rate(port, id_paths, args.seconds, k))
                runs.setdefault(f"root_per_s_{k}_clients", []).append(rate(port, ["/"], args.seconds, k))
        rates = {key: statistics.median(v) for key, v in runs.items()}
    finally:
        reg.stop()

    plain_s: list[float] = []
    full_s: list[float] = []
    empty_s: list[float] = []
    replay: list[float] = []
    for _ in range(args.starts):   # alternating, so drift on the shared cores hits every kind alike
        b = Broker(data, registry=False)
        plain_s.append(b.ready_s)
        b.stop()
        b = Broker(data, registry=True, expect_subjects=n)
        full_s.append(b.ready_s)
        replay.append(b.replay_s() or float("nan"))
        b.stop()
        b = Broker(empty_dir, registry=True, expect_subjects=0)
        empty_s.append(b.ready_s)
        b.stop()
    plain, full, empty_ready = (statistics.median(x) for x in (plain_s, full_s, empty_s))
    out: dict[str, Any] = {
        "schemas": n, "clients": args.clients,
        "register_ms_p50": _pct(register, 50), "register_ms_p99": _pct(register, 99),
        "lookup_by_id_ms_p50": _pct(by_id, 50), "lookup_by_id_ms_p99": _pct(by_id, 99),
        "lookup_by_schema_ms_p50": _pct(by_schema, 50), "lookup_by_schema_ms_p99": _pct(by_schema, 99),
        "root_ms_p50": _pct(root, 50), "root_ms_p99": _pct(root, 99),
        **{k: round(v) for k, v in rates.items()},
        "start_ready_s_plain": round(plain, 3), "start_ready_s_registry_full": round(full, 3),
        "start_ready_s_registry_empty": round(empty_ready, 3),
        "replay_s": statistics.median(replay),
    }
    k = args.clients
    out["ratio_by_id_vs_root_1_client"] = round(rates["by_id_per_s_1_clients"] / rates["root_per_s_1_clients"], 2)
    out[f"ratio_by_id_vs_root_{k}_clients"] = round(rates[f"by_id_per_s_{k}_clients"]
                                                   / rates[f"root_per_s_{k}_clients"], 2)
    out[f"ratio_by_id_{k}_clients_vs_1"] = round(rates[f"by_id_per_s_{k}_clients"]
                                                / rates["by_id_per_s_1_clients"], 2)
    out["ratio_lookup_by_schema_vs_by_id_p50"] = round(out["lookup_by_schema_ms_p50"] / out["lookup_by_id_ms_p50"], 2)
    out["ratio_start_registry_full_vs_plain"] = round(full / plain, 2)
    out["ratio_start_registry_empty_vs_plain"] = round(empty_ready / plain, 2)
    for key, v in out.items():
        print(f"{key:40} {v}")
    return out


if __name__ == "__main__":
    main()
