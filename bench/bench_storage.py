"""Storage benchmarks (medians over repeats; ratios measured in the same run on the same disk).

* Append of 1 MiB record batches through `PartitionLog.append` (validate + CRC-32C + patched header + pwritev
  to the page cache, index upkeep) vs a plain `os.write` loop writing the same bytes to a file in the same
  directory. Target: throughput ratio log/raw >= 0.7.
* Read-by-offset (`PartitionLog.read`, 64 KiB, random offsets) on logs with few vs many segments: the cost
  should stay flat because both the segment lookup and the offset index lookup are binary searches and the
  forward scan is bounded by index.interval.bytes. Reports microseconds per read and batch headers scanned.

    python -m bench.bench_storage [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import kafkalite_storage.segment as _segment
from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.testing import Rec, encode_batch

BENCH_TIMEOUT = 600
BENCH_DIR = Path(__file__).resolve().parent


def _workdir() -> str:
    base = os.environ.get("KAFKALITE_BENCH_TMP", str(BENCH_DIR))
    return tempfile.mkdtemp(prefix=".bench-storage-", dir=base)


def bench_append(n_batches: int, repeats: int) -> dict[str, Any]:
    batch = encode_batch([Rec(os.urandom(1024 * 1024 - 80))], base_timestamp=time.time_ns() // 1_000_000)
    work = _workdir()
    raw_times: list[float] = []
    log_times: list[float] = []
    try:
        for r in range(repeats):
            raw_path = os.path.join(work, f"raw-{r}.bin")
            fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            t0 = time.perf_counter()
            for _ in range(n_batches):
                os.write(fd, batch)
            raw_times.append(time.perf_counter() - t0)
            os.close(fd)
            os.unlink(raw_path)

            d = os.path.join(work, f"log-{r}")
            log = PartitionLog.create(d, "bench", 0, uuid.uuid4(), LogConfig())
            t0 = time.perf_counter()
            for _ in range(n_batches):
                log.append(batch)
            log_times.append(time.perf_counter() - t0)
            assert log.log_end_offset == n_batches
            log.close(clean=False)
            shutil.rmtree(d)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw = statistics.median(raw_times)
    lg = statistics.median(log_times)
    mib = n_batches * len(batch) / (1024 * 1024)
    return {
        "append_1MiB_batches": n_batches,
        "raw_os_write_MiBps": round(mib / raw, 1),
        "log_append_MiBps": round(mib / lg, 1),
        "append_throughput_ratio_log_over_raw": round(raw / lg, 3),
    }


def bench_read(segment_counts: list[int], reads: int, repeats: int) -> dict[str, Any]:
    """Median µs per 64 KiB read at random offsets for logs of increasing segment count."""
    scanned = [0]
    orig = _segment.iter_file_batches

    def counting(*a: Any, **kw: Any) -> Any:
        for item in orig(*a, **kw):
            scanned[0] += 1
            yield item

    out: dict[str, Any] = {}
    work = _workdir()
    rng = random.Random(1)
    per: list[float] = []
    try:
        for nseg in segment_counts:
            d = os.path.join(work, f"r-{nseg}")
            cfg = LogConfig(segment_bytes=64 * 1024)
            log = PartitionLog.create(d, "bench", 0, uuid.uuid4(), cfg)
            batch = encode_batch([Rec(b"x" * 900)], base_timestamp=time.time_ns() // 1_000_000)
            per_seg = (64 * 1024) // len(batch)
            for _ in range(nseg * per_seg):
                log.append(batch)
            log.close()
            log = PartitionLog.open(d, "bench", 0, cfg, clean=True)
            leo = log.log_end_offset
            offsets = [rng.randrange(leo) for _ in range(reads)]
            for seg in log.segments:  # load every (lazily loaded) index: measure steady-state lookups
                log.read(seg.base_offset, 65536)
            for off in offsets:
                log.read(off, 65536)
            samples = []
            _segment.iter_file_batches = counting  # type: ignore[assignment]
            scanned[0] = 0
            try:
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    for off in offsets:
                        log.read(off, 65536)
                    samples.append((time.perf_counter() - t0) / reads)
            finally:
                _segment.iter_file_batches = orig
            us = statistics.median(samples) * 1e6
            per.append(us)
            out[f"read_64KiB_us_{len(log.segments)}_segments"] = round(us, 1)
            out[f"headers_scanned_per_read_{len(log.segments)}_segments"] = round(
                scanned[0] / (reads * repeats), 1)
            log.close()
            shutil.rmtree(d)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["read_cost_ratio_most_vs_fewest_segments"] = round(per[-1] / per[0], 3)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="bench_storage")
    ap.add_argument("--quick", action="store_true")
    args, _ = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    repeats = 3 if args.quick else 7
    results: dict[str, Any] = {}
    results.update(bench_append(16 if args.quick else 64, repeats))
    results.update(bench_read([4, 40] if args.quick else [10, 100, 400], 300 if args.quick else 1000,
                              repeats))
    results["repeats"] = repeats
    width = max(len(k) for k in results)
    for k, v in results.items():
        print(f"{k:<{width}}  {v}")
    return results


if __name__ == "__main__":
    main()
