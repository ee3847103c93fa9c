"""Runs every ``bench/bench_*.py`` module's ``main()`` in its own subprocess with a time limit.

``python -m bench.run_all [--only a,b] [--skip c] [--quick] [--timeout S] [--fresh] [MODULE FLAGS...]``

- Modules run one at a time (the machine is small and shared; overlapping runs would skew each other),
  in name order. ``--only brokers,wire`` / ``--skip spark`` select by the name after ``bench_``.
- Each child's output is shown live and kept in ``bench/results/<name>.log``.
- Time limit per module: ``--timeout``, else the module's ``BENCH_TIMEOUT = <int>`` literal (read with
  ``ast``, the module is not imported here), else 1200 s. On expiry the child gets SIGTERM (modules stop
  their own servers on it), then SIGKILL, together with every process it left behind, by pid.
- Flags this runner does not know are forwarded to every module (``--quick`` too). If a module rejects
  them (argparse's exit 2 with "unrecognized arguments"), it is run again with ``--quick`` only.
- Results: ``bench/results/latest.json`` and ``latest.md``. Modules not run this time keep their previous
  entry (with its own ``ran_at``) unless ``--fresh`` is given.
Exit status 1 when any selected module failed or timed out.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import _proc
from bench._report import generic

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"
DEFAULT_TIMEOUT = 1200


def discover() -> list[str]:
    """Short names of the benchmark modules: ``bench_wire.py`` -> ``wire``."""
    return sorted(p.stem[len("bench_"):] for p in BENCH_DIR.glob("bench_*.py"))


def declared_timeout(name: str) -> int | None:
    """The module's ``BENCH_TIMEOUT = <int>`` literal, if any."""
    try:
        tree = ast.parse((BENCH_DIR / f"bench_{name}.py").read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        for t in targets:
            if isinstance(t, ast.Name) and t.id == "BENCH_TIMEOUT" and isinstance(value, ast.Constant) \
                    and isinstance(value.value, int | float):
                return int(value.value)
    return None


def _tee(stream: Any, log: Any, captured: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        sys.stdout.write(line)
        sys.stdout.flush()
        log.write(line)
        log.flush()
        captured.append(line)
        del captured[:-50]


def run_module(name: str, args: list[str], timeout: float, quick: bool) -> dict[str, Any]:
    """Run ``bench_<name>.py``'s ``main()`` in a child; returns the module's entry for latest.json."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS / f".{name}.result.json"
    out_path.unlink(missing_ok=True)
    env = dict(os.environ)
    if quick:
        env["BENCH_QUICK"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, "-m", "bench._child", str(BENCH_DIR / f"bench_{name}.py"), str(out_path), *args]
    started = time.time()
    t0 = time.monotonic()
    tail: list[str] = []
    status = "ok"
    with open(RESULTS / f"{name}.log", "w") as log:
        log.write(f"$ {' '.join(cmd)}\n")
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        reader = threading.Thread(target=_tee, args=(proc.stdout, log, tail), daemon=True)
        reader.start()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = "timeout"
            _proc.kill_tree(proc.pid, grace=20.0)
            code = proc.wait()
        except BaseException:
            _proc.kill_tree(proc.pid, grace=5.0)
            raise
        finally:
            reader.join(5)
    entry: dict[str, Any] = {
        "status": status,
        "exit_code": code,
        "seconds": round(time.monotonic() - t0, 1),
        "ran_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "args": args,
    }
    if status == "ok" and code == 0 and out_path.exists():
        entry["results"] = json.loads(out_path.read_text())
        out_path.unlink()
    else:
        if status == "ok":
            status = entry["status"] = "failed"
        entry["output_tail"] = "".join(tail[-20:])
    return entry


def _rejected_args(entry: dict[str, Any]) -> bool:
    return entry["exit_code"] == 2 and "unrecognized arguments" in entry.get("output_tail", "")


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def render(report: dict[str, Any]) -> str:
    host = report["host"]
    lines = [
        "# kafkalite benchmarks",
        "",
        f"Generated {report['generated_at']} at commit `{report.get('commit')}` on {host['cpus']} CPU(s), "
        f"{host['platform']}, Python {host['python']} (load average at start: {host['loadavg']}).",
    ]
    for name, entry in report["modules"].items():
        lines += ["", f"## {name}", "", f"_{entry['status']}, {entry['seconds']} s, ran {entry['ran_at']}"
                  + (f" with `{' '.join(entry['args'])}`" if entry.get("args") else "") + "_", ""]
        if "results" in entry:
            lines.append(generic(entry["results"]))
        else:
            lines += ["```", entry.get("output_tail", "").rstrip(), "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.run_all", description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma list of module names (after bench_) to run")
    ap.add_argument("--skip", default="", help="comma list of module names to leave out")
    ap.add_argument("--timeout", type=float, help="per-module time limit in seconds (overrides modules)")
    ap.add_argument("--quick", action="store_true", help="forwarded to every module; sets BENCH_QUICK=1")
    ap.add_argument("--fresh", action="store_true", help="drop results of modules not run this time")
    ap.add_argument("--list", action="store_true", help="list the modules and their time limits, then exit")
    opts, extra = ap.parse_known_args(argv)
    names = discover()
    if opts.list:
        for n in names:
            print(f"{n}\t{declared_timeout(n) or DEFAULT_TIMEOUT}s")
        return 0
    wanted = [n.strip() for n in opts.only.split(",")] if opts.only else names
    unknown = [n for n in wanted if n not in names]
    if unknown:
        ap.error(f"no such benchmark module(s): {', '.join(unknown)} (have: {', '.join(names)})")
    skip = {n.strip() for n in opts.skip.split(",") if n.strip()}
    selected = [n for n in wanted if n not in skip]
    common = ["--quick"] if opts.quick else []
    previous: dict[str, Any] = {}
    latest_json = RESULTS / "latest.json"
    if latest_json.exists() and not opts.fresh:
        try:
            previous = json.loads(latest_json.read_text()).get("modules", {})
        except (OSError, ValueError):
            previous = {}
    report: dict[str, Any] = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _git_commit(),
        "host": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                 "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg())},
        "modules": {k: v for k, v in previous.items() if k in names and k not in selected},
    }
    failed = False
    for name in selected:
        timeout = opts.timeout or declared_timeout(name) or DEFAULT_TIMEOUT
        print(f"=== bench {name} (limit {timeout:.0f} s) ===", flush=True)
        entry = run_module(name, common + extra, timeout, opts.quick)
        if extra and _rejected_args(entry):
            print(f"=== bench {name} rejected {extra}; again with {common} ===", flush=True)
            entry = run_module(name, common, timeout, opts.quick)
            entry["note"] = f"rejected forwarded flags {extra}"
        report["modules"][name] = entry
        failed |= entry["status"] != "ok"
        print(f"=== bench {name}: {entry['status']} in {entry['seconds']} s ===", flush=True)
    report["modules"] = dict(sorted(report["modules"].items()))
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = latest_json.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    os.replace(tmp, latest_json)
    (RESULTS / "latest.md").write_text(render(report))
    print(f"wrote {latest_json} and {RESULTS / 'latest.md'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
