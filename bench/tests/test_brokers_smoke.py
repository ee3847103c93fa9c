"""End-to-end smoke test of bench_brokers at toy size: real broker processes on 127.0.0.1, real
confluent-kafka clients, every phase, then no broker process left behind. Asserts completeness and the
report's shape, never speed. Skips (with the reason) when a broker cannot be started here."""

from __future__ import annotations

import os

import pytest

from bench import _brokers, _proc, bench_brokers
from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true


def test_tiny_run_over_available_brokers() -> None:
    names = [n for n in ("kafkalite", "tansu") if _brokers.available(n) is None]
    if not names:
        pytest.skip("neither kafkalite nor tansu can be started (run tools/bootstrap.sh peers)")
    before = set(_proc.descendants(os.getpid()))
    out = bench_brokers.main(["--brokers", ",".join(names), "--records", "3000", "--latency-seconds", "0.5",
                              "--latency-repeats", "1", "--start-repeats", "1", "--rate", "400"])
    for name in names:
        entry = out["brokers"][name]
        assert not entry.get("errors"), entry.get("errors")
        assert set(entry["produce"]) == {"p1_acks1", "p1_acksall", "p6_acks1", "p6_acksall"}
        assert all(run["complete"] and run["records_per_s"] > 0 for run in entry["produce"].values())
        assert set(entry["consume"]) == {"p1", "p6"}
        assert all(run["complete"] for run in entry["consume"].values())
        assert set(entry["parallel"]) == {"produce_p6_x2", "consume_p6_x2"}   # two client processes at once
        assert all(run["complete"] and run["records_per_s"] > 0 for run in entry["parallel"].values())
        assert entry["latency"]["complete"] and entry["latency"]["p50_ms"] is not None
        assert entry["start"]["median_s"] > 0 and entry["peak_rss_mb"] >= entry["idle_rss_mb"] > 0
    assert out["markdown"].startswith("| metric | " + " | ".join(names))
    leftover = [p for p in _proc.descendants(os.getpid()) if p not in before and _proc.alive(p)]
    assert leftover == []
