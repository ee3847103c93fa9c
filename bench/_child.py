"""Runs one benchmark module's ``main()`` in this (child) process for ``bench.run_all``.

Usage: ``python -m bench._child MODULE RESULT_JSON [ARGS...]``. ``sys.argv`` is set to ``[MODULE, *ARGS]``
before ``main()`` runs; the returned dict is written to RESULT_JSON (via a temp file and rename, so a killed
child never leaves half a result).
"""

from __future__ import annotations

import importlib
import json
import os
import sys


def run(module: str, out_path: str, args: list[str]) -> int:
    sys.argv = [module, *args]
    mod = importlib.import_module(module)
    result = mod.main()
    tmp = out_path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    os.replace(tmp, out_path)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run(sys.argv[1], sys.argv[2], sys.argv[3:]))
