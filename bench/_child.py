"""Runs one benchmark module's ``main()`` in this (child) process for ``bench.run_all``.

Usage: ``python -m bench._child MODULE_FILE RESULT_JSON [ARGS...]``. The file is loaded as
``bench.<stem>`` (so ``from bench import ...`` inside it works, and its ``if __name__ == "__main__"``
block does not run); ``sys.argv`` is set to ``[MODULE_FILE, *ARGS]`` before ``main()`` runs. The returned
dict is written to RESULT_JSON through a temp file and a rename, so a killed child never leaves half a
result behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path


def run(module_file: str, out_path: str, args: list[str]) -> int:
    name = f"bench.{Path(module_file).stem}"
    spec = importlib.util.spec_from_file_location(name, module_file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module_file}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.argv = [module_file, *args]
    spec.loader.exec_module(mod)
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
