"""kafkalite against peer brokers (Apache Kafka 4.4, Tansu, noida-db) in one run, with confluent-kafka as the client.

All on 127.0.0.1; the machine is small and shared, so every step is run on each broker in turn
(alternating the order) rather than one broker's whole suite after another's:

1. start-to-ready: spawn -> first successful ApiVersions+Metadata round trip, ``--start-repeats`` times
   per broker (median reported); each of these instances is stopped at once;
2. one fresh instance of every broker, left idle for a second: idle RSS; an RSS sampler (process +
   descendants, /proc) per broker runs from then on;
3. produce N x 100 B records into fresh topics with 1 and 6 partitions, acks=1 and acks=all;
4. consume N records back: the 1-partition acks=all topics, and for 6 partitions (1 and 2 client processes)
   one topic filled evenly outside the clock (record i to partition i % 6). The produce rows' keyless
   records go through librdkafka's sticky partitioner, which leaves some of 6 partitions empty or nearly so;
   a consumer whose first Fetch named only an empty partition waited out fetch.wait.max.ms (500 ms) for
   nothing, and the row swung between ~1M and ~170k records/s (``_load`` has the details);
5. end-to-end latency at ``--rate`` msg/s for ``--latency-seconds``, ``--latency-repeats`` times (median
   of the runs' p50s and of their p99s: one run on a starved CPU can queue up for a second);
6. peak RSS = max(sampled tree RSS, largest VmHWM), then every broker is stopped by pid.

Only one broker is under load at any moment; the others are frozen with SIGSTOP meanwhile (an idle peer is
not idle on the CPU: Tansu keeps ~90 % of a core busy after the produce phases), and thawed at the end.
Before each run the page cache is synced, so the background write-back of one phase's data (kafkalite writes
its log to disk; the kernel flushes dirty pages ~30 s later) does not land in a later run of any broker.

Run: ``python -m bench.bench_brokers [--brokers kafkalite,tansu] [--quick]`` or through
``make bench ARGS="--only brokers --quick"``. Ratios are kafkalite's figure divided by the best peer's.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
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
    ap.add_argument("--brokers", default=",".join(_brokers.ALL), help="comma list of kafkalite,tansu,noida,kafka")
    ap.add_argument("--quick", action="store_true", help="100k records, 5 s latency run")
    ap.add_argument("--records", type=int, help="records per produce run (default 1M, quick 100k)")
    ap.add_argument("--repeats", type=int,
                    help="repeats of each produce/consume run, median reported (default: 5). Each "
                         "repeat is a new topic that stays in the broker, so memory-only peers grow with it")
    ap.add_argument("--start-repeats", type=int, default=3, help="repeats of the start-to-ready timing")
    ap.add_argument("--clients", type=int, default=2,
                    help="client processes of the saturated 6-partition produce/consume rows (1: no such rows)")
    ap.add_argument("--rate", type=int, default=2000, help="latency run: messages per second")
    ap.add_argument("--latency-seconds", type=float, help="latency run length (default 10, quick 5)")
    ap.add_argument("--latency-repeats", type=int, default=5, help="latency runs per broker (median)")
    ap.add_argument("--phase-timeout", type=float, help="wall-time bound of one produce/consume run")
    args, _unknown = ap.parse_known_args(argv)
    args.records = args.records or (100_000 if args.quick else 1_000_000)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.latency_seconds = args.latency_seconds or (5.0 if args.quick else 10.0)
    args.phase_timeout = args.phase_timeout or (120.0 if args.quick else 600.0)
    args.broker_list = [b.strip() for b in args.brokers.split(",") if b.strip()]
    return args


class RssSampler:
    """Samples each broker's process-tree RSS every 200 ms in one daemon thread.

    Walking /proc for descendants costs ~10 ms of Python (GIL) time in the client's process, so the tree is
    walked once, at start (every broker here is one process); each tick only reads the known pids' ``VmRSS``
    lines (well under a millisecond). Peak RSS also takes every process's ``VmHWM`` at the end."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        # cleared while a latency run is measured: the sampler shares the GIL with the latency reader
        # thread, and a tree walk (~10 ms) would land in the figures of whichever broker is measured
        self.active = threading.Event()
        self.active.set()
        self.peak_kb = dict.fromkeys(pids, 0)
        self._trees = {name: [pid] for name, pid in pids.items()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._trees = {n: [pid, *_proc.descendants(pid)] for n, pid in self.pids.items()}
        while not self._stop.wait(0.2):
            if not self.active.is_set():
                continue
            for name, tree in self._trees.items():
                self.peak_kb[name] = max(self.peak_kb[name], sum(_proc.rss_kb(p) for p in tree))

    def stop(self) -> dict[str, int]:
        """Stop sampling; peak per broker = max(sampled, tree RSS now, largest VmHWM in the tree)."""
        self._stop.set()
        self._thread.join(2)
        return {n: max(self.peak_kb[n], _proc.tree_rss_kb(pid), _proc.tree_hwm_kb(pid))
                for n, pid in self.pids.items()}


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {
        "records_per_s": statistics.median(r["records_per_s"] for r in runs),
        "mb_per_s": statistics.median(r["mb_per_s"] for r in runs),
        "broker_cpu_us_per_record": statistics.median(r.get("broker_cpu_us_per_record", 0.0) for r in runs),
        "client_cpu_us_per_record": statistics.median(r.get("client_cpu_us_per_record", 0.0) for r in runs),
        "first_record_ms": _median_or_none([r.get("first_record_ms") for r in runs]),
        "complete": all(r["complete"] for r in runs),
        "runs": runs,
    }
    return out


def _median_or_none(values: list[Any]) -> Any:
    present = [v for v in values if isinstance(v, int | float)]
    return statistics.median(present) if present else None


def _median_latency(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median over repeats of each run's p50 and p99 (None when a run received nothing)."""
    out: dict[str, Any] = {"runs": runs}
    for key in ("p50_ms", "p99_ms", "max_ms"):
        values = [r[key] for r in runs if r.get(key) is not None]
        out[key] = round(statistics.median(values), 2) if values else None
    out["complete"] = all(r["received"] == r["sent"] for r in runs)
    cpu = [r["broker_cpu_pct_of_core"] for r in runs if "broker_cpu_pct_of_core" in r]
    out["broker_cpu_pct_of_core"] = statistics.median(cpu) if cpu else None
    return out


def _log(msg: str) -> None:
    print(f"[bench_brokers {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def bench_start(names: list[str], repeats: int, out: dict[str, dict[str, Any]]) -> None:
    """Spawn-to-ready timings, round-robin over the brokers so background load hits them alike."""
    times: dict[str, list[float]] = {n: [] for n in names}
    lines: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(repeats):
        for name in names:
            try:
                running = _brokers.start(name)
            except Exception as exc:
                out[name].setdefault("errors", []).append(f"start: {type(exc).__name__}: {exc}")
                continue
            _LIVE.append(running)
            try:
                times[name].append(running.spawn_to_ready_s)
                if running.ready_line_s is not None:
                    lines[name].append(running.ready_line_s)
            finally:
                _LIVE.remove(running)
                running.stop()
    for name in names:
        if times[name]:
            entry: dict[str, Any] = {"median_s": round(statistics.median(times[name]), 4),
                                     "runs_s": [round(t, 4) for t in times[name]]}
            if lines[name]:
                entry["ready_line_median_s"] = round(statistics.median(lines[name]), 4)
            out[name]["start"] = entry
            _log(f"{name}: start-to-ready median {entry['median_s']} s over {len(times[name])}")


FAILED = object()


def _phase(result: dict[str, Any], key: str, running: _brokers.Running, fn: Any, *a: Any) -> Any:
    """Run one phase; on error record it (and log the broker's log tail) and return FAILED.

    A dict result gets the broker's CPU seconds over the phase (``broker_cpu_s``, and per record when
    it counts records), the same for this client process (librdkafka threads included: when it is well
    above the broker's, the client is what limits the throughput figure), and the 1-minute load average
    at its end (``loadavg_1m``)."""
    if running.proc.poll() is not None:
        result.setdefault("errors", []).append(f"{key}: broker exited ({running.proc.returncode})")
        return FAILED
    try:
        cpu0 = _proc.tree_cpu_s(running.proc.pid)
        client0 = time.process_time()
        t0 = time.perf_counter()
        value = fn(*a)
        if isinstance(value, dict):
            cpu = _proc.tree_cpu_s(running.proc.pid) - cpu0
            client = time.process_time() - client0
            value["broker_cpu_s"] = round(cpu, 2)
            value["client_cpu_s"] = round(client, 2)
            value["broker_cpu_pct_of_core"] = round(cpu / (time.perf_counter() - t0) * 100, 1)
            if value.get("records"):
                value["broker_cpu_us_per_record"] = round(cpu / value["records"] * 1e6, 2)
                value["client_cpu_us_per_record"] = round(client / value["records"] * 1e6, 2)
            value["loadavg_1m"] = round(os.getloadavg()[0], 2)
        return value
    except Exception as exc:  # a peer failing one phase must not sink the others
        result.setdefault("errors", []).append(f"{key}: {type(exc).__name__}: {exc}")
        _log(f"{running.name} {key} failed: {exc}\n{running.log_tail(10)}")
        return FAILED


FILL_TOPIC = "bench-consume-p6"


def _phases(args: argparse.Namespace) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(result section, key, workload arguments) in run order: produce x4, fill, consume x2, latency."""
    phases: list[tuple[str, str, tuple[Any, ...]]] = []
    for parts in (1, 6):
        for acks in ("1", "all"):
            for rep in range(args.repeats):
                phases.append(("produce", f"p{parts}_acks{acks}", (f"bench-p{parts}-acks{acks}-r{rep}", parts,
                                                                   acks)))
    if args.clients > 1:
        for rep in range(args.repeats):
            phases.append(("parallel", f"produce_p6_x{args.clients}", ("produce", f"bench-p6-x{args.clients}-r{rep}")))
    # The 6-partition consume rows read one topic filled evenly (outside the clock): the produce rows' topics
    # come from the sticky partitioner, which leaves some partitions empty (see _load's docstring).
    phases.append(("fill", "fill", (FILL_TOPIC, 6)))
    for parts in (1, 6):
        for rep in range(args.repeats):
            topic = f"bench-p1-acksall-r{rep}" if parts == 1 else FILL_TOPIC
            phases.append(("consume", f"p{parts}", (topic, parts)))
    if args.clients > 1:
        for _rep in range(args.repeats):
            phases.append(("parallel", f"consume_p6_x{args.clients}", ("consume", FILL_TOPIC)))
    for rep in range(args.latency_repeats):
        phases.append(("latency", "latency", (f"bench-latency-r{rep}",)))
    return phases


def _run_phase(section: str, key: str, a: tuple[Any, ...], running: _brokers.Running,
               result: dict[str, Any], args: argparse.Namespace) -> None:
    name = running.name
    if section == "produce":
        topic, parts, acks = a
        if _phase(result, f"create {topic}", running, _load.create_topic, running.bootstrap, topic,
                  parts) is FAILED:
            return
        run = _phase(result, f"produce {key}", running, _load.produce, running.bootstrap, topic,
                     args.records, acks, args.phase_timeout)
        if run is not FAILED:
            _log(f"{name} produce {key}: {run['records_per_s']:,.0f} rec/s {run['mb_per_s']} MB/s "
                 f"complete={run['complete']}")
            result.setdefault("_runs", {}).setdefault(("produce", key), []).append(run)
    elif section == "fill":   # not a row: the even 6-partition topic the consume rows read
        topic, parts = a
        if _phase(result, f"create {topic}", running, _load.create_topic, running.bootstrap, topic,
                  parts) is FAILED:
            return
        run = _phase(result, f"fill {topic}", running, _load.produce, running.bootstrap, topic, args.records,
                     "all", args.phase_timeout, parts)
        if run is not FAILED and not run["complete"]:
            result.setdefault("errors", []).append(f"fill {topic}: {run['records']}/{args.records} acknowledged")
    elif section == "parallel":
        kind, topic = a
        if kind == "produce" and _phase(result, f"create {topic}", running, _load.create_topic, running.bootstrap,
                                        topic, 6) is FAILED:
            return
        run = _phase(result, key, running, _load.parallel, kind, running.bootstrap, topic, 6, args.records,
                     args.clients, args.phase_timeout)
        if run is not FAILED:
            run["client_cpu_us_per_record"] = round(run["children_client_cpu_s"] / max(run["records"], 1) * 1e6, 2)
            _log(f"{name} {key}: {run['records_per_s']:,.0f} rec/s complete={run['complete']}")
            result.setdefault("_runs", {}).setdefault(("parallel", key), []).append(run)
    elif section == "consume":
        topic, parts = a
        run = _phase(result, f"consume {key}", running, _load.consume, running.bootstrap, topic, parts,
                     args.records, args.phase_timeout)
        if run is not FAILED:
            _log(f"{name} consume {key}: {run['records_per_s']:,.0f} rec/s complete={run['complete']}")
            result.setdefault("_runs", {}).setdefault(("consume", key), []).append(run)
    else:
        (topic,) = a
        if _phase(result, "create latency topic", running, _load.create_topic, running.bootstrap, topic,
                  1) is FAILED:
            return
        lat = _phase(result, "latency", running, _load.latency, running.bootstrap, topic, args.rate,
                     args.latency_seconds)
        if lat is not FAILED:
            _log(f"{name} latency @ {args.rate}/s: p50 {lat['p50_ms']} ms p99 {lat['p99_ms']} ms "
                 f"({lat['received']}/{lat['sent']})")
            result.setdefault("_runs", {}).setdefault(("latency", "latency"), []).append(lat)


def _freeze_others(trees: dict[str, list[int]], active: str | None) -> None:
    """SIGCONT the broker under load (``active``; None: all), SIGSTOP every other one.

    A broker with no client is not necessarily idle: after the produce phases Tansu keeps ~90 % of a core
    busy and noida-db ~85 %, on a 2-core machine where the measured broker and its client need both cores.
    Frozen, they cannot disturb another broker's run; their memory is untouched (RSS is still sampled)."""
    for name, pids in trees.items():
        sig = signal.SIGCONT if active is None or name == active else signal.SIGSTOP
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


def bench_workload(names: list[str], args: argparse.Namespace, out: dict[str, dict[str, Any]]) -> None:
    """All brokers up at once (idle ones cost ~no CPU); each phase is run on one broker at a time,
    alternating the order, so slow drifts in the shared machine's load spread over all of them."""
    running: dict[str, _brokers.Running] = {}
    sampler: RssSampler | None = None
    try:
        for name in names:
            try:
                running[name] = _brokers.start(name)
            except Exception as exc:
                out[name].setdefault("errors", []).append(f"start: {type(exc).__name__}: {exc}")
                continue
            _LIVE.append(running[name])
        time.sleep(1.0)
        for name, r in running.items():
            out[name]["idle_rss_mb"] = round(_proc.tree_rss_kb(r.proc.pid) / 1024, 1)
        sampler = RssSampler({name: r.proc.pid for name, r in running.items()})
        trees = {name: [r.proc.pid, *_proc.descendants(r.proc.pid)] for name, r in running.items()}
        order = list(running)
        for i, (section, key, a) in enumerate(_phases(args)):
            if section == "latency":   # peak RSS stays covered: every process's VmHWM is read at the end
                sampler.active.clear()
            for name in order if i % 2 == 0 else order[::-1]:
                _freeze_others(trees, name)
                # kafkalite's log is on disk: without this, the kernel writes an earlier phase's dirty pages
                # back (~30 s later, dirty_expire) during whichever broker's run comes then
                os.sync()
                _run_phase(section, key, a, running[name], out[name], args)
        peaks = sampler.stop()
        for name in running:
            runs = out[name].pop("_runs", {})
            for (section, key), rs in runs.items():
                if section == "latency":
                    out[name]["latency"] = _median_latency(rs)
                else:
                    out[name].setdefault(section, {})[key] = _median_run(rs)
            out[name]["peak_rss_mb"] = round(peaks[name] / 1024, 1)
    finally:
        if sampler is not None:
            sampler.stop()
        _freeze_others({name: [r.proc.pid] for name, r in running.items()}, None)
        for r in running.values():
            if r in _LIVE:
                _LIVE.remove(r)
            r.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    atexit.register(_stop_all)
    previous = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (run_all's time limit) must unwind through the finally below, which stops the brokers.
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    out: dict[str, Any] = {
        "config": {"records": args.records, "record_bytes": _load.RECORD_SIZE, "repeats": args.repeats,
                   "start_repeats": args.start_repeats, "latency_rate": args.rate,
                   "latency_seconds": args.latency_seconds, "latency_repeats": args.latency_repeats,
                   "clients": args.clients,
                   "quick": args.quick},
        "brokers": {},
    }
    try:
        names = []
        for name in args.broker_list:
            out["brokers"][name] = {"storage": _brokers.STORAGE_NOTE.get(name, "?")}
            reason = _brokers.available(name)
            if reason:
                out["brokers"][name]["skipped"] = reason
                _log(f"skip {name}: {reason}")
            else:
                names.append(name)
        _log(f"start-to-ready x{args.start_repeats}: {', '.join(names)}")
        bench_start(names, args.start_repeats, out["brokers"])
        _log(f"workload: {args.records:,} records per run, brokers {', '.join(names)}")
        bench_workload(names, args, out["brokers"])
    finally:
        _stop_all()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    table = broker_table(out["brokers"], args)
    out["markdown"] = table
    print(table, flush=True)
    return out


if __name__ == "__main__":
    main()
