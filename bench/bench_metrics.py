"""What the metrics hook costs: produce and fetch throughput of a broker with ``--metrics`` vs one without.

Two ``kafkalite serve`` processes run side by side (one with the Prometheus endpoint on, one off). Each round
produces ``--records`` 100-byte records (acks=1, 6 partitions, bench._load's client settings) to a fresh topic
on each broker in turn, then consumes them back; the order alternates per round so the shared machine's drift
hits both alike. Reported: median records/s of each phase, the broker's CPU microseconds per record over all
rounds and its median per round (its threads' CPU time from /proc/<pid>/task/*/schedstat), and the ratios
on/off; also the hook's own cost per request measured in process (``RequestMetrics.observe`` on a
one-partition Produce / Fetch) next to the broker's CPU per request (CPU / the requests it counted).
At the end the metrics broker's ``messagesin`` counter is checked against what was produced.

    python -m bench.bench_metrics [--records 200000] [--rounds 5] [--quick]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

from bench import _load, _proc

BENCH_TIMEOUT = 900
_METRICS_RE = re.compile(r"metrics on (http://\S+/metrics)")


class _Broker:
    def __init__(self, metrics: bool) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
        self.log = self.workdir / "broker.log"
        cmd = [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
               str(self.workdir / "data"), "--log-level", "INFO"]
        if metrics:
            cmd += ["--metrics", "127.0.0.1:0"]
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("kafkalite ready on "):
            self.stop()
            raise RuntimeError(f"broker did not start: {line!r}")
        self.bootstrap = line.strip().rsplit(" ", 1)[1]
        self.url = None
        if metrics:
            m = _METRICS_RE.search(self.log.read_text())
            assert m, "no metrics line in the log"
            self.url = m.group(1)

    def cpu_s(self) -> float:
        """CPU seconds of the broker's threads, from /proc/<pid>/task/*/schedstat (nanoseconds; the clock-tick
        figure of /proc/<pid>/stat is too coarse for one round), else the tick-based total."""
        try:
            total = 0
            for tid in os.listdir(f"/proc/{self.proc.pid}/task"):
                with open(f"/proc/{self.proc.pid}/task/{tid}/schedstat", "rb") as fh:
                    total += int(fh.read().split()[0])
            return total / 1e9
        except (OSError, ValueError, IndexError):
            return _proc.tree_cpu_s(self.proc.pid)

    def stop(self) -> None:
        _proc.kill_tree(self.proc.pid, grace=10.0)
        import shutil

        shutil.rmtree(self.workdir, ignore_errors=True)


def _phase(broker: _Broker, fn: Any, *args: Any) -> tuple[float, float, int]:
    """(records/s, broker CPU seconds, records) of one produce or consume run."""
    cpu0 = broker.cpu_s()
    out = fn(*args)
    cpu = broker.cpu_s() - cpu0
    if not out["complete"]:
        raise RuntimeError(f"incomplete run: {out}")
    return out["records_per_s"], cpu, out["records"]


def _hook_cost(n: int = 50_000) -> dict[str, float]:
    """µs of RequestMetrics.observe for a one-partition Produce and a one-partition Fetch (median of 5)."""
    from kafkalite.metrics.requests import RequestMetrics
    from kafkalite_storage.testing import encode_batch
    from kafkalite_wire.messages import FetchResponse, ProduceRequest, ProduceResponse

    class _State:
        topics_by_id: ClassVar[dict[Any, Any]] = {}

    m = RequestMetrics(_State())
    batch = encode_batch([b"v" * 100] * 100)
    preq = ProduceRequest(acks=1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    presp = ProduceResponse(responses=[ProduceResponse.TopicProduceResponse(name="t", partition_responses=[
        ProduceResponse.PartitionProduceResponse(index=0, error_code=0, base_offset=0)])])
    fresp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[
        FetchResponse.PartitionData(partition_index=0, records=[(3, 0, 10_000)])])])
    out = {}
    for name, key, req, resp in (("produce", 0, preq, presp), ("fetch", 1, None, fresp)):
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                m.observe(key, 9, req, resp, 0.3)
            runs.append((time.perf_counter() - t0) / n * 1e6)
        out[name] = round(statistics.median(runs), 2)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="50,000 records, 3 rounds")
    args, _ = ap.parse_known_args(argv if argv is not None else sys.argv[1:])
    if args.quick:
        args.records, args.rounds = 50_000, 3
    off, on = _Broker(False), _Broker(True)
    rps: dict[str, dict[str, list[float]]] = {m: {"produce": [], "consume": []} for m in ("off", "on")}
    cpu: dict[str, dict[str, list[float]]] = {m: {"produce": [0.0, 0], "consume": [0.0, 0]} for m in ("off", "on")}
    per_round: dict[str, dict[str, list[float]]] = {m: {"produce": [], "consume": []} for m in ("off", "on")}
    try:
        for r in range(args.rounds):
            order = [("off", off), ("on", on)] if r % 2 == 0 else [("on", on), ("off", off)]
            for mode, broker in order:
                topic = f"m-{mode}-{r}"
                _load.create_topic(broker.bootstrap, topic, 6)
                for phase, fn, fargs in (("produce", _load.produce, (topic, args.records, "1", 120.0)),
                                         ("consume", _load.consume, (topic, 6, args.records, 120.0))):
                    speed, secs, n = _phase(broker, fn, broker.bootstrap, *fargs)
                    rps[mode][phase].append(speed)
                    cpu[mode][phase][0] += secs
                    cpu[mode][phase][1] += n
                    per_round[mode][phase].append(secs / n * 1e6)
        assert on.url is not None
        with urllib.request.urlopen(on.url, timeout=30) as resp:
            text = resp.read().decode()
        m = re.search(r"^kafka_server_brokertopicmetrics_messagesin_total (\d+)", text, re.M)
        counted = int(m.group(1)) if m else -1
        requests = {api: sum(int(float(v)) for v in re.findall(
            rf'^kafka_network_requestmetrics_requests_total{{request="{api}",version="\d+"}} (\S+)', text, re.M))
            for api in ("Produce", "Fetch")}
    finally:
        off.stop()
        on.stop()
    rows = []
    for phase in ("produce", "consume"):
        a, b = statistics.median(rps["off"][phase]), statistics.median(rps["on"][phase])
        rows.append({"measure": f"{phase} records/s (median)", "metrics_off": round(a), "metrics_on": round(b),
                     "on/off": round(b / a, 3)})
    for phase in ("produce", "consume"):
        a = cpu["off"][phase][0] / cpu["off"][phase][1] * 1e6
        b = cpu["on"][phase][0] / cpu["on"][phase][1] * 1e6
        rows.append({"measure": f"{phase} broker CPU µs/record (all rounds)", "metrics_off": round(a, 4),
                     "metrics_on": round(b, 4), "on/off": round(b / a, 3)})
    for phase in ("produce", "consume"):
        a, b = statistics.median(per_round["off"][phase]), statistics.median(per_round["on"][phase])
        rows.append({"measure": f"{phase} broker CPU µs/record (median)", "metrics_off": round(a, 4),
                     "metrics_on": round(b, 4), "on/off": round(b / a, 3)})
    hook = _hook_cost()
    per_request = {"Produce": cpu["on"]["produce"][0] * 1e6 / max(requests["Produce"], 1),
                   "Fetch": cpu["on"]["consume"][0] * 1e6 / max(requests["Fetch"], 1)}
    result = {"records": args.records, "rounds": args.rounds, "rows": rows, "hook_us_per_request": hook,
              "broker_cpu_us_per_request": {k: round(v, 1) for k, v in per_request.items()},
              "messagesin_counted": counted, "messagesin_expected": args.records * args.rounds,
              "samples_records_per_s": rps}
    for row in rows:
        print(f"{row['measure']:42s} off {row['metrics_off']:>12,}  on {row['metrics_on']:>12,}  "
              f"on/off {row['on/off']:.3f}")
    print(f"hook cost per request (in process): produce {hook['produce']} µs, fetch {hook['fetch']} µs; the metrics "
          f"broker's CPU per request: Produce {per_request['Produce']:.1f} µs, Fetch {per_request['Fetch']:.1f} µs "
          f"({requests['Produce']:,} / {requests['Fetch']:,} requests)")
    print(f"messagesin counted {counted:,} of {args.records * args.rounds:,} produced")
    return result


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
