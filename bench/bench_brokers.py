"""kafkalite against peer brokers (Tansu, noida-db) in one run, with confluent-kafka as the client.

For each broker, one after the other on 127.0.0.1 (never two at once):

1. start-to-ready: spawn -> first successful ApiVersions+Metadata round trip, ``--start-repeats`` times
   (median reported); each of these instances is stopped at once;
2. a fresh instance: idle RSS one second after ready; an RSS sampler (process + descendants, /proc) runs
   from then on;
3. produce N x 100 B records into fresh topics with 1 and 6 partitions, acks=1 and acks=all;
4. consume the acks=all topics back (1 and 6 partitions);
5. end-to-end latency at ``--rate`` msg/s for ``--latency-seconds``;
6. peak RSS = max(sampled tree RSS, largest VmHWM), then the broker is stopped by pid.

Run: ``python -m bench.bench_brokers [--brokers kafkalite,tansu] [--quick]`` or through
``make bench ARGS="--only brokers --quick"``. Ratios are kafkalite's figure divided by the best peer's.
"""

from __future__ import annotations

import argparse
import atexit
import signal
import statistics
import sys
import threading
import time
from typing import Any

from bench import _brokers, _load, _proc
from bench._report import broker_table

BENCH_TIMEOUT = 5400  # seconds; read (without importing) by bench.run_all

_LIVE: list[_brokers.Running] = []


def _stop_all() -> None:
    while _LIVE:
        _LIVE.pop().stop()


def _on_sigterm(_signum: int, _frame: Any) -> None:
    raise SystemExit(143)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench.bench_brokers", description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", default=",".join(_brokers.ALL), help="comma list of kafkalite,tansu,noida")
    ap.add_argument("--quick", action="store_true", help="100k records, 5 s latency run")
    ap.add_argument("--records", type=int, help="records per produce run (default 1M, quick 100k)")
    ap.add_argument("--repeats", type=int, default=1, help="repeats of each produce/consume run (median)")
    ap.add_argument("--start-repeats", type=int, default=3, help="repeats of the start-to-ready timing")
    ap.add_argument("--rate", type=int, default=2000, help="latency run: messages per second")
    ap.add_argument("--latency-seconds", type=float, help="latency run length (default 10, quick 5)")
    ap.add_argument("--phase-timeout", type=float, help="wall-time bound of one produce/consume run")
    args, _unknown = ap.parse_known_args(argv)
    args.records = args.records or (100_000 if args.quick else 1_000_000)
    args.latency_seconds = args.latency_seconds or (5.0 if args.quick else 10.0)
    args.phase_timeout = args.phase_timeout or (120.0 if args.quick else 600.0)
    args.broker_list = [b.strip() for b in args.brokers.split(",") if b.strip()]
    return args


