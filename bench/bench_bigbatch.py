"""Big batches: the event loop's stall and the broker's memory while a client produces a 50 MB snappy batch or a
batch that inflates to 1 GiB, and the throughput of ordinary small batches, for two broker source trees in one run.

Issue #29 ("bounded work per batch"): validating a 50 MB snappy batch held the loop 129-143 ms, and a valid
batch whose records inflate to 1 GiB took 1.1-1.2 GB of RSS while it was checked. The goal: the loop stall of
any single request under 20 ms of loop CPU, memory bounded by a small multiple of a record, not the batch.

For each tree ("before": a ref of this repository, ``main`` by default, exported with ``git archive`` and its C
extensions built in place; "after": this checkout) a fresh broker process (``bench.bench_hostile --serve``, which
both trees have: ``kafkalite.server.serve`` with its ``kafkalite.runtime.loopwatch`` probe) serves:

- ``snappy_50mb``: Produce (acks=1) of one 50 MB batch of 70,000 1 KB records (70% random) compressed as one
  raw snappy block, as librdkafka sends it, to a topic with max.message.bytes 64 MiB; ``--repeats`` times;
- ``zstd_1gib``: Produce of a valid zstd batch (33 KB) of one record whose value is 1 GiB of zeros, to a topic
  with max.message.bytes 20 MiB (inflate bound 64 x that);
- ``small``: ordinary produce traffic: 16 KiB batches (160 x 100 B records, uncompressed, and lz4) sent on one
  connection with 16 requests in flight, acks=1; records/s and the broker's CPU per record (from /proc), the
  median and the least disturbed of the rounds;
- ``handler``: the Produce handler itself, in process (a ``BrokerState`` from ``open_state``, the handler
  awaited 5 x 5,000 times per run on a trio loop with the same 16 KiB batch, uncompressed and lz4): loop-thread
  CPU per request, a child process per tree and run, trees alternating ``--rounds`` times; minimum and median.
  On a loaded machine the end-to-end rows above move by tens of percent between runs; this one by a few.

Per big request: the most loop-thread CPU between two wake-ups of the loop's 10 ms probe while it ran
(``loop_max_busy_cpu_ms``: what the broker itself held the loop for, whatever the machine's load), p50 and max
over the repeats; the wall time of the request; the round trips of a probe client (ApiVersions and a 1-record
produce to another topic, back to back) meanwhile; and the broker's peak RSS (VmHWM of the fresh process)
with its RSS before the first big request. The small-batch rows alternate before/after ``--rounds`` times and
report medians. A warm-up produce of each codec runs first, so lazy imports are not counted.

    python -m bench.bench_bigbatch [--quick] [--before REF] [--before-dir DIR] [--scenarios a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import _proc
from bench.bench_hostile import BrokerProcess, Client, create_topics, produce_req

BENCH_TIMEOUT = 1500
BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
SCENARIOS = ("snappy_50mb", "zstd_1gib", "small", "handler")


# -- the trees ----------------------------------------------------------------------------------------------
def export_tree(ref: str, into: Path) -> Path:
    """``git archive`` of `ref` into `into`, with its C extensions built in place (as bootstrap does)."""
    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    build_extensions(into)
    return into


def build_extensions(tree: Path) -> None:
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True,
                   capture_output=True)


def walk_impl(tree: Path) -> str:
    out = subprocess.run([sys.executable, "-c", "from kafkalite import validation; print(validation.WALK_IMPL)"],
                         cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    return out.stdout.strip() or "?"


@contextmanager
def broker_of(tree: Path | None, log: Path) -> Iterator[BrokerProcess]:
    """A fresh broker process from `tree` (None: this checkout)."""
    saved = os.environ.get("KAFKALITE_BENCH_BROKER_SRC")
    if tree is not None:
        os.environ["KAFKALITE_BENCH_BROKER_SRC"] = str(tree)
    else:
        os.environ.pop("KAFKALITE_BENCH_BROKER_SRC", None)
    try:
        b = BrokerProcess(log)
    finally:
        if saved is None:
            os.environ.pop("KAFKALITE_BENCH_BROKER_SRC", None)
        else:
            os.environ["KAFKALITE_BENCH_BROKER_SRC"] = saved
    try:
        yield b
    finally:
        b.stop()


# -- batches ------------------------------------------------------------------------------------------------
def _batch(payload: bytes, count: int, codec: int) -> bytes:
    from kafkalite_storage.batch import crc32c

    now = int(time.time() * 1000)
    tail = struct.pack(">hiqqqhii", codec, count - 1, now, now, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", 0, 9 + len(tail), -1, 2, crc32c(tail)) + tail


def snappy_50mb(records: int = 70_000) -> bytes:
    from cramjam import snappy

    from kafkalite_storage.testing import Rec, encode_record

    recs = b"".join(encode_record(i, 0, Rec(value=os.urandom(700) + b"text-%08d-" % i * 21, key=b"k%d" % i))
                    for i in range(records))
    return _batch(bytes(snappy.compress_raw(recs)), records, 2)


def zstd_1gib() -> bytes:
    import zstandard

    from kafkalite_storage.testing import _zz

    size = 1 << 30
    body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(size)
    c = zstandard.ZstdCompressor().compressobj()
    mib = bytes(1 << 20)
    payload = c.compress(_zz(len(body) + size + 1) + body) + b"".join(c.compress(mib) for _ in range(size >> 20))
    return _batch(payload + c.compress(_zz(0)) + c.flush(), 1, 4)


def small_batch(codec: int) -> bytes:
    from kafkalite_storage.testing import Rec, encode_batch

    now = int(time.time() * 1000)
    return encode_batch([Rec(os.urandom(40) + b"payload-%08d-" % i + b"x" * 37, key=b"key-%06d" % i, timestamp=now)
                         for i in range(160)], base_timestamp=now, compression=codec)


# -- the probe client ---------------------------------------------------------------------------------------
class Probe(threading.Thread):
    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        from kafkalite_storage.testing import encode_batch
        from kafkalite_wire.messages import ApiVersionsRequest

        self.client = Client(port)
        create_topics(self.client, ["probe"])
        self.batch = encode_batch([b"probe"])
        self.api_versions = ApiVersionsRequest(client_software_name="probe", client_software_version="1")
        self.lat: list[float] = []
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        i = 0
        while not self.stop_flag.is_set():
            t0 = time.perf_counter()
            if i % 2:
                self.client.request(produce_req("probe", self.batch), 9)
            else:
                self.client.request(self.api_versions, 3)
            with self.lock:
                self.lat.append(time.perf_counter() - t0)
            i += 1
            time.sleep(0.002)

    def take(self) -> list[float]:
        with self.lock:
            out, self.lat = self.lat, []
        return out


# -- scenarios ----------------------------------------------------------------------------------------------
def big_requests(tree: Path | None, log: Path, batch: bytes, topic_config: dict[str, str], repeats: int,
                 warm_codec: int) -> dict[str, Any]:
    with broker_of(tree, log) as broker:
        c = Client(broker.port, timeout=600)
        create_topics(c, ["big"], topic_config)
        warm = c.request(produce_req("big", small_batch(warm_codec)), 9)   # lazy imports, first codec use
        assert warm.responses[0].partition_responses[0].error_code == 0
        probe = Probe(broker.port)
        probe.start()
        time.sleep(0.3)
        probe.take()
        broker.stats()
        rss_before = _proc.rss_kb(broker.proc.pid) / 1024
        busy, stall_cpu, walls, probe_lat, errors = [], [], [], [], []
        for _ in range(repeats):
            broker.stats()   # resets the loop probe's figures
            t0 = time.perf_counter()
            p = c.request(produce_req("big", batch), 9).responses[0].partition_responses[0]
            walls.append(time.perf_counter() - t0)
            st = broker.stats()
            busy.append(st.get("max_busy_cpu_ms") or 0.0)
            stall_cpu.append(st.get("max_stall_loop_cpu_ms") or 0.0)
            probe_lat += probe.take()
            if p.error_code:
                errors.append(f"{p.error_code}: {p.error_message}")
        probe.stop_flag.set()
        probe.join(30)
        hwm = _proc.tree_hwm_kb(broker.proc.pid) / 1024
        c.close()
    probe_lat.sort()
    return {
        "loop_busy_cpu_ms_p50": round(statistics.median(busy), 1), "loop_busy_cpu_ms_max": round(max(busy), 1),
        "request_s_p50": round(statistics.median(walls), 3), "request_s_max": round(max(walls), 3),
        "probe_round_trips": len(probe_lat),
        "probe_ms_p99": round(probe_lat[max(int(len(probe_lat) * 0.99) - 1, 0)] * 1000, 1) if probe_lat else None,
        "probe_ms_max": round(probe_lat[-1] * 1000, 1) if probe_lat else None,
        "rss_before_mb": round(rss_before, 1), "peak_rss_mb": round(hwm, 1),
        "errors": errors, "repeats": repeats, "batch_bytes": len(batch),
    }


def _pipelined(port: int, frame: bytes, requests: int, in_flight: int = 16) -> float:
    """Send `frame` `requests` times with up to `in_flight` outstanding; returns the seconds it took."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = done = 0
    buf = bytearray()
    t0 = time.perf_counter()
    while done < requests:
        while sent < requests and sent - done < in_flight:
            sock.sendall(frame)
            sent += 1
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError("closed by the broker")
        buf += data
        while len(buf) >= 4:
            (n,) = struct.unpack(">i", buf[:4])
            if len(buf) < 4 + n:
                break
            del buf[: 4 + n]
            done += 1
    took = time.perf_counter() - t0
    sock.close()
    return took


