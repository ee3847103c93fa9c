"""Join-to-first-record time of a new consumer: the KIP-848 consumer protocol vs the classic protocol.

One embedded kafkalite broker (default group settings: Kafka's 5 s consumer heartbeat interval, kafkalite's
group.initial.rebalance.delay.ms=0), one 6-partition topic holding records. For each round, a confluent-kafka
consumer of a fresh group subscribes with ``group.protocol=classic`` (JoinGroup + SyncGroup, client-side
range/roundrobin assignor), then another with ``group.protocol=consumer`` (ConsumerGroupHeartbeat, server-side
uniform assignor); the time from ``subscribe()`` to the first record polled is taken, rounds interleaved so the
machine's load drifts hit both alike. Reports medians and the ratio consumer / classic (< 1: KIP-848 faster).

    python -m bench.bench_group_join [--quick] [--rounds N]
"""
from __future__ import annotations

import argparse
import statistics
import time
import uuid
from typing import Any

BENCH_TIMEOUT = 300


def _first_record_s(bootstrap: str, topic: str, protocol: str) -> float:
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bootstrap, "group.id": f"bench-{protocol}-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "group.protocol": protocol}
    c = Consumer(conf)
    try:
        c.list_topics(topic, timeout=10)   # connected and metadata known before the clock starts
        t0 = time.perf_counter()
        c.subscribe([topic])
        deadline = t0 + 60
        while time.perf_counter() < deadline:
            m = c.poll(0.05)
            if m is not None and not m.error():
                return time.perf_counter() - t0
        raise RuntimeError(f"{protocol}: no record within 60 s")
    finally:
        c.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_group_join")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=0)
    args, _ = ap.parse_known_args(argv)
    rounds = args.rounds or (3 if args.quick else 9)
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite.embedded import Broker

    times: dict[str, list[float]] = {"classic": [], "consumer": []}
    with Broker() as b:
        bs = b.bootstrap_servers
        adm = AdminClient({"bootstrap.servers": bs})   # kept: a collected AdminClient never completes its futures
        adm.create_topics([NewTopic("join", 6, 1)])["join"].result(30)
        p = Producer({"bootstrap.servers": bs})
        for i in range(600):
            p.produce("join", b"x" * 100, partition=i % 6)
        p.flush(30)
        _first_record_s(bs, "join", "classic")    # warm-up: __consumer_offsets created, code paths loaded
        _first_record_s(bs, "join", "consumer")
        for _ in range(rounds):
            for protocol in ("classic", "consumer"):
                times[protocol].append(_first_record_s(bs, "join", protocol))
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {
        "rows": [{"protocol": k, "join_to_first_record_ms_median": round(med[k] * 1000, 1),
                  "runs": len(times[k]), "min_ms": round(min(times[k]) * 1000, 1),
                  "max_ms": round(max(times[k]) * 1000, 1)} for k in ("classic", "consumer")],
        "ratio_consumer_over_classic": round(med["consumer"] / med["classic"], 3),
    }
    for r in out["rows"]:
        print(r)
    print("ratio consumer/classic", out["ratio_consumer_over_classic"])
    return out


if __name__ == "__main__":
    main()
