"""Start-to-ready from a wheel install: what a user who ran ``pip install kafkalite`` waits for.

Each tree is built into a wheel (``pip wheel --no-deps --no-build-isolation``), installed into a fresh venv by
pip (which compiles the bytecode, as any pip install does), and ``VENV/bin/python -m kafkalite serve --listen
127.0.0.1:0`` is spawned ``--spawns`` times, alternating between the trees so load on the shared machine hits
them alike. Ready is measured as bench_brokers measures it: spawn -> the ready line -> the first ApiVersions +
Metadata round trip that succeeds (``_kprobe``). Medians in one run are the figures to compare; with the
machine's cores shared, the broker's CPU time until then (all threads, ``/proc/<pid>/task/*/schedstat``, read
right after the answer) moves much less with the load than the wall clock does, so it is printed too.

    python -m bench.bench_start_wheel                        # this tree
    python -m bench.bench_start_wheel --base main            # this tree and main's HEAD, alternating
    python -m bench.bench_start_wheel --trees kafkalite,kafkalite@/path/to/other/tree
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import venv
from pathlib import Path
from typing import Any

from bench import _brokers
from bench.bench_start_cpu import _cpu_ns

BENCH_TIMEOUT = 900
ROOT = Path(__file__).resolve().parent.parent


def _copy_tracked(src: Path, dest: Path) -> None:
    """The files git would commit from ``src``'s work tree (symlinks kept), so no stale build/ or cache leaks in."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=src,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        s, d = src / rel, dest / rel
        if not s.exists() and not s.is_symlink():
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_symlink():
            d.symlink_to(os.readlink(s))
        else:
            shutil.copy2(s, d)


def _archive(ref: str, dest: Path) -> None:
    """``git archive`` of ``ref`` of this repository into ``dest``."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "x", "-C", str(dest)], input=archive, check=True)


def install(tree: Path, work: Path) -> Path:
    """A fresh venv with ``tree``'s wheel installed; returns its python."""
    src = work / "src"
    if (tree / ".git").exists():
        _copy_tracked(tree, src)
    else:
        shutil.copytree(tree, src, symlinks=True)
    whl_dir = work / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(whl_dir), str(src)], check=True, capture_output=True)
    (whl,) = whl_dir.glob("kafkalite-*.whl")
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", str(whl)], check=True,
                   capture_output=True)
    return py


def main() -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", default="kafkalite", help="comma-separated: kafkalite (this tree), kafkalite@DIR")
    ap.add_argument("--base", metavar="REF", help="also a git ref of this repository (e.g. main), archived")
    ap.add_argument("--spawns", type=int, default=11, help="spawns of each tree (alternating)")
    ap.add_argument("--quick", action="store_true", help="5 spawns each")
    args, _ = ap.parse_known_args(sys.argv[1:])
    spawns = 5 if args.quick else args.spawns
    work = Path(tempfile.mkdtemp(prefix="bench-startwheel-"))
    try:
        trees: dict[str, Path] = {}
        for name in args.trees.split(","):
            trees[name] = _brokers.source_tree(name) or ROOT
        if args.base:
            _archive(args.base, work / "base-src")
            trees[f"kafkalite@{args.base}"] = work / "base-src"
        pythons = {name: install(tree, work / f"t{i}") for i, (name, tree) in enumerate(trees.items())}
        times: dict[str, list[float]] = {n: [] for n in pythons}
        cpu: dict[str, list[float]] = {n: [] for n in pythons}
        for _ in range(spawns):
            for name, py in pythons.items():
                running = _brokers.start("kafkalite", python=str(py))
                try:
                    cpu[name].append(_cpu_ns(running.proc.pid) / 1e9)
                    times[name].append(running.spawn_to_ready_s)
                finally:
                    running.stop()
        rows = [{"tree": n, "spawns": len(v), "median_ms": round(statistics.median(v) * 1e3, 1),
                 "min_ms": round(min(v) * 1e3, 1), "max_ms": round(max(v) * 1e3, 1),
                 "median_cpu_ms": round(statistics.median(cpu[n]) * 1e3, 1)} for n, v in times.items()]
        for r in rows:
            print(f"{r['tree']}: start-to-ready from a wheel install median {r['median_ms']} ms "
                  f"(min {r['min_ms']}, max {r['max_ms']}, {r['spawns']} spawns); broker CPU until then median "
                  f"{r['median_cpu_ms']} ms")
        return {"rows": rows}
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
