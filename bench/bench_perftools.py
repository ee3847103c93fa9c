"""Apache Kafka's own perf tools against kafkalite and against Apache Kafka 4.4, in one run, as ratios.

The tools are ``kafka-producer-perf-test`` (``org.apache.kafka.tools.ProducerPerformance``) and
``kafka-consumer-perf-test`` (``org.apache.kafka.tools.ConsumerPerformance``) from kafka-tools 4.4.0, run on the
jars ``tools/bootstrap.sh reference`` puts in ``.deps/kafka-4.4/libs`` (the classpath the compat harness starts
Kafka from, ``compat-tests/harness/reference.py``), each in its own JVM with the heap and GC flags Kafka's
``bin/`` scripts give them (:data:`TOOL_JVM`: ``-Xmx512M``, G1 with 20 ms pause target).

Both brokers are started once by ``bench/_brokers.py`` (kafkalite: ``python -m kafkalite serve``, its defaults;
Kafka: a one-node KRaft broker+controller, ``-Xmx1g -Xms128m -XX:+UseG1GC -XX:MaxGCPauseMillis=20``, 2 network
and 4 I/O threads, see ``_brokers.py``) and stay up; every step runs on one broker at a time while the other is
frozen (SIGSTOP), the page cache synced before each tool run, the order alternating between repeats:

1. ``kafka-producer-perf-test --num-records N --record-size S --throughput -1`` into a fresh topic of
   ``--partitions`` partitions with the Java producer's 4.x defaults (acks=all, idempotence on, linger.ms=5,
   batch.size=16384): records/s, MB/s, latency avg/p50/p99 (the tool's summary line; at full throttle its
   latency is mostly the time a record waits in the producer's own queue);
2. the same tool throttled, ``--throughput R`` for ``--rate-records`` records: latency avg/p50/p99 at a rate
   both brokers keep up with;
3. ``kafka-consumer-perf-test --num-records N`` on step 1's topic (a new group each run, from the earliest
   offset): fetch MB/s and fetch records/s (the tool's ``fetch.*`` columns leave out the group join,
   ``rebalance.time.ms``, which is reported beside them).

Every figure is the median over ``--repeats`` runs; the broker's CPU seconds per run (its process tree, /proc)
give CPU per record. Ratios are kafkalite's figure divided by Kafka's (throughput: above 1 = kafkalite faster;
latency and CPU: below 1 = kafkalite lower).

Run: ``python -m bench.bench_perftools [--records N] [--repeats K] [--quick]`` or
``make bench ARGS="--only perftools"``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

from bench import _brokers, _load, _proc
from bench._report import table

BENCH_TIMEOUT = 2400  # seconds; read (without importing) by bench.run_all
BROKERS = ("kafkalite", "kafka")
PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"
# What Kafka's bin/kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh run with: KAFKA_HEAP_OPTS=-Xmx512M,
# and kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS
TOOL_JVM = ["-Xmx512M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
            "-Djava.awt.headless=true"]
# the broker JVM: _brokers.KAFKA_HEAP with reference.java_command's flags
BROKER_JVM = [f"-Xmx{_brokers.KAFKA_HEAP}", "-Xms128m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]

_LIVE: list[_brokers.Running] = []
# "1000 records sent, 5000.0 records/sec (0.48 MB/sec), 2.10 ms avg latency, 30.00 ms max latency,
#  2 ms 50th, 4 ms 95th, 9 ms 99th, 30 ms 99.9th."  (ProducerPerformance.Stats.printTotal)
_PRODUCER_TOTAL = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max "
    r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$", re.M)
_CONSUMER_COLUMNS = ("start_time", "end_time", "mb", "mb_per_s", "records", "records_per_s", "rebalance_ms",
                     "fetch_ms", "fetch_mb_per_s", "fetch_records_per_s")


def _stop_all() -> None:
    while _LIVE:
        _LIVE.pop().stop()


def _on_sigterm(_signum: int, _frame: Any) -> None:
    raise SystemExit(143)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bench.bench_perftools", description=__doc__.split("\n")[0])
    ap.add_argument("--brokers", default=",".join(BROKERS), help="comma list of kafkalite,kafka")
    ap.add_argument("--quick", action="store_true", help="100k records, 3 repeats")
    ap.add_argument("--records", type=int, help="records per producer/consumer run (default 500k, quick 100k)")
    ap.add_argument("--record-size", type=int, default=100, help="bytes per record (the tool's --record-size)")
    ap.add_argument("--partitions", type=int, default=1, help="partitions of each topic")
    ap.add_argument("--repeats", type=int, help="runs of each tool per broker, median reported (default 5, quick 3)")
    ap.add_argument("--rate", type=int, default=5000, help="records/s of the throttled producer run (0: none)")
    ap.add_argument("--rate-records", type=int, help="records of the throttled run (default 5 s at --rate)")
    ap.add_argument("--tool-timeout", type=float, help="wall-time bound of one tool run (default 300 s)")
    args, _unknown = ap.parse_known_args(argv)
    args.records = args.records or (100_000 if args.quick else 500_000)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.rate_records = args.rate_records or args.rate * 5
    args.tool_timeout = args.tool_timeout or 300.0
    args.broker_list = [b.strip() for b in args.brokers.split(",") if b.strip()]
    return args


def _log(msg: str) -> None:
    print(f"[bench_perftools {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def tool_command(main: str, *args: str) -> list[str]:
    ref = _brokers._reference()
    java = ref._java() or "java"
    return [java, *TOOL_JVM, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", str(ref.LIBS / "*"), main,
            *args]


def _run_tool(cmd: list[str], timeout: float) -> str:
    """Run one tool JVM to its end; its stdout (stderr appended on failure)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _proc.kill_tree(proc.pid, grace=5.0)
        out, err = proc.communicate()
        raise RuntimeError(f"{cmd[-1]}... still running after {timeout:.0f} s:\n"
                           f"{err.decode(errors='replace')[-1500:]}") from None
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"exit {proc.returncode}: {(text + err.decode(errors='replace'))[-2000:]}")
    return text


