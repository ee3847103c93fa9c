"""bench_perftools at toy size: Kafka's own kafka-producer-perf-test and kafka-consumer-perf-test (kafka-tools
4.4.0 JVMs) against a real kafkalite process and a real Apache Kafka 4.4 broker, every step, then no process left
behind. Asserts completeness and the report's shape, never speed. The parsers are checked on the tools' own line
formats as well."""

from __future__ import annotations

import os

from bench import _brokers, _proc, bench_perftools
from kafkalite.tests.support.requires import missing, require

PRODUCER_OUT = """\
12000 records sent, 2398.6 records/sec (0.23 MB/sec), 3.4 ms avg latency, 210.0 ms max latency.
20000 records sent, 3997.600959 records/sec (0.38 MB/sec), 2.71 ms avg latency, 210.00 ms max latency, \
2 ms 50th, 5 ms 95th, 17 ms 99th, 190 ms 99.9th.
"""
CONSUMER_OUT = """\
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-28 04:40:01:123, 2026-11-28 04:40:04:623, 9.5367, 2.7248, 100000, 28571.4286, 3012, 488, 19.5425, \
204918.0328
"""


def test_parsers_read_the_tools_summary_lines() -> None:
    p = bench_perftools.parse_producer(PRODUCER_OUT)
    assert (p["records"], p["records_per_s"], p["mb_per_s"]) == (20000, 3997.600959, 0.38)
    assert (p["latency_avg_ms"], p["latency_p50_ms"], p["latency_p99_ms"], p["latency_p999_ms"]) == (2.71, 2, 17, 190)
    c = bench_perftools.parse_consumer(CONSUMER_OUT)
    assert (c["records"], c["rebalance_ms"], c["fetch_ms"]) == (100000, 3012, 488)
    assert (c["fetch_mb_per_s"], c["fetch_records_per_s"], c["warning"]) == (19.5425, 204918.0328, False)


def test_tiny_run_against_kafkalite_and_kafka() -> None:
    require("confluent_kafka")
    reason = _brokers.available("kafka")
    if reason:
        missing(reason)
    before = set(_proc.descendants(os.getpid()))
    out = bench_perftools.main(["--records", "3000", "--repeats", "1", "--rate", "500", "--rate-records", "300",
                                "--tool-timeout", "120"])
    for name in ("kafkalite", "kafka"):
        entry = out["brokers"][name]
        assert not entry.get("errors"), entry.get("errors")
        assert set(entry) >= {"produce", "consume", "produce_rate"}
        assert all(entry[k]["complete"] and entry[k]["repeats"] == 1 for k in ("produce", "consume", "produce_rate"))
        assert entry["produce"]["records_per_s"] > 0 and entry["produce"]["latency_p99_ms"] >= 0
        assert entry["consume"]["fetch_records_per_s"] > 0 and entry["consume"]["runs"][0]["records"] == 3000
    md = out["markdown"]
    assert md.startswith("| metric | kafkalite | kafka | kafkalite ÷ kafka |")
    assert "producer records/s" in md and "consumer fetch MB/s" in md and "-Xmx512M" in md
    leftover = [p for p in _proc.descendants(os.getpid()) if p not in before and _proc.alive(p)]
    assert leftover == []
