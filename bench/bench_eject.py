"""``kafkalite eject`` time for 1,000 and 10,000 partitions.

A stopped kafkalite data directory is built with storage's LogManager (topics of 100 partitions, each partition
with one batch of 10 records of 100 bytes, closed cleanly, a topic config per topic), then ``python -m kafkalite
eject DATA --to NEW`` runs as a user runs it (a fresh process: start-up included) and is timed, wall clock,
median of 3 (one run for 10,000; every partition holds only its active segment, so ``--link`` would change
nothing here: it is not measured). The ratio is against ``cp -a DATA`` of the same directory in the same run: the copying eject cannot avoid, so "eject ÷ cp -a" is what reading
kafkalite's state and writing the metadata snapshot add on top. On a busy shared machine creating files dominates
(several ms per file), and every figure moves with the load.

    python -m bench.bench_eject [--quick] [--partitions 1000,10000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafkalite_storage.manager import LogManager
from kafkalite_storage.testing import Rec, encode_batch

BENCH_TIMEOUT = 1200
BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
PER_TOPIC = 100
REPEATS = 3


def build(data: Path, partitions: int) -> int:
    """A cleanly stopped data dir with ``partitions`` partitions; returns its size in bytes."""
    lm = LogManager.open(str(data), node_id=1)
    batch = encode_batch([Rec(value=os.urandom(50).hex().encode(), key=b"k%d" % i) for i in range(10)],
                         base_timestamp=int(time.time() * 1000))    # within retention (Kafka would delete old ones)
    configs = {}
    for n in range(0, partitions, PER_TOPIC):
        topic, topic_id = f"topic-{n // PER_TOPIC:04d}", uuid.uuid4()
        configs[topic] = {"retention.ms": "604800000"}
        for p in range(min(PER_TOPIC, partitions - n)):
            lm.create_log(topic, p, topic_id).append(batch)
    lm.close()
    (data / "kafkalite-topic-configs.json").write_text(json.dumps(configs))
    return sum(f.stat().st_size for f in data.rglob("*") if f.is_file())


def _timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=str(ROOT),
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - t


def measure(partitions: int, repeats: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=".bench-eject-", dir=os.environ.get("KAFKALITE_BENCH_TMP", str(BENCH_DIR))))
    try:
        data = work / "data"
        t = time.perf_counter()
        size = build(data, partitions)
        built = time.perf_counter() - t
        ejects, copies = [], []
        eject = [sys.executable, "-m", "kafkalite", "eject", str(data), "--listen", "127.0.0.1:9092", "--to"]
        for i in range(repeats):          # alternate, so drift in the shared machine's load hits all alike
            copies.append(_timed(["cp", "-a", str(data), str(work / f"copy{i}")]))
            shutil.rmtree(work / f"copy{i}")
            ejects.append(_timed([*eject, str(work / f"k{i}")]))
            snapshot_bytes = next((work / f"k{i}" / "__cluster_metadata-0").glob("*.checkpoint")).stat().st_size
            shutil.rmtree(work / f"k{i}")
        eject_s, copy_s = statistics.median(ejects), statistics.median(copies)
        return {"partitions": partitions, "data_mb": round(size / 1e6, 1), "eject_s": round(eject_s, 2),
                "cp_a_s": round(copy_s, 2),
                "eject_over_cp": round(eject_s / copy_s, 2), "snapshot_kb": round(snapshot_bytes / 1e3, 1),
                "build_s": round(built, 1)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 partitions, one run")
    ap.add_argument("--partitions", default="1000,10000", help="comma-separated partition counts")
    args, _unknown = ap.parse_known_args(argv)
    counts = [1000] if args.quick else [int(x) for x in args.partitions.split(",")]
    rows = []
    for n in counts:
        row = measure(n, 1 if args.quick or n > 1000 else REPEATS)     # 10,000 partitions: one run (minutes)
        rows.append(row)
        print(f"eject {n:,} partitions ({row['data_mb']} MB): {row['eject_s']} s, cp -a {row['cp_a_s']} s: eject = "
              f"{row['eject_over_cp']}x cp -a; metadata snapshot {row['snapshot_kb']} kB", flush=True)
    return {"rows": rows}


if __name__ == "__main__":
    main()