class RssSampler:
    """Samples the broker's process-tree RSS every 200 ms in a daemon thread."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak_kb = max(self.peak_kb, _proc.tree_rss_kb(self.pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(2)
        return max(self.peak_kb, _proc.tree_rss_kb(self.pid), _proc.tree_hwm_kb(self.pid))


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {
        "records_per_s": statistics.median(r["records_per_s"] for r in runs),
        "mb_per_s": statistics.median(r["mb_per_s"] for r in runs),
        "complete": all(r["complete"] for r in runs),
        "runs": runs,
    }
    return out


def _log(msg: str) -> None:
    print(f"[bench_brokers {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def bench_start(name: str, repeats: int) -> dict[str, Any]:
    times: list[float] = []
    lines: list[float] = []
    for _ in range(repeats):
        running = _brokers.start(name)
        _LIVE.append(running)
        try:
            times.append(running.spawn_to_ready_s)
            if running.ready_line_s is not None:
                lines.append(running.ready_line_s)
        finally:
            _LIVE.remove(running)
            running.stop()
    out: dict[str, Any] = {"median_s": round(statistics.median(times), 4), "runs_s": [round(t, 4) for t in times]}
    if lines:
        out["ready_line_median_s"] = round(statistics.median(lines), 4)
    return out


FAILED = object()


def _phase(result: dict[str, Any], key: str, running: _brokers.Running, fn: Any, *a: Any) -> Any:
    """Run one phase; on error record it (and log the broker's log tail) and return FAILED."""
    if running.proc.poll() is not None:
        result.setdefault("errors", []).append(f"{key}: broker exited ({running.proc.returncode})")
        return FAILED
    try:
        return fn(*a)
    except Exception as exc:  # a peer failing one phase must not sink the others
        result.setdefault("errors", []).append(f"{key}: {type(exc).__name__}: {exc}")
        _log(f"{running.name} {key} failed: {exc}\n{running.log_tail(10)}")
        return FAILED


def bench_workload(name: str, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    running = _brokers.start(name)
    _LIVE.append(running)
    try:
        time.sleep(1.0)
        result["idle_rss_mb"] = round(_proc.tree_rss_kb(running.proc.pid) / 1024, 1)
        sampler = RssSampler(running.proc.pid)
        produce: dict[str, Any] = {}
        consume: dict[str, Any] = {}
        for parts in (1, 6):
            for acks in ("1", "all"):
                key = f"p{parts}_acks{acks}"
                runs = []
                for rep in range(args.repeats):
                    topic = f"bench-p{parts}-acks{acks}-r{rep}"
                    if _phase(result, f"create {topic}", running, _load.create_topic,
                              running.bootstrap, topic, parts) is FAILED:
                        continue
                    run = _phase(result, f"produce {key}", running, _load.produce, running.bootstrap,
                                 topic, args.records, acks, args.phase_timeout)
                    if run is not FAILED:
                        _log(f"{name} produce {key}: {run['records_per_s']:,.0f} rec/s "
                             f"{run['mb_per_s']} MB/s complete={run['complete']}")
                        runs.append(run)
                if runs:
                    produce[key] = _median_run(runs)
            runs = []
            for rep in range(args.repeats):
                topic = f"bench-p{parts}-acksall-r{rep}"
                run = _phase(result, f"consume p{parts}", running, _load.consume, running.bootstrap, topic,
                             parts, args.records, args.phase_timeout)
                if run is not FAILED:
                    _log(f"{name} consume p{parts}: {run['records_per_s']:,.0f} rec/s complete={run['complete']}")
                    runs.append(run)
            if runs:
                consume[f"p{parts}"] = _median_run(runs)
        result["produce"] = produce
        result["consume"] = consume
        if _phase(result, "create latency topic", running, _load.create_topic, running.bootstrap,
                  "bench-latency", 1) is not FAILED:
            lat = _phase(result, "latency", running, _load.latency, running.bootstrap, "bench-latency",
                         args.rate, args.latency_seconds)
            if lat is not FAILED:
                _log(f"{name} latency @ {args.rate}/s: p50 {lat['p50_ms']} ms p99 {lat['p99_ms']} ms "
                     f"({lat['received']}/{lat['sent']})")
                result["latency"] = lat
        result["peak_rss_mb"] = round(sampler.stop() / 1024, 1)
    finally:
        _LIVE.remove(running)
        running.stop()
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    out: dict[str, Any] = {
        "config": {"records": args.records, "record_bytes": _load.RECORD_SIZE, "repeats": args.repeats,
                   "start_repeats": args.start_repeats, "latency_rate": args.rate,
                   "latency_seconds": args.latency_seconds, "quick": args.quick},
        "brokers": {},
    }
    try:
        for name in args.broker_list:
            entry: dict[str, Any] = {"storage": _brokers.STORAGE_NOTE.get(name, "?")}
            out["brokers"][name] = entry
            reason = _brokers.available(name)
            if reason:
                entry["skipped"] = reason
                _log(f"skip {name}: {reason}")
                continue
            try:
                _log(f"{name}: start-to-ready x{args.start_repeats}")
                entry["start"] = bench_start(name, args.start_repeats)
                _log(f"{name}: start median {entry['start']['median_s']} s; workload")
                entry.update(bench_workload(name, args))
            except Exception as exc:
                entry.setdefault("errors", []).append(f"{type(exc).__name__}: {exc}")
                _log(f"{name} failed: {exc}")
    finally:
        _stop_all()
    table = broker_table(out["brokers"], args)
    out["markdown"] = table
    print(table, flush=True)
    return out


if __name__ == "__main__":
    main()