def parse_producer(text: str) -> dict[str, Any]:
    """The summary line of ProducerPerformance (the last one: a warm-up run prints a steady-state line after)."""
    matches = _PRODUCER_TOTAL.findall(text)
    if not matches:
        raise ValueError(f"no summary line in the producer tool's output:\n{text[-1500:]}")
    n, rps, mbps, avg, mx, p50, p95, p99, p999 = matches[-1]
    return {"records": int(n), "records_per_s": float(rps), "mb_per_s": float(mbps), "latency_avg_ms": float(avg),
            "latency_max_ms": float(mx), "latency_p50_ms": int(p50), "latency_p95_ms": int(p95),
            "latency_p99_ms": int(p99), "latency_p999_ms": int(p999)}


def parse_consumer(text: str) -> dict[str, Any]:
    """ConsumerPerformance's result line (``start.time, end.time, data.consumed.in.MB, MB.sec, ...``)."""
    for line in reversed(text.splitlines()):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == len(_CONSUMER_COLUMNS) and fields[0][:1].isdigit():
            row: dict[str, Any] = dict(zip(_CONSUMER_COLUMNS, fields, strict=True))
            for key in _CONSUMER_COLUMNS[2:]:
                row[key] = int(row[key]) if key in ("records", "rebalance_ms", "fetch_ms") else float(row[key])
            row["warning"] = "WARNING: Exiting before consuming" in text
            return row
    raise ValueError(f"no result line in the consumer tool's output:\n{text[-1500:]}")


def producer_run(bootstrap: str, topic: str, records: int, size: int, throughput: int, timeout: float
                 ) -> dict[str, Any]:
    out = _run_tool(tool_command(PRODUCER, "--bootstrap-server", bootstrap, "--topic", topic,
                                 "--num-records", str(records), "--record-size", str(size),
                                 "--throughput", str(throughput), "--command-property", "acks=all",
                                 f"client.id=perf-{uuid.uuid4().hex[:6]}"), timeout)
    run = parse_producer(out)
    run["complete"] = run["records"] == records
    return run


def consumer_run(bootstrap: str, topic: str, records: int, timeout: float) -> dict[str, Any]:
    out = _run_tool(tool_command(CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic,
                                 "--num-records", str(records), "--group", f"perf-{uuid.uuid4().hex[:10]}",
                                 "--timeout", str(int(min(timeout, 60) * 1000))), timeout)
    run = parse_consumer(out)
    run["complete"] = run["records"] == records and not run["warning"]
    return run


def _freeze_others(trees: dict[str, list[int]], active: str | None) -> None:
    """SIGCONT the broker under test (``active``; None: all), SIGSTOP the other (see bench_brokers)."""
    for name, pids in trees.items():
        sig = signal.SIGCONT if active is None or name == active else signal.SIGSTOP
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


