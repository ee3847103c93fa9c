"""The built-in schema registry: register and lookup latency, schema-by-id lookups/s, start-up with N schemas.

One ``kafkalite serve --schema-registry`` process; the client is plain ``http.client`` in this process, one
connection per request (the registry answers ``Connection: close``, as every kafkalite HTTP sidecar does).

- register: ``--schemas`` distinct Avro records registered under as many subjects (each a new id and an append to
  ``_schemas``): per-request latency p50/p99;
- lookup: ``POST /subjects/{s}`` of a registered schema (parse, canonicalise, find): p50/p99;
- by id: ``GET /schemas/ids/{id}`` for ``--seconds`` from 1 and from 4 client threads: requests/s;
- start-up: the broker restarted over ``_schemas`` holding the schemas: seconds from process start until the
  registry answers ``GET /subjects``, next to the same for an empty registry, and the replay time the broker
  logs ("... records in X s").

    python -m bench.bench_registry [--schemas 10000] [--seconds 3] [--quick]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH_TIMEOUT = 900
_REPLAY_RE = re.compile(rb"records in ([0-9.]+) s")
CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Registry:
    def __init__(self, data: Path, port: int) -> None:
        self.port = port
        self.log = data.with_suffix(".log")
        cmd = [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data),
               "--schema-registry", f"127.0.0.1:{port}"]
        self.t0 = time.perf_counter()
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith(b"kafkalite ready on "):
            self.stop()
            raise RuntimeError(f"broker did not start: {line!r}")
        self.request("GET", "/subjects")   # waits until _schemas is read back
        self.ready_s = time.perf_counter() - self.t0

    def request(self, method: str, path: str, body: Any = None) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, None if body is None else json.dumps(body), CT if body is not None else {})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
            return json.loads(data)
        finally:
            conn.close()

    def replay_s(self) -> float | None:
        found = _REPLAY_RE.findall(self.log.read_bytes())
        return float(found[-1]) if found else None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _schema(i: int) -> dict[str, str]:
    return {"schema": json.dumps({"type": "record", "name": f"R{i}", "namespace": "bench",
                                  "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
                                             {"name": f"f{i}", "type": ["null", "int"], "default": None}]})}


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] * 1000


def _by_id_rate(reg: _Registry, ids: int, seconds: float, threads: int) -> float:
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def worker(n: int) -> None:
        i = n
        while time.perf_counter() < stop:
            reg.request("GET", f"/schemas/ids/{1 + i % ids}")
            counts[n] += 1
            i += threads

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schemas", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args(sys.argv[1:])
    if args.quick or os.environ.get("BENCH_QUICK"):
        args.schemas, args.seconds = min(args.schemas, 500), min(args.seconds, 1.0)
    work = Path(tempfile.mkdtemp(prefix="bench-registry-"))
    empty_dir, data = work / "empty", work / "data"
    empty = _Registry(empty_dir, _free_port())
    empty.stop()
    empty_again = _Registry(empty_dir, _free_port())
    empty_ready = empty_again.ready_s
    empty_again.stop()

    reg = _Registry(data, _free_port())
    reg_lat: list[float] = []
    for i in range(args.schemas):
        t = time.perf_counter()
        reg.request("POST", f"/subjects/s{i}/versions", _schema(i))
        reg_lat.append(time.perf_counter() - t)
    look_lat: list[float] = []
    for i in range(min(args.schemas, 2000)):
        t = time.perf_counter()
        reg.request("POST", f"/subjects/s{i}", _schema(i))
        look_lat.append(time.perf_counter() - t)
    rate1 = _by_id_rate(reg, args.schemas, args.seconds, 1)
    rate4 = _by_id_rate(reg, args.schemas, args.seconds, 4)
    reg.stop()
    again = _Registry(data, _free_port())
    subjects = len(again.request("GET", "/subjects"))
    out = {
        "schemas": args.schemas,
        "register_ms_p50": round(_pct(reg_lat, 50), 3), "register_ms_p99": round(_pct(reg_lat, 99), 3),
        "lookup_ms_p50": round(_pct(look_lat, 50), 3), "lookup_ms_p99": round(_pct(look_lat, 99), 3),
        "by_id_per_s_1_client": round(rate1), "by_id_per_s_4_clients": round(rate4),
        "start_ready_s_empty": round(empty_ready, 3), "start_ready_s_full": round(again.ready_s, 3),
        "start_ready_ratio_full_vs_empty": round(again.ready_s / empty_ready, 2),
        "replay_s": again.replay_s(), "subjects_after_restart": subjects,
    }
    again.stop()
    assert subjects == args.schemas, "the restarted registry lost subjects"
    for k, v in out.items():
        print(f"{k:34} {v}")
    print(f"(median register {statistics.median(reg_lat) * 1000:.2f} ms over {len(reg_lat)} requests)")
    return out


if __name__ == "__main__":
    main()
