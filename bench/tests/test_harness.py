"""Tests for the benchmark harness: module discovery, the subprocess runner, reports, /proc helpers and
the raw Kafka readiness probe. No timing is asserted; the slowest case waits for a 2 s time limit."""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from bench import _kprobe, _proc, _report, run_all


@pytest.fixture
def bench_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(run_all, "BENCH_DIR", tmp_path)
    monkeypatch.setattr(run_all, "RESULTS", tmp_path / "results")
    return tmp_path


def _module(d: Path, name: str, body: str) -> None:
    (d / f"bench_{name}.py").write_text(textwrap.dedent(body))


def test_discovery_and_declared_timeout(bench_dir: Path) -> None:
    _module(bench_dir, "b", "BENCH_TIMEOUT = 77\ndef main():\n    return {}\n")
    _module(bench_dir, "a", "LIMIT: int = 3\ndef main():\n    return {}\n")
    (bench_dir / "helper.py").write_text("x = 1\n")
    assert run_all.discover() == ["a", "b"]
    assert run_all.declared_timeout("b") == 77
    assert run_all.declared_timeout("a") is None


def test_run_all_ok_failed_timeout_and_args(bench_dir: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    _module(bench_dir, "ok", """
        import os, sys
        def main():
            print("hello from ok")
            return {"rows": [{"case": "x", "ops_s": 12.5}], "argv": sys.argv[1:],
                    "quick": os.environ.get("BENCH_QUICK")}
    """)
    _module(bench_dir, "boom", """
        def main():
            raise RuntimeError("kaput")
    """)
    _module(bench_dir, "hang", f"""
        import subprocess, time
        BENCH_TIMEOUT = 2
        def main():
            p = subprocess.Popen(["sleep", "120"])
            open({str(pidfile)!r}, "w").write(str(p.pid))
            time.sleep(120)
    """)
    _module(bench_dir, "strict", """
        import argparse
        def main():
            ap = argparse.ArgumentParser()
            ap.add_argument("--quick", action="store_true")
            a = ap.parse_args()
            return {"quick": {"value": a.quick}}
    """)
    code = run_all.main(["--quick", "--custom-flag"])
    assert code == 1
    report = json.loads((bench_dir / "results" / "latest.json").read_text())
    mods = report["modules"]
    assert mods["ok"]["status"] == "ok"
    assert mods["ok"]["results"]["argv"] == ["--quick", "--custom-flag"]
    assert mods["ok"]["results"]["quick"] == "1"
    assert mods["boom"]["status"] == "failed" and "kaput" in mods["boom"]["output_tail"]
    assert mods["hang"]["status"] == "timeout"
    assert mods["strict"]["status"] == "ok" and mods["strict"]["results"]["quick"]["value"] is True
    assert "rejected" in mods["strict"]["note"]
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _proc.alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _proc.alive(grandchild)
    md = (bench_dir / "results" / "latest.md").read_text()
    assert "| case | ops_s |" in md and "| x | 12.5 |" in md
    assert "hello from ok" in (bench_dir / "results" / "ok.log").read_text()

    # A later subset run keeps the other modules' previous entries.
    assert run_all.main(["--only", "ok"]) == 0
    again = json.loads((bench_dir / "results" / "latest.json").read_text())["modules"]
    assert set(again) == {"ok", "boom", "hang", "strict"}
    assert again["ok"]["results"]["argv"] == []


def test_generic_rendering_conventions() -> None:
    assert _report.generic({"markdown": "# as is"}) == "# as is"
    by_name = _report.generic({"encode": {"mb_s": 100.0, "ratio": 0.5}, "decode": {"mb_s": 2000.0}})
    assert by_name.splitlines()[0] == "| name | mb_s | ratio |"
    assert "| decode | 2,000 | – |" in by_name
    flat = _report.generic({"a": {"b": [1, 2]}, "c": "x|y"})
    assert "| a.b | [1, 2] |" in flat and "x\\|y" in flat


def test_broker_table_ratios() -> None:
    def entry(rps: float, p50: float) -> dict[str, object]:
        run = {"records_per_s": rps, "mb_per_s": rps * 100 / 1e6, "complete": True}
        return {"produce": {"p1_acks1": run}, "latency": {"p50_ms": p50}, "storage": "s"}

    brokers = {"kafkalite": entry(50_000.0, 2.0), "tansu": entry(200_000.0, 4.0), "noida": entry(100_000.0, 1.0)}
    args = argparse.Namespace(records=1_000_000, rate=2000, start_repeats=3)
    text = _report.broker_table(brokers, args)
    produce_row = next(line for line in text.splitlines() if "1 part., acks=1" in line)
    assert produce_row.endswith("| 0.25× (tansu) |")
    p50_row = next(line for line in text.splitlines() if "p50" in line)
    assert p50_row.endswith("| 2.00× (noida) |")
    assert "produce 1M×100 B" in produce_row
    client_row = next(line for line in text.splitlines() if "client CPU per record, produce" in line)
    assert client_row.endswith("| – |")  # context rows carry no ratio


def test_kill_tree_reaches_grandchildren() -> None:
    proc = subprocess.Popen([sys.executable, "-c",
                             "import subprocess,time; subprocess.Popen(['sleep','60']); time.sleep(60)"],
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while not _proc.descendants(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    kids = _proc.descendants(proc.pid)
    assert kids and _proc.tree_rss_kb(proc.pid) > 0
    _proc.kill_tree(proc.pid, grace=5)
    proc.wait(5)
    deadline = time.monotonic() + 5
    while any(_proc.alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not any(_proc.alive(k) for k in kids)


def _fake_broker(sock: socket.socket, seen: list[tuple[int, int]]) -> None:
    conn, _ = sock.accept()
    with conn:
        for _ in range(2):
            size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
            req = conn.recv(size, socket.MSG_WAITALL)
            key, ver, corr = struct.unpack(">hhi", req[:8])
            seen.append((key, ver))
            if key == 18:
                body = struct.pack(">hi", 0, 2) + struct.pack(">hhh", 18, 0, 3) + struct.pack(">hhh", 3, 0, 12)
            else:
                body = struct.pack(">ii", 0, 0)  # throttle + empty brokers: enough for the probe
            frame = struct.pack(">i", corr) + body
            conn.sendall(struct.pack(">i", len(frame)) + frame)


def test_kprobe_speaks_apiversions_then_metadata() -> None:
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        port = srv.getsockname()[1]
        seen: list[tuple[int, int]] = []
        t = threading.Thread(target=_fake_broker, args=(srv, seen), daemon=True)
        t.start()
        assert _kprobe.metadata_ok("127.0.0.1", port)
        t.join(5)
    assert seen == [(18, 0), (3, 8)]
    assert not _kprobe.metadata_ok("127.0.0.1", port, timeout=0.5)


def test_kafkalite_from_another_source_tree(tmp_path: Path) -> None:
    from bench import _brokers

    name = f"kafkalite@{tmp_path}"
    assert _brokers.source_tree(name) == tmp_path.resolve()
    assert _brokers.available(name) is not None          # no kafkalite package there yet
    (tmp_path / "kafkalite").mkdir()
    (tmp_path / "kafkalite" / "__main__.py").write_text("")
    assert _brokers.available(name) is None
    assert _brokers._command(name, 0, tmp_path)[1:3] == ["-m", "kafkalite"]
    assert _brokers.source_tree("kafkalite") is None
