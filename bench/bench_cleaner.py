"""Log cleaner benchmarks: how fast compaction chews through a dirty log, and what it costs producers.

* Cleaner throughput (storage only, one thread): a log of keyed records (10,000 keys, 100-byte values,
  500-record batches) is compacted by one forced `clean_log` pass; MB/s of dirty log = bytes of the cleaned
  segments before the pass / wall time. Uncompressed batches are filtered and rewritten; zstd batches are
  also decompressed and recompressed with their codec.
* Produce while cleaning (a real `kafkalite serve` process, confluent-kafka producer, acks=all): the same
  keyed stream goes to two cleanup.policy=compact topics with 1 MiB segments: one with min.compaction.lag.ms
  of a day (nothing is ever cleanable, so the cleaner idles; appends still check keys as compacted topics
  must) and one with lag 0 and min.cleanable.dirty.ratio=0.01 (the cleaner, woken every 50 ms, compacts each
  segment the producer rolls, in a worker thread of the same process). Runs alternate and the medians are
  compared: the ratio is the producer's throughput while the cleaner runs relative to without it.

    python -m bench.bench_cleaner [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.compression import NONE, ZSTD
from kafkalite_storage.testing import Rec, encode_batch

BENCH_TIMEOUT = 900
BENCH_DIR = Path(__file__).resolve().parent
KEYS = 10_000
VALUE = 100
PER_BATCH = 500
_READY = re.compile(rb"kafkalite ready on (\S+):(\d+)")


def _workdir(tag: str) -> str:
    base = os.environ.get("KAFKALITE_BENCH_TMP", str(BENCH_DIR))
    return tempfile.mkdtemp(prefix=f".bench-cleaner-{tag}-", dir=base)


# -- 1. cleaner throughput ---------------------------------------------------------------------------------
def cleaner_throughput(dirty_mb: int, codec: int, max_records: int | None = None) -> dict[str, Any]:
    work = _workdir("storage")
    try:
        cfg = LogConfig(segment_bytes=8 * 1024 * 1024, cleanup_policy="compact", delete_retention_ms=0,
                        file_delete_delay_ms=0)
        log = PartitionLog.create(os.path.join(work, "c-0"), "c", 0, uuid.uuid4(), cfg)
        now = time.time_ns() // 1_000_000
        value = os.urandom(VALUE // 2).hex().encode()
        i = 0
        while log.size_bytes < dirty_mb * 1024 * 1024 and (max_records is None or i < max_records):
            recs = [Rec(value, key=b"key-%05d" % ((i + j) * 7919 % KEYS)) for j in range(PER_BATCH)]
            log.append(encode_batch(recs, base_timestamp=now, compression=codec), now_ms=now)
            i += PER_BATCH
        log.roll()
        log.append(encode_batch([Rec(b"tail", key=b"tail")], base_timestamp=now), now_ms=now)
        dirty = sum(s.size for s in log.segments[:-1])
        t0 = time.perf_counter()
        res = clean_log(log, now + 1000, force=True)
        elapsed = time.perf_counter() - t0
        assert res is not None
        log.close()
        return {"codec": "zstd" if codec == ZSTD else "none", "dirty_mb": round(dirty / 1e6, 1), "records": i,
                "seconds": round(elapsed, 2), "mb_per_s": round(dirty / elapsed / 1e6, 1),
                "records_per_s": round(i / elapsed), "bytes_after": res.bytes_after,
                "records_removed": res.records_removed}
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- 2. produce throughput with and without the cleaner ---------------------------------------------------
class _Broker:
    def __init__(self) -> None:
        self.work = Path(_workdir("broker"))
        self.log_path = self.work / "broker.log"
        cmd = [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
               str(self.work / "data"), "--log-level", "INFO", "--override", "log.cleaner.backoff.ms=50",
               "--override", "log.retention.check.interval.ms=1000",
               "--override", "log.initial.task.delay.ms=1000"]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        deadline = time.monotonic() + 60
        while True:
            m = _READY.search(self.log_path.read_bytes())
            if m:
                self.bootstrap = f"{m.group(1).decode()}:{int(m.group(2))}"
                return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("kafkalite did not start:\n" + self.log_path.read_text(errors="replace"))
            time.sleep(0.02)

    def passes(self, topic: str) -> int:
        return self.log_path.read_text(errors="replace").count(f"{topic}-0: compacted")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.work, ignore_errors=True)


def _create(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    adm = AdminClient({"bootstrap.servers": bootstrap})
    adm.create_topics([NewTopic(topic, 1, 1, config=config)])[topic].result(30)


def _produce(bootstrap: str, topic: str, count: int) -> float:
    """Keyed records (KEYS distinct keys) as fast as acks=all allows; returns records/s."""
    from confluent_kafka import Producer

    failed = [0]

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed[0] += 1

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": False,
                  "queue.buffering.max.messages": 500_000, "delivery.report.only.error": True,
                  "on_delivery": on_delivery})
    p.list_topics(topic, timeout=10)
    value = b"v" * VALUE
    keys = [b"key-%05d" % k for k in range(KEYS)]
    t0 = time.perf_counter()
    for i in range(count):
        while True:
            try:
                p.produce(topic, value, keys[i * 7919 % KEYS])
                break
            except BufferError:
                p.poll(0.005)
        if i & 0x3FF == 0:
            p.poll(0)
    left = p.flush(120)
    elapsed = time.perf_counter() - t0
    if left or failed[0]:
        raise RuntimeError(f"{topic}: {left} unflushed, {failed[0]} failed")
    return count / elapsed


def produce_ratio(records: int, repeats: int, segment_bytes: int) -> dict[str, Any]:
    broker = _Broker()
    try:
        base_rates, cmp_rates, passes = [], [], []
        for r in range(repeats):
            common = {"segment.bytes": str(segment_bytes), "cleanup.policy": "compact",
                      "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0", "file.delete.delay.ms": "0"}
            _create(broker.bootstrap, f"plain-{r}", {**common, "min.compaction.lag.ms": str(86_400_000)})
            _create(broker.bootstrap, f"compact-{r}", common)
            base_rates.append(_produce(broker.bootstrap, f"plain-{r}", records))
            cmp_rates.append(_produce(broker.bootstrap, f"compact-{r}", records))
            passes.append(broker.passes(f"compact-{r}"))
            assert broker.passes(f"plain-{r}") == 0
        base, cmp = statistics.median(base_rates), statistics.median(cmp_rates)
        return {"records": records, "repeats": repeats, "segment_bytes": segment_bytes,
                "produce_without_cleaner_rps": round(base), "produce_with_cleaner_rps": round(cmp),
                "ratio_with_over_without": round(cmp / base, 3),
                "cleaner_passes_during_run": passes}
    finally:
        broker.stop()


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dirty-mb", type=int)
    ap.add_argument("--records", type=int)
    ap.add_argument("--repeats", type=int)
    args, _ = ap.parse_known_args(sys.argv[1:])
    quick = args.quick or os.environ.get("BENCH_QUICK") == "1"
    dirty_mb = args.dirty_mb or (8 if quick else 64)
    records = args.records or (300_000 if quick else 1_000_000)
    repeats = args.repeats or (1 if quick else 3)
    plain = cleaner_throughput(dirty_mb, NONE)
    rows = [plain, cleaner_throughput(dirty_mb, ZSTD, max_records=plain["records"])]  # same records, compressed
    ratio = produce_ratio(records, repeats, 1024 * 1024)
    for row in rows:
        print(f"cleaner [{row['codec']}]: {row['dirty_mb']} MB dirty in {row['seconds']} s = "
              f"{row['mb_per_s']} MB/s ({row['records_per_s']} records/s)")
    print(f"produce: {ratio['produce_without_cleaner_rps']} rec/s without the cleaner, "
          f"{ratio['produce_with_cleaner_rps']} rec/s while it runs "
          f"(ratio {ratio['ratio_with_over_without']}, passes {ratio['cleaner_passes_during_run']})")
    summary = {"cleaner_mb_per_s": rows[0]["mb_per_s"], "cleaner_mb_per_s_zstd": rows[1]["mb_per_s"],
               "produce_ratio_with_cleaner": ratio["ratio_with_over_without"]}
    return {"summary": summary, "cleaner": rows, "produce": ratio,
            "rows": [{"measure": "cleaner MB/s of dirty log (uncompressed)", "value": rows[0]["mb_per_s"]},
                     {"measure": "cleaner MB/s of dirty log (zstd, recompressed)", "value": rows[1]["mb_per_s"]},
                     {"measure": "produce rec/s without cleaner", "value": ratio["produce_without_cleaner_rps"]},
                     {"measure": "produce rec/s while cleaning", "value": ratio["produce_with_cleaner_rps"]},
                     {"measure": "produce ratio with/without cleaner", "value": ratio["ratio_with_over_without"]}]}


if __name__ == "__main__":
    main()