def small_batches(tree: Path | None, log: Path, requests: int) -> dict[str, Any]:
    from kafkalite_wire import api
    from kafkalite_wire.headers import RequestHeader

    out: dict[str, Any] = {}
    with broker_of(tree, log) as broker:
        c = Client(broker.port)
        for name, codec in (("none", 0), ("lz4", 3)):
            topic = f"small-{name}"
            create_topics(c, [topic])
            req = produce_req(topic, small_batch(codec))
            frame = api.encode_request(RequestHeader(0, 9, 1, "bench"), req)
            _pipelined(broker.port, frame, max(requests // 10, 50))   # warm-up
            cpu0 = _proc.tree_cpu_s(broker.proc.pid)
            took = _pipelined(broker.port, frame, requests)
            cpu = _proc.tree_cpu_s(broker.proc.pid) - cpu0
            records = requests * 160
            out[name] = {"records_per_s": round(records / took), "broker_cpu_us_per_record": round(
                cpu / records * 1e6, 3)}
        c.close()
    return out


# the Produce handler in process: run with the tree's own kafkalite (python -c, cwd = the tree)
HANDLER_CHILD = r"""
import os, sys, time, tempfile, shutil
import trio
from kafkalite.config.broker import BrokerConfig
from kafkalite.server.serve import open_state
from kafkalite.handlers.registry import RequestContext
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import ProduceRequest
from kafkalite_storage.testing import Rec, encode_batch
codec = int(sys.argv[1])
now = int(time.time() * 1000)
b = encode_batch([Rec(os.urandom(40) + b"x" * 60, key=b"key-%06d" % i, timestamp=now) for i in range(160)],
                 base_timestamp=now, compression=codec)
d = tempfile.mkdtemp(dir=sys.argv[2])
async def main():
    state = open_state(BrokerConfig({"log.dirs": d, "listeners": "PLAINTEXT://127.0.0.1:0"}))
    state.topics.create("t", 1, {"segment.bytes": str(1 << 30)})
    from kafkalite.handlers import produce as P
    req = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(name="t",
          partition_data=[ProduceRequest.PartitionProduceData(index=0, records=memoryview(b))])])
    ctx = RequestContext(header=RequestHeader(0, 9, 1, "bench"), broker=state)
    best = 1e9
    for _rep in range(5):
        for _ in range(300):
            await P.produce(ctx, req)
        t = time.thread_time()
        for _ in range(5000):
            await P.produce(ctx, req)
        best = min(best, (time.thread_time() - t) / 5000 * 1e6)
    print(round(best, 2))
    state.logs.close()
trio.run(main)
shutil.rmtree(d)
"""


def handler_us(tree: Path, codec: int, work: Path) -> float:
    out = subprocess.run([sys.executable, "-c", HANDLER_CHILD, str(codec), str(work)], cwd=tree,
                         env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


# -- main ---------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="bench.bench_bigbatch", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", default="main", help="git ref of the 'before' broker (default main)")
    ap.add_argument("--before-dir", default=None, help="an existing source tree for 'before' (no export)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None)
    args = ap.parse_args(argv)
    quick = args.quick or os.environ.get("BENCH_QUICK") == "1"
    repeats = args.repeats or (3 if quick else 5)
    rounds = args.rounds or (1 if quick else 5)
    small_requests = 1500 if quick else 8000
    scenarios = [s for s in args.scenarios.split(",") if s]
    results_dir = BENCH_DIR / "results"
    results_dir.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".bench-bigbatch-", dir=os.environ.get("KAFKALITE_BENCH_TMP",
                                                                                 str(BENCH_DIR))))
    try:
        build_extensions(ROOT)
        before = Path(args.before_dir) if args.before_dir else export_tree(args.before, work / "before")
        trees: dict[str, Path | None] = {"before": before, "after": None}
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        out: dict[str, Any] = {"before": args.before_dir or args.before, "after": commit,
                               "walk_impl": {"before": walk_impl(before), "after": walk_impl(ROOT)},
                               "repeats": repeats, "rounds": rounds}
        log = results_dir / "bigbatch-broker.log"
        batches: dict[str, tuple[bytes, dict[str, str], int]] = {}
        if "snappy_50mb" in scenarios:
            batches["snappy_50mb"] = (snappy_50mb(), {"max.message.bytes": str(64 << 20)}, 2)
        if "zstd_1gib" in scenarios:
            batches["zstd_1gib"] = (zstd_1gib(), {"max.message.bytes": str(20 << 20)}, 4)
        for name, (batch, cfg, warm) in batches.items():
            for side, tree in trees.items():
                row = big_requests(tree, log, batch, cfg, repeats, warm)
                out.setdefault(name, {})[side] = row
                print(json.dumps({"scenario": name, "side": side, **row}), flush=True)
        if "small" in scenarios:
            runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
            for _ in range(rounds):
                for side, tree in trees.items():
                    runs[side].append(small_batches(tree, log, small_requests))
                    print(json.dumps({"scenario": "small", "side": side, **runs[side][-1]}), flush=True)
            # medians, and the least disturbed run (most records/s, least CPU per record): on a shared machine
            # the other jobs only ever add to a run's figures
            out["small"] = {side: {codec: {**{k: statistics.median(r[codec][k] for r in rs) for k in rs[0][codec]},
                                           "best_records_per_s": max(r[codec]["records_per_s"] for r in rs),
                                           "min_broker_cpu_us_per_record": min(
                                               r[codec]["broker_cpu_us_per_record"] for r in rs)}
                                   for codec in rs[0]} for side, rs in runs.items()}
        if "handler" in scenarios:
            per: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
            for _ in range(rounds):
                for side, tree in trees.items():
                    for name, codec in (("none", 0), ("lz4", 3)):
                        per[side].setdefault(name, []).append(handler_us(tree or ROOT, codec, work))
                print(json.dumps({"scenario": "handler", "runs": per}), flush=True)
            out["handler"] = {side: {name: {"min_us": min(v), "median_us": statistics.median(v)}
                                     for name, v in d.items()} for side, d in per.items()}
        out["markdown"] = _markdown(out)
        print(out["markdown"])
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _markdown(out: dict[str, Any]) -> str:
    lines = [f"before = `{out['before']}` (walk {out['walk_impl']['before']}), after = `{out['after']}` "
             f"(walk {out['walk_impl']['after']}); big requests x{out['repeats']}, small-batch rounds "
             f"x{out['rounds']} (medians)", "", "| metric | before | after |", "|---|---|---|"]
    for name in ("snappy_50mb", "zstd_1gib"):
        if name not in out:
            continue
        b, a = out[name]["before"], out[name]["after"]
        rows = [("loop CPU held, p50 / max (ms)", "loop_busy_cpu_ms_p50", "loop_busy_cpu_ms_max"),
                ("request wall time, p50 / max (s)", "request_s_p50", "request_s_max"),
                ("probe round trip, p99 / max (ms)", "probe_ms_p99", "probe_ms_max"),
                ("broker RSS before / peak (MB)", "rss_before_mb", "peak_rss_mb")]
        for label, k1, k2 in rows:
            lines.append(f"| {name}: {label} | {b[k1]} / {b[k2]} | {a[k1]} / {a[k2]} |")
        for side, r in (("before", b), ("after", a)):
            if r["errors"]:
                lines.append(f"| {name}: errors ({side}) | {'; '.join(r['errors'][:2])} | |")
    if "small" in out:
        for codec in out["small"]["before"]:
            b, a = out["small"]["before"][codec], out["small"]["after"][codec]
            lines.append(f"| small 16 KiB batches ({codec}): records/s, median / best | {b['records_per_s']:,.0f} / "
                         f"{b['best_records_per_s']:,.0f} | {a['records_per_s']:,.0f} / {a['best_records_per_s']:,.0f}"
                         f" ({a['records_per_s'] / b['records_per_s']:.2f}x / "
                         f"{a['best_records_per_s'] / b['best_records_per_s']:.2f}x) |")
            lines.append(f"| small 16 KiB batches ({codec}): broker CPU per record, median / min (us) | "
                         f"{b['broker_cpu_us_per_record']} / {b['min_broker_cpu_us_per_record']} | "
                         f"{a['broker_cpu_us_per_record']} / {a['min_broker_cpu_us_per_record']} "
                         f"({a['broker_cpu_us_per_record'] / b['broker_cpu_us_per_record']:.2f}x / "
                         f"{a['min_broker_cpu_us_per_record'] / b['min_broker_cpu_us_per_record']:.2f}x) |")
    if "handler" in out:
        for codec in out["handler"]["before"]:
            b, a = out["handler"]["before"][codec], out["handler"]["after"][codec]
            lines.append(f"| Produce handler, 16 KiB batch ({codec}): loop CPU per request, min / median (us) | "
                         f"{b['min_us']} / {b['median_us']} | {a['min_us']} / {a['median_us']} "
                         f"({a['min_us'] / b['min_us']:.2f}x / {a['median_us'] / b['median_us']:.2f}x) |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
