"""Running ``kafkalite <tool>`` in this process against a broker, for the CLI tool tests."""
from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from typing import Any

from kafkalite.tests.support.requires import require


def need_confluent() -> Any:
    """confluent_kafka, or a loud skip (a failure under CI=true: a missing client there is a broken setup)."""
    require("confluent_kafka")
    import confluent_kafka

    return confluent_kafka


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def rows(self) -> list[list[str]]:
        """The tab-separated table (stdout is not a terminal), header line left out."""
        lines = [ln.split("\t") for ln in self.out.splitlines() if ln]
        return lines[1:]


def cli(bootstrap: str, *argv: str, stdin: bytes = b"") -> Result:
    """``kafkalite argv...`` with ``--bootstrap-server`` added; stdout/stderr/stdin swapped for buffers."""
    from kafkalite.cli import main

    args = [argv[0], "--bootstrap-server", bootstrap, *argv[1:]]
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr, sys.stdin
    sys.stdout, sys.stderr = out, err
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        try:
            code = main(args)
        except SystemExit as exc:   # argparse's usage errors
            code = int(exc.code or 0)
    finally:
        sys.stdout, sys.stderr, sys.stdin = old
    return Result(code, out.getvalue(), err.getvalue())
