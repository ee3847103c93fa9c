#!/usr/bin/env python3
"""mypy over wire, storage and kafkalite, with a baseline of errors per file that may only shrink.

``wire/``, ``storage/`` and the strict rooms of ``kafkalite/`` (pyproject.toml's mypy overrides) have no errors and
are not in the baseline, so any error there fails. The other files of ``kafkalite/`` may have at most the number of
errors recorded in ``tools/mypy-baseline.json``; a file that gains one fails the run (naming the new errors' lines),
a file that loses some is reported so the baseline can be lowered (``--update``), which is how it shrinks.

    python tools/mypy_baseline.py            # exit 1 if any file has more errors than its baseline
    python tools/mypy_baseline.py --update   # record the current counts (only ever lower them: see the diff)
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "mypy-baseline.json"
_ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):(?P<line>\d+): error: (?P<msg>.*)$")


def run_mypy() -> tuple[Counter[str], list[str], int]:
    mypy = Path(sys.executable).with_name("mypy")
    cmd = [str(mypy)] if mypy.exists() else [sys.executable, "-m", "mypy"]
    res = subprocess.run([*cmd, "--no-pretty", "--no-error-summary"], cwd=ROOT, capture_output=True, text=True)
    counts: Counter[str] = Counter()
    lines = []
    for line in res.stdout.splitlines():
        m = _ERROR.match(line)
        if m:
            counts[m["file"]] += 1
            lines.append(line)
    if res.returncode not in (0, 1) or (res.returncode == 1 and not counts):
        sys.stderr.write(res.stdout + res.stderr)
        raise SystemExit(f"mypy did not run (exit code {res.returncode})")
    return counts, lines, res.returncode


def strict_paths() -> tuple[str, ...]:
    """File path prefixes of the modules pyproject.toml makes strict: they may never be in the baseline."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    out = []
    for section in conf["tool"]["mypy"].get("overrides", []):
        if section.get("strict"):
            mods = section["module"] if isinstance(section["module"], list) else [section["module"]]
            for m in mods:
                path = m.removesuffix(".*").replace(".", "/")
                out += [path + "/"] if m.endswith(".*") else [path + ".py", path + "/__init__.py"]   # module or package
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--update", action="store_true", help="write the current counts as the baseline")
    args = ap.parse_args(argv)
    counts, lines, _rc = run_mypy()
    if args.update:
        strict_errors = {f: n for f, n in counts.items() if f.startswith(strict_paths())}
        if strict_errors:
            print(f"strict modules have errors, fix them instead of recording them: {strict_errors}")
            return 1
        BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n", encoding="utf-8")
        print(f"baseline: {sum(counts.values())} errors in {len(counts)} files")
        return 0
    baseline: dict[str, int] = json.loads(BASELINE.read_text(encoding="utf-8"))
    strict = strict_paths()
    baseline = {f: (0 if f.startswith(strict) else n) for f, n in baseline.items()}   # strict rooms: none at all
    worse = {f: n for f, n in counts.items() if n > baseline.get(f, 0)}
    better = {f: (baseline[f], counts.get(f, 0)) for f in baseline if counts.get(f, 0) < baseline[f]}
    for f, n in sorted(worse.items()):
        print(f"{f}: {n} mypy errors, baseline {baseline.get(f, 0)}:")
        for line in lines:
            if line.startswith(f + ":"):
                print(f"  {line}")
    if better:
        print(f"{len(better)} files have fewer errors than the baseline: lower it with "
              f"`python tools/mypy_baseline.py --update` ({', '.join(sorted(better)[:5])}...)")
    total, base = sum(counts.values()), sum(baseline.values())
    print(f"mypy: {total} errors (baseline {base}) in {len(counts)} files; {len(worse)} files over their baseline")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
