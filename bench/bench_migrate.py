"""``kafkalite migrate`` throughput: a kafkalite process moved into Apache Kafka 4.4, against the two halves of the
same pipe measured in the same run.

A kafkalite process (``python -m kafkalite serve``) holds one topic of N records (10-byte keys, ``--value-bytes``
values, one header, ``--partitions`` partitions); the target is Apache Kafka 4.4 from ``.deps/kafka-4.4``
(``tools/bootstrap.sh reference``): ``--nodes 3`` a KRaft cluster of three combined nodes (the issue's target,
compat-tests/harness/reference.py's ReferenceCluster), ``--nodes 1`` one node. Measured, in this order:

* **read**: a confluent-kafka consumer reads the N records from kafkalite (assign, read_committed, as fast as it
  can): the ceiling of the source side;
* **write**: a confluent-kafka producer with the copy's settings (idempotent, acks=all, lz4, explicit
  partition and timestamp) writes N records of the same size to a scratch topic of the target: the ceiling of the
  target side;
* **migrate**: ``python -m kafkalite migrate --from ... --to ... --no-progress --json`` (a subprocess, as a user
  runs it); records/s of its copy phase (the report's ``records / seconds``) and of the whole command (wall
  time: metadata, topic creation, the copy, configs, groups, ACLs);
* **verify**: ``--verify-only``: both sides read back and compared, records/s.

Reported: records/s of each and ``migrate / min(read, write)``: how close the copy comes to the slower of the
two client halves it is made of (1.0 = it costs nothing of its own). The machine is shared: the ratio is the
figure to compare between runs, not the absolute rates.

    python -m bench.bench_migrate [--quick] [--records N] [--partitions P] [--nodes 1|3] [--value-bytes B]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH_TIMEOUT = 1500
ROOT = Path(__file__).resolve().parents[1]
TOPIC = "bench-migrate"


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="100k records")
    p.add_argument("--records", type=int, default=None, help="records to migrate (default 1,000,000)")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--value-bytes", type=int, default=100)
    p.add_argument("--nodes", type=int, default=3, choices=(1, 3), help="Kafka nodes of the target")
    p.add_argument("--profile", metavar="FILE", help="run migrate under cProfile, stats to FILE")
    return p.parse_args()


def _fill(bootstrap: str, n: int, partitions: int, value_bytes: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "compression.type": "lz4"})
    value = b"v" * value_bytes
    for i in range(n):
        while True:
            try:
                p.produce(TOPIC, value, b"%010d" % i, partition=i % partitions, headers=[("h", b"1")])
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0


def _read(bootstrap: str, n: int, partitions: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-read", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "fetch.max.bytes": 16 << 20})
    t0 = time.perf_counter()
    got = 0
    try:
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
        while got < n:
            for m in c.consume(10_000, 1.0):
                if not m.error():
                    got += 1
    finally:
        c.close()
    return time.perf_counter() - t0


def _write(bootstrap: str, n: int, partitions: int, value_bytes: int) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("bench-write", partitions, -1)]).values():
        f.result(60)
    time.sleep(1)   # leaders known to every broker
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 20,
                  "compression.type": "lz4", "queue.buffering.max.messages": 210_000})
    value = b"v" * value_bytes
    ts = int(time.time() * 1000)
    t0 = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce("bench-write", value, b"%010d" % i, partition=i % partitions, timestamp=ts,
                          headers=[("h", b"1")])
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(300) == 0
    return time.perf_counter() - t0


def _migrate(src: str, dst: str, state: Path, *extra: str, profile: str | None = None) -> tuple[dict[str, Any], float]:
    cmd = [sys.executable, *(["-m", "cProfile", "-o", profile] if profile else []), "-m", "kafkalite", "migrate",
           "--from", src, "--to", dst, "--topics", TOPIC, "--state-dir", str(state), "--no-progress", "--json",
           *extra]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(ROOT), timeout=1200)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"migrate exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout), wall


def main() -> dict[str, Any]:
    a = _args()
    n = a.records or (100_000 if a.quick or os.environ.get("BENCH_QUICK") else 1_000_000)
    sys.path.insert(0, str(ROOT / "compat-tests"))
    from harness import reference
    from harness.broker import BrokerProcess

    reason = reference.missing()
    if reason:
        raise SystemExit(f"bench_migrate: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-migrate-"))
    src = BrokerProcess(tmp / "source", tmp / "source.log", kind="kafkalite")
    target: Any = None
    try:
        src.start()
        if a.nodes == 3:
            target = reference.ReferenceCluster(tmp / "kafka", 3)
            target.start()
            dst = target.bootstrap
        else:
            target = BrokerProcess(tmp / "kafka", tmp / "kafka.log", kind="kafka")
            dst = target.start()
        _fill(src.bootstrap, n, a.partitions, a.value_bytes)
        read_s = _read(src.bootstrap, n, a.partitions)
        write_s = _write(dst, n, a.partitions, a.value_bytes)
        report, wall = _migrate(src.bootstrap, dst, tmp / "state", profile=a.profile)
        assert report["records"] == n, report
        vreport, vwall = _migrate(src.bootstrap, dst, tmp / "state", "--verify-only")
        assert vreport["verify"]["records"] == n and not vreport["verify"]["differences"], vreport["verify"]
        rates = {"read": n / read_s, "write": n / write_s, "migrate_copy": n / report["seconds"],
                 "migrate_command": n / wall, "verify": n / vwall}
        result: dict[str, Any] = {
            "records": n, "partitions": a.partitions, "value_bytes": a.value_bytes, "target_nodes": a.nodes,
            **{f"{k}_records_per_s": round(v) for k, v in rates.items()},
            "ratio_migrate_vs_slower_half": round(rates["migrate_copy"] / min(rates["read"], rates["write"]), 3),
            "migrate_seconds": round(report["seconds"], 2), "migrate_command_seconds": round(wall, 2),
        }
        for k, v in rates.items():
            print(f"{k:16} {v:12,.0f} records/s")
        print(f"migrate / min(read, write) = {result['ratio_migrate_vs_slower_half']:.2f}")
        return result
    finally:
        if target is not None:
            (target.stop if a.nodes == 3 else target.kill)()
        src.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(main()))
