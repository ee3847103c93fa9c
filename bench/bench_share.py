"""Share groups (KIP-932): throughput of 1, 4 and 16 ``ShareConsumer``s reading one partition, as ratios to a
plain (classic group, assigned) consumer reading the same records in the same run.

One kafkalite process (``--emulate-kafka 4.3``, share groups starting at the earliest offset); one
1-partition topic of N × 100 B records produced once (librdkafka batches, linger 5 ms). Each round, for each
consumer kind in turn: a plain consumer reads all N; then K share consumers (K separate processes,
confluent-kafka 2.16, implicit acknowledgement, ``max.poll.records`` 500) of a fresh share group read until
the group has received N records between them. Throughput is records / time from the first record any of
them received to the last; the ratio is to the plain consumer's rate of the same round. Medians of the
rounds. Every delivered record goes through acquisition, a lock, an acknowledgement and a persisted
ShareUpdate, so the ratio is the price of per-record delivery state on one partition.

    python -m bench.bench_share [--records N] [--rounds R] [--quick]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_TIMEOUT = 900
_READY_RE = re.compile(rb"kafkalite ready on ([0-9.]+):(\d+)")
KINDS = (1, 4, 16)


def _start_broker(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    log_path = workdir / "broker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
             str(workdir / "data"), "--log-level", "WARNING", "--emulate-kafka", "4.3",
             "--override", "kafkalite.share.auto.offset.reset=earliest"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = _READY_RE.search(log_path.read_bytes())
        if m:
            return proc, f"{m.group(1).decode()}:{int(m.group(2))}"
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError("kafkalite did not start:\n" + log_path.read_text(errors="replace")[-2000:])


def _share_child(bootstrap: str, topic: str, group: str, total: int, counter: Any, first: Any, last: Any,
                 ready: Any, go: Any) -> None:
    from confluent_kafka import ShareConsumer

    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "max.poll.records": 500})
    c.subscribe([topic])
    ready.release()
    go.wait()
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            n = sum(1 for m in c.poll(0.2) if m.error() is None)
            if n:
                now = time.time()
                with counter.get_lock():
                    if first.value == 0:
                        first.value = now
                    counter.value += n
                    last.value = max(last.value, now)
            if counter.value >= total:
                break
    finally:
        c.close()


def share_run(bootstrap: str, topic: str, group: str, total: int, consumers: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    counter, first, last = ctx.Value("q", 0), ctx.Value("d", 0.0), ctx.Value("d", 0.0)
    ready, go = ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=_share_child, args=(bootstrap, topic, group, total, counter, first, last, ready, go),
                         daemon=True) for _ in range(consumers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire(timeout=120)
    t0 = time.time()
    go.set()
    for p in procs:
        p.join(330)
        if p.is_alive():
            p.kill()
    got = counter.value
    span = max(last.value - first.value, 1e-6)
    return {"consumers": consumers, "records": got, "complete": got >= total,
            "records_per_s": round(got / span, 1), "first_record_ms": round((first.value - t0) * 1000, 1)}


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args(sys.argv[1:])
    if args.quick:
        args.records, args.rounds = min(args.records, 50_000), min(args.rounds, 3)
    from bench import _load

    workdir = Path(tempfile.mkdtemp(prefix="bench-share-"))
    proc, bootstrap = _start_broker(workdir)
    try:
        topic = "share-bench"
        _load.create_topic(bootstrap, topic, 1)
        produced = _load.produce(bootstrap, topic, args.records, "1", 300)
        total = produced.get("records", args.records) if isinstance(produced, dict) else args.records
        rounds: dict[str, list[float]] = {"plain": [], **{f"share x{k}": [] for k in KINDS}}
        ratios: dict[str, list[float]] = {f"share x{k}": [] for k in KINDS}
        incomplete = []
        for r in range(args.rounds):
            plain = _load.consume(bootstrap, topic, 1, total, 300)
            base = plain.get("after_first_records_per_s") or plain["records_per_s"]
            rounds["plain"].append(base)
            for k in KINDS:
                res = share_run(bootstrap, topic, f"bench-share-{r}-{k}", total, k)
                if not res["complete"]:
                    incomplete.append(res)
                rounds[f"share x{k}"].append(res["records_per_s"])
                ratios[f"share x{k}"].append(res["records_per_s"] / base)
        rows = [{"consumer": "plain consumer (classic, assigned)", "records_per_s": statistics.median(rounds["plain"]),
                 "ratio_to_plain": 1.0}]
        for k in KINDS:
            name = f"share x{k}"
            rows.append({"consumer": f"{k} share consumer{'s' if k > 1 else ''}",
                         "records_per_s": round(statistics.median(rounds[name]), 1),
                         "ratio_to_plain": round(statistics.median(ratios[name]), 3)})
        out = {"records": total, "rounds": args.rounds, "rows": rows, "incomplete": incomplete}
        for row in rows:
            print(f"{row['consumer']:<40} {row['records_per_s']:>12,.0f} rec/s  x{row['ratio_to_plain']:.3f}")
        if incomplete:
            print("incomplete share runs:", incomplete)
        return out
    finally:
        from bench import _proc

        _proc.kill_tree(proc.pid)


if __name__ == "__main__":
    main()
