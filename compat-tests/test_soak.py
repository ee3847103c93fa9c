"""A bounded slice of ``make soak`` (tools/soak.py): two SIGKILL/restart cycles of a real broker process under an
idempotent acks=all confluent-kafka producer and a committing group, checked for lost, duplicated and reordered
records and for committed offsets going back. Keeps the soak script itself working in CI; the long run is
``make soak``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kafkalite.tests.support.requires import require

KAFKALITE_ONLY = 'tools/soak.py starts and SIGKILLs kafkalite processes of its own'

REPO = Path(__file__).resolve().parents[1]


def test_sigkill_soak_two_cycles() -> None:
    require("confluent_kafka")   # a loud skip, or a failure under CI=true
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "soak.py"), "--cycles", "2", "--seconds", "120",
                           "--seed", "12"], capture_output=True, text=True, timeout=280, cwd=REPO)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    m = re.search(r"soak: ok: (\d+) SIGKILL cycles, (\d+) acknowledged records", proc.stdout)
    assert m is not None, out[-4000:]
    assert int(m.group(1)) == 2 and int(m.group(2)) > 0
