"""bench_registry at toy size: real broker processes on 127.0.0.1 (with and without the registry), every phase,
then no process left behind. Asserts the report's shape and completeness (the restarted registry lists every
subject), never speed."""

from __future__ import annotations

import os

from bench import _proc, bench_registry


def test_tiny_run_reports_every_figure_and_leaves_nothing_running() -> None:
    before = set(_proc.descendants(os.getpid()))
    out = bench_registry.main(["--schemas", "40", "--seconds", "0.3", "--clients", "2", "--starts", "1",
                               "--rounds", "1"])
    assert out["schemas"] == 40
    for key in ("register", "lookup_by_id", "lookup_by_schema", "root"):
        assert 0 < out[f"{key}_ms_p50"] <= out[f"{key}_ms_p99"]
    for key in ("by_id_per_s_1_clients", "by_id_per_s_2_clients", "root_per_s_1_clients", "root_per_s_2_clients"):
        assert out[key] > 0
    assert out["start_ready_s_plain"] > 0 and out["start_ready_s_registry_full"] > 0
    assert out["replay_s"] == out["replay_s"]   # the broker logged its replay of _schemas (not NaN)
    for key in ("ratio_by_id_vs_root_1_client", "ratio_by_id_vs_root_2_clients", "ratio_by_id_2_clients_vs_1",
                "ratio_start_registry_full_vs_plain", "ratio_lookup_by_schema_vs_by_id_p50"):
        assert out[key] > 0
    leftover = [p for p in _proc.descendants(os.getpid()) if p not in before and _proc.alive(p)]
    assert leftover == []