def _measured(running: _brokers.Running, fn: Any, *a: Any) -> dict[str, Any]:
    """``fn(*a)`` with the broker's CPU over it and the load average at its end."""
    cpu0 = _proc.tree_cpu_s(running.proc.pid)
    t0 = time.perf_counter()
    run: dict[str, Any] = fn(*a)
    cpu = _proc.tree_cpu_s(running.proc.pid) - cpu0
    run["wall_s"] = round(time.perf_counter() - t0, 2)
    run["broker_cpu_s"] = round(cpu, 2)
    if run.get("records"):
        run["broker_cpu_us_per_record"] = round(cpu / run["records"] * 1e6, 2)
    run["loadavg_1m"] = round(os.getloadavg()[0], 2)
    return run


def _one_repeat(rep: int, running: _brokers.Running, args: argparse.Namespace, runs: dict[str, list[Any]],
                errors: list[str]) -> None:
    bs = running.bootstrap
    topic = f"perf-r{rep}-{uuid.uuid4().hex[:6]}"
    steps: list[tuple[str, Any, tuple[Any, ...]]] = [
        ("produce", producer_run, (bs, topic, args.records, args.record_size, -1, args.tool_timeout)),
        ("consume", consumer_run, (bs, topic, args.records, args.tool_timeout)),
    ]
    if args.rate > 0:
        steps.append(("produce_rate", producer_run, (bs, f"{topic}-rate", args.rate_records, args.record_size,
                                                     args.rate, args.tool_timeout)))
    try:
        _load.create_topic(bs, topic, args.partitions)
        if args.rate > 0:
            _load.create_topic(bs, f"{topic}-rate", args.partitions)
    except Exception as exc:
        errors.append(f"create {topic}: {type(exc).__name__}: {exc}")
        return
    for key, fn, a in steps:
        if running.proc.poll() is not None:
            errors.append(f"{key}: broker exited ({running.proc.returncode})")
            return
        os.sync()
        try:
            run = _measured(running, fn, *a)
        except Exception as exc:   # one failed run must not sink the others
            errors.append(f"{key} r{rep}: {type(exc).__name__}: {exc}")
            _log(f"{running.name} {key} failed: {exc}\n{running.log_tail(10)}")
            continue
        runs.setdefault(key, []).append(run)
        if key == "consume":
            _log(f"{running.name} {key} r{rep}: fetch {run['fetch_records_per_s']:,.0f} rec/s "
                 f"{run['fetch_mb_per_s']} MB/s (rebalance {run['rebalance_ms']} ms) complete={run['complete']}")
        else:
            _log(f"{running.name} {key} r{rep}: {run['records_per_s']:,.0f} rec/s {run['mb_per_s']} MB/s, "
                 f"latency avg {run['latency_avg_ms']} p50 {run['latency_p50_ms']} p99 {run['latency_p99_ms']} ms "
                 f"complete={run['complete']}")


MEDIANS = {
    "produce": ("records_per_s", "mb_per_s", "latency_avg_ms", "latency_p50_ms", "latency_p99_ms",
                "latency_max_ms", "broker_cpu_us_per_record", "loadavg_1m"),
    "produce_rate": ("records_per_s", "latency_avg_ms", "latency_p50_ms", "latency_p99_ms", "latency_max_ms",
                     "broker_cpu_us_per_record", "loadavg_1m"),
    "consume": ("fetch_records_per_s", "fetch_mb_per_s", "records_per_s", "mb_per_s", "rebalance_ms",
                "broker_cpu_us_per_record", "loadavg_1m"),
}


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, rs in runs.items():
        entry: dict[str, Any] = {f: statistics.median(r[f] for r in rs) for f in MEDIANS[key] if all(f in r for r in rs)}
        entry["complete"] = all(r["complete"] for r in rs)
        entry["repeats"] = len(rs)
        entry["runs"] = rs
        out[key] = entry
    return out


