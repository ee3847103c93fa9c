"""Many partitions under a small descriptor limit: a real `kafkalite serve` process started with
RLIMIT_NOFILE = 1,024 (soft and hard, as `prlimit --nofile=1024` sets them) serves N partitions.

Phases, each timed from the client (the raw wire client of the tests, many partitions per request):
create (CreateTopics, 10 topics a request), Metadata for all topics, produce one record to every partition
(acks=all, 2,000 partitions a request), fetch every partition from offset 0, clean stop (SIGTERM to exit),
restart (spawn to the ready line, clean data dir) and the first fetch of everything after it. RSS is read
from /proc: idle after the restart, and the peak (VmHWM) of the first run. During create, Metadata and
produce a second connection sends ApiVersions every 10 ms: the slowest answer is the longest wait another
client saw (event-loop stall). Descriptors in use are sampled from /proc/<pid>/fd.

    python -m bench.bench_partitions [--quick] [--topics T --partitions P] [--nofile N] [--dir DIR]

Default 100 topics x 1,000 partitions; --quick: 10 x 500. The data dir is a temporary directory under
--dir (default: the system temp dir); creation time is dominated by the file system (a directory and five
files per partition).
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kafkalite.tests.support.fdlimit import LimitedBroker, create_topics, fetch_all, metadata_all, produce_all
from kafkalite_wire.messages import ApiVersionsRequest

BENCH_TIMEOUT = 3600


class Pinger:
    """ApiVersions every `period` s on its own connection; the slowest round trip per phase."""

    def __init__(self, broker: LimitedBroker, period: float = 0.01) -> None:
        self.client = broker.client(timeout=300)
        self.period = period
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        req = ApiVersionsRequest(client_software_name="bench", client_software_version="1")
        while not self._stop.is_set():
            t = time.perf_counter()
            self.client.request(req, 3)
            self.worst = max(self.worst, time.perf_counter() - t)
            time.sleep(self.period)

    def take(self) -> float:
        worst, self.worst = self.worst, 0.0
        return round(worst * 1000, 1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.client.close()


def run(topics_n: int, partitions: int, nofile: int, base: str | None) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-partitions-", dir=base))
    out: dict[str, Any] = {"topics": topics_n, "partitions_per_topic": partitions,
                           "partitions": topics_n * partitions, "rlimit_nofile": nofile}
    try:
        st = os.statvfs(root)
        out["data_dir_fs_free_gb"] = round(st.f_bavail * st.f_frsize / 1e9, 1)
        broker = LimitedBroker(root / "data", nofile, root / "broker.log")
        topics = {f"bench-{i:04d}": partitions for i in range(topics_n)}
        out["start_empty_s"] = round(broker.start(), 3)
        fds: list[int] = []
        try:
            ping = Pinger(broker)
            with broker.client(timeout=3600) as c:
                t = time.perf_counter()
                res = create_topics(c, topics, per_request=10)
                out["create_s"] = round(time.perf_counter() - t, 2)
                out["create_errors"] = sum(1 for r in res.values() if r.error_code)
                out["create_max_wait_other_client_ms"] = ping.take()
                fds.append(broker.open_fds())
                t = time.perf_counter()
                md = metadata_all(c)
                out["metadata_s"] = round(time.perf_counter() - t, 3)
                out["metadata_partitions"] = sum(len(x.partitions) for x in md.topics)
                out["metadata_max_wait_other_client_ms"] = ping.take()
                t = time.perf_counter()
                codes = produce_all(c, topics)
                out["produce_all_s"] = round(time.perf_counter() - t, 2)
                out["produce_errors"] = sum(n for code, n in codes.items() if code)
                out["produce_max_wait_other_client_ms"] = ping.take()
                fds.append(broker.open_fds())
                t = time.perf_counter()
                got = fetch_all(c, topics)
                out["fetch_all_s"] = round(time.perf_counter() - t, 2)
                out["fetch_missing"] = sum(1 for v in got.values() if v != 1)
                out["fetch_max_wait_other_client_ms"] = ping.take()
            ping.close()
            out["rss_peak_mb"] = round(broker.rss_kb(peak=True) / 1024, 1)
        finally:
            t = time.perf_counter()
            out["stop_exit"] = broker.stop(timeout=3600)
            out["stop_s"] = round(time.perf_counter() - t, 2)
        out["restart_s"] = round(broker.start(), 3)
        try:
            time.sleep(1.0)
            out["rss_idle_after_restart_mb"] = round(broker.rss_kb() / 1024, 1)
            with broker.client(timeout=3600) as c:
                t = time.perf_counter()
                got = fetch_all(c, topics)
                out["fetch_all_after_restart_s"] = round(time.perf_counter() - t, 2)
                out["fetch_missing_after_restart"] = sum(1 for v in got.values() if v != 1)
            fds.append(broker.open_fds())
            out["rss_after_fetch_all_mb"] = round(broker.rss_kb() / 1024, 1)
        finally:
            broker.stop(timeout=3600)
        out["max_open_fds_seen"] = max(fds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--topics", type=int)
    ap.add_argument("--partitions", type=int)
    ap.add_argument("--nofile", type=int, default=1024)
    ap.add_argument("--dir", default=None, help="parent of the temporary data dir")
    args = ap.parse_args()
    quick = args.quick or os.environ.get("BENCH_QUICK") == "1"
    topics_n = args.topics or (10 if quick else 100)
    partitions = args.partitions or (500 if quick else 1000)
    out = run(topics_n, partitions, args.nofile, args.dir)
    for k, v in out.items():
        print(f"{k:40s} {v}")
    return out


if __name__ == "__main__":
    main()
