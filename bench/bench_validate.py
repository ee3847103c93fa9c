"""Produce-validation micro-benchmark: what checking every record costs, as a ratio to the append path.

For batches of 100-byte records (160 per batch, a 16 KiB producer batch, and 1,000 per batch) without
compression and with lz4 and zstd, it times in one run:

* ``append``: `PartitionLog.append` of the batch (header + CRC-32C checks, pwritev to the page cache, index
  upkeep): the broker's storage cost per record before validation existed;
* ``validate``: `kafkalite.validation.validate` with the compiled record walk (what Produce now adds);
* ``validate_py``: the same with the pure-Python walk (the fallback without a C compiler).

It reports ns per record and the ratios validate/append and validate_py/append. The broker's whole produce
path costs ~340 ns per record (bench_brokers "broker CPU per record"), so a validate cost of x ns per record
moves produce throughput by about x/340.

    python -m bench.bench_validate [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafkalite import validation
from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.testing import Rec, encode_batch

BENCH_TIMEOUT = 300
BENCH_DIR = Path(__file__).resolve().parent
CODECS = {"none": 0, "lz4": 3, "zstd": 4}


def _batch(n: int, codec: int, now: int) -> bytes:
    # 100-byte records: a 10-byte key and a value half random, half text (compressible like real payloads)
    recs = [Rec(os.urandom(40) + b"payload-%08d-" % i + b"x" * 23, key=b"key-%06d" % i, timestamp=now)
            for i in range(n)]
    return encode_batch(recs, base_timestamp=now, compression=codec)


def _time_per_record(fn: Any, n_records: int, loops: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - t0) / (loops * n_records) * 1e9)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    now = time.time_ns() // 1_000_000
    pywalk = importlib.import_module("kafkalite.validation.pywalk").walk
    compiled = validation.walk
    results: dict[str, Any] = {"walk_impl": validation.WALK_IMPL}
    work = tempfile.mkdtemp(prefix=".bench-validate-", dir=os.environ.get("KAFKALITE_BENCH_TMP", str(BENCH_DIR)))
    try:
        for n in (160, 1000):
            for name, codec in CODECS.items():
                batch = _batch(n, codec, now)
                loops = max(2, (200_000 if not args.quick else 40_000) // n)
                cfg = LogConfig(segment_bytes=1 << 30)
                log = PartitionLog.create(os.path.join(work, f"{name}-{n}-0"), "b", 0, uuid.uuid4(), cfg)
                append = _time_per_record(lambda b=batch, lg=log: lg.append(b, now_ms=now), n, loops, repeats)
                log.close()

                def check(b: bytes = batch, cfg: LogConfig = cfg) -> None:
                    assert validation.validate(b, config=cfg, now=now) is None

                validate = _time_per_record(check, n, loops, repeats)
                validation.walk = pywalk
                try:
                    validate_py = _time_per_record(check, n, max(2, loops // 20), repeats)
                finally:
                    validation.walk = compiled
                key = f"{name}_{n}"
                results[f"{key}_append_ns_per_record"] = round(append, 1)
                results[f"{key}_validate_ns_per_record"] = round(validate, 1)
                results[f"{key}_validate_py_ns_per_record"] = round(validate_py, 1)
                results[f"{key}_validate_over_append"] = round(validate / append, 3)
                results[f"{key}_validate_py_over_append"] = round(validate_py / append, 3)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["repeats"] = repeats
    width = max(len(k) for k in results)
    for k, v in results.items():
        print(f"{k:<{width}}  {v}")
    return results


if __name__ == "__main__":
    main()
