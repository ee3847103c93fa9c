"""``python -m kafkalite.tests.fuzz [--frames N | --duration S] [--seed S]``: fuzz an in-process broker and
print the outcome table; exit status 1 if any outcome is BAD. ``--json FILE`` writes the findings (with the
frames' hex) for reproduction."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from kafkalite.tests.fuzz import fuzz_embedded


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkalite.tests.fuzz")
    p.add_argument("--frames", type=int, default=None)
    p.add_argument("--duration", type=float, default=None, help="seconds (default: 600 unless --frames)")
    p.add_argument("--seed", type=int, default=int(os.environ.get("KAFKALITE_FUZZ_SEED", "1")))
    p.add_argument("--timeout", type=float, default=5.0, help="seconds before a silent connection is a hang")
    p.add_argument("--replay", type=int, default=None, help="send only frame N of the seed and print it")
    p.add_argument("--json", default=None, help="write findings to this file")
    a = p.parse_args(argv)
    duration = a.duration if a.duration is not None or a.frames is not None else 600.0
    t0 = time.monotonic()
    stats = fuzz_embedded(frames=a.frames, duration=duration, seed=a.seed, timeout=a.timeout,
                          replay=a.replay)
    print(f"seed {a.seed}: {stats.frames} frames in {time.monotonic() - t0:.0f} s")
    print(stats.table())
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seed": a.seed, "frames": stats.frames, "findings": stats.findings,
                       "run": stats.run_bad, "close_reasons": [
                           [k, r, n] for (k, r), n in stats.close_reasons.most_common()]}, f, indent=1)
    return 1 if stats.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
