"""MirrorMaker 2 between two kafkalite processes: records/s of a dedicated MirrorMaker (connect-mirror from
``tools/bootstrap.sh eco``) copying a fixed data set from cluster ``A`` to cluster ``B``, and, in the same run,
a plain client copy loop (confluent-kafka: consume from A, produce to B, same partition, key, value, headers and
timestamp) as the yardstick. The figure issue #26's ``kafkalite migrate`` is to be compared with.

The data set: one topic, 3 partitions, N records (10-byte keys, 100-byte values, one 8-byte header). MM2 starts
after the topic is full; its rate is N / (time from the first mirrored record on B to the last), so the JVM's
start and MM2's topic discovery are left out. The copy loop is timed from its first record to its last in the
same way. CPU seconds over the same window (the MM2 JVM or the copy loop's process, and the two brokers) are
reported too: on the shared 2-core machine they move far less with other work than the wall-clock rates do.

    python -m bench.bench_mirrormaker [--quick] [--records N]
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import _proc

BENCH_TIMEOUT = 900
TOPIC = "bench-mm"
PARTS = 3
ROOT = Path(__file__).resolve().parents[1]
JARS = ROOT / ".deps" / "eco" / "connect"


def _fill(bootstrap: str, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTS, 1)])[TOPIC].result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    value = b"x" * 100
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value=value, key=b"%010d" % i, partition=i % PARTS,
                          headers=[("seq", i.to_bytes(8, "big"))])
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def _ends(bootstrap: str, topic: str) -> int:
    from kafkalite.spark.admin import OffsetReader

    try:
        return sum(OffsetReader({"bootstrap.servers": bootstrap}).latest([(topic, p) for p in range(PARTS)])
                   .values())
    except Exception:  # the topic does not exist yet
        return 0


def _watch(bootstrap: str, topic: str, n: int, alive: Any, cpu: Any, timeout: float = 600.0,
           ) -> tuple[float, dict[str, float]]:
    """Seconds from the first record on ``topic`` to the n-th (polled every 20 ms), and the CPU seconds
    ``cpu()`` counted over that window."""
    deadline = time.monotonic() + timeout
    first = None
    cpu0: dict[str, float] = {}
    while True:
        got = _ends(bootstrap, topic)
        now = time.perf_counter()
        if got and first is None:
            first, cpu0 = now, cpu()
        if got >= n:
            assert first is not None
            cpu1 = cpu()
            return now - first, {k: cpu1[k] - cpu0[k] for k in cpu1}
        if not alive():
            raise RuntimeError("the copier exited")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{got} of {n} records on {topic} after {timeout}s")
        time.sleep(0.02)


def _mm2(a: str, b: str, n: int, workdir: Path, brokers: Any) -> tuple[float, dict[str, float]]:
    props = {
        "clusters": "A, B", "A.bootstrap.servers": a, "B.bootstrap.servers": b,
        "A->B.enabled": "true", "B->A.enabled": "false", "A->B.topics": TOPIC, "A->B.groups": "none",
        "replication.factor": "1", "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1", "tasks.max": str(PARTS),
    }
    cfg = workdir / "mm2.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cp = os.pathsep.join(str(j) for j in sorted(JARS.glob("*.jar")))
    log = open(workdir / "mm2.log", "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(["java", "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp,
                             "org.apache.kafka.connect.mirror.MirrorMaker", str(cfg)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir,
                            start_new_session=True)
    log.close()
    try:
        return _watch(b, f"A.{TOPIC}", n, lambda: proc.poll() is None,
                      lambda: {"copier": _proc.tree_cpu_s(proc.pid), **brokers()})
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def _copy_loop(a: str, b: str, n: int, brokers: Any) -> tuple[float, dict[str, float]]:
    """consume A -> produce B in one Python thread: the same records, partitions and timestamps."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    c = Consumer({"bootstrap.servers": a, "group.id": "bench-copy", "enable.auto.commit": False,
                  "fetch.max.bytes": 16 << 20})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTS)])
    p = Producer({"bootstrap.servers": b, "linger.ms": 20, "batch.size": 1 << 20})
    out, done, t0 = f"copy.{TOPIC}", 0, None
    cpu0: dict[str, float] = {}
    while done < n:
        for m in c.consume(10_000, 1.0):
            if t0 is None:
                t0, cpu0 = time.perf_counter(), {"copier": time.process_time(), **brokers()}
            while True:
                try:
                    p.produce(out, key=m.key(), value=m.value(), partition=m.partition(),
                              timestamp=m.timestamp()[1], headers=m.headers())
                    break
                except BufferError:
                    p.poll(0.05)
            done += 1
        p.poll(0)
    assert p.flush(120) == 0
    assert t0 is not None
    dt = time.perf_counter() - t0
    cpu1 = {"copier": time.process_time(), **brokers()}
    c.close()
    return dt, {k: cpu1[k] - cpu0[k] for k in cpu1}


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--records", type=int, default=None)
    opts = ap.parse_args(sys.argv[1:])
    n = opts.records or (50_000 if opts.quick else 300_000)
    if not any(JARS.glob("connect-mirror-*.jar")):
        raise SystemExit(f"MirrorMaker 2 is not in {JARS}: run tools/bootstrap.sh eco")

    from confluent_kafka.admin import AdminClient, NewTopic

    from bench import _brokers

    a = _brokers.start("kafkalite")
    b = _brokers.start("kafkalite")
    try:
        _fill(a.bootstrap, n)
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(f"copy.{TOPIC}", PARTS, 1)])[f"copy.{TOPIC}"].result(timeout=30)
        def brokers() -> dict[str, float]:
            return {"broker_a": _proc.tree_cpu_s(a.proc.pid), "broker_b": _proc.tree_cpu_s(b.proc.pid)}

        with tempfile.TemporaryDirectory(prefix="bench-mm2-") as tmp:
            mm2_s, mm2_cpu = _mm2(a.bootstrap, b.bootstrap, n, Path(tmp), brokers)
        copy_s, copy_cpu = _copy_loop(a.bootstrap, b.bootstrap, n, brokers)
        assert _ends(b.bootstrap, f"A.{TOPIC}") == n and _ends(b.bootstrap, f"copy.{TOPIC}") == n
        result: dict[str, Any] = {
            "records": n, "partitions": PARTS, "value_bytes": 100,
            "mm2_records_per_s": round(n / mm2_s), "copy_loop_records_per_s": round(n / copy_s),
            "ratio_mm2_vs_copy_loop": round(copy_s / mm2_s, 3),
            "mm2_seconds": round(mm2_s, 3), "copy_loop_seconds": round(copy_s, 3),
            "mm2_cpu_seconds": {k: round(v, 2) for k, v in mm2_cpu.items()},
            "copy_loop_cpu_seconds": {k: round(v, 2) for k, v in copy_cpu.items()},
        }
        for name, rps, cpu in (("MirrorMaker 2 (A -> B)", result["mm2_records_per_s"], mm2_cpu),
                               ("confluent-kafka copy loop", result["copy_loop_records_per_s"], copy_cpu)):
            print(f"{name:28} {rps:10,} records/s   cpu s: copier {cpu['copier']:.2f} "
                  f"broker A {cpu['broker_a']:.2f} broker B {cpu['broker_b']:.2f}")
        print(f"ratio MM2 / copy loop        {result['ratio_mm2_vs_copy_loop']:.2f}")
        return result
    finally:
        a.stop()
        b.stop()


if __name__ == "__main__":
    main()