ROWS = [  # (label, section, field, unit, higher is better)
    ("producer records/s (--throughput -1)", "produce", "records_per_s", "rec/s", True),
    ("producer MB/s", "produce", "mb_per_s", "MB/s", True),
    ("producer latency avg", "produce", "latency_avg_ms", "ms", False),
    ("producer latency p50", "produce", "latency_p50_ms", "ms", False),
    ("producer latency p99", "produce", "latency_p99_ms", "ms", False),
    ("broker CPU per record, producer run", "produce", "broker_cpu_us_per_record", "µs", False),
    ("throttled producer latency avg", "produce_rate", "latency_avg_ms", "ms", False),
    ("throttled producer latency p50", "produce_rate", "latency_p50_ms", "ms", False),
    ("throttled producer latency p99", "produce_rate", "latency_p99_ms", "ms", False),
    ("consumer fetch MB/s", "consume", "fetch_mb_per_s", "MB/s", True),
    ("consumer fetch records/s", "consume", "fetch_records_per_s", "rec/s", True),
    ("consumer group join (rebalance.time.ms)", "consume", "rebalance_ms", "ms", False),
    ("broker CPU per record, consumer run", "consume", "broker_cpu_us_per_record", "µs", False),
]


def _cell(value: Any, unit: str) -> str:
    if not isinstance(value, int | float):
        return "–"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}"


def render(brokers: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    names = [n for n in args.broker_list if n in brokers]
    rows = []
    for label, section, field, unit, _higher in ROWS:
        if section == "produce_rate":
            label = label.replace("throttled", f"at {args.rate:,} rec/s:")
        values = [brokers[n].get(section, {}).get(field) for n in names]
        ratio = "–"
        if len(names) == 2 and all(isinstance(v, int | float) for v in values) and values[1]:
            ratio = f"{values[0] / values[1]:.2f}×"
        rows.append([label, *(_cell(v, unit) for v in values), ratio])
    header = ["metric", *names, f"{names[0]} ÷ {names[1]}" if len(names) == 2 else "ratio"]
    note = (f"\n\nKafka's kafka-producer-perf-test / kafka-consumer-perf-test (kafka-tools 4.4.0), "
            f"{args.records:,} × {args.record_size} B records per run, {args.partitions} partition(s), median of "
            f"{args.repeats} runs per broker, brokers alternating, the other frozen. Tool JVMs: "
            f"{' '.join(TOOL_JVM[:4])}; Kafka 4.4 broker JVM: {' '.join(BROKER_JVM)}.")
    load = [brokers[n].get(s, {}).get("loadavg_1m") for n in names for s in ("produce", "consume")]
    load = [x for x in load if isinstance(x, int | float)]
    if load:
        note += f" Load average (1 min) at the runs' ends: median {statistics.median(load):.2f}."
    errors = [f"- {n}: {e.splitlines()[0][:300]}" for n in names for e in brokers[n].get("errors", [])]
    return table(header, rows) + note + ("\n\n" + "\n".join(errors) if errors else "")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    atexit.register(_stop_all)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)   # unwind through finally: brokers stopped
    out: dict[str, Any] = {
        "config": {"records": args.records, "record_bytes": args.record_size, "partitions": args.partitions,
                   "repeats": args.repeats, "rate": args.rate, "rate_records": args.rate_records,
                   "tool_jvm": " ".join(TOOL_JVM), "kafka_broker_jvm": " ".join(BROKER_JVM),
                   "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]},
        "brokers": {},
    }
    running: dict[str, _brokers.Running] = {}
    try:
        tools_missing = _brokers._reference().missing()
        for name in args.broker_list:
            out["brokers"][name] = {}
            reason = tools_missing or _brokers.available(name)
            if reason:
                out["brokers"][name]["skipped"] = reason
                _log(f"skip {name}: {reason}")
                continue
            try:
                running[name] = _brokers.start(name)
            except Exception as exc:
                out["brokers"][name]["errors"] = [f"start: {type(exc).__name__}: {exc}"]
                continue
            _LIVE.append(running[name])
        trees = {n: [r.proc.pid, *_proc.descendants(r.proc.pid)] for n, r in running.items()}
        order = list(running)
        collected: dict[str, dict[str, list[Any]]] = {n: {} for n in running}
        for rep in range(args.repeats):
            for name in order if rep % 2 == 0 else order[::-1]:
                _freeze_others(trees, name)
                _one_repeat(rep, running[name], args, collected[name],
                            out["brokers"][name].setdefault("errors", []))
        _freeze_others(trees, None)
        for name, runs in collected.items():
            out["brokers"][name].update(summarize(runs))
            if not out["brokers"][name].get("errors"):
                out["brokers"][name].pop("errors", None)
    finally:
        with contextlib.suppress(Exception):
            _freeze_others({n: [r.proc.pid] for n, r in running.items()}, None)
        _stop_all()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    out["config"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out["markdown"] = render(out["brokers"], args)
    print(out["markdown"], flush=True)
    return out


if __name__ == "__main__":
    main()
