"""compat-tests/make_matrix.py's Kafka 4.4 column: MATRIX-kafka.md's rows, all clients together, as the last
column of MATRIX.md's tables; written twice, the same file."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[3] / "compat-tests" / "make_matrix.py"
_spec = importlib.util.spec_from_file_location("make_matrix_under_test", _PATH)
assert _spec is not None and _spec.loader is not None
mm = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = mm   # its dataclasses look their module up there
_spec.loader.exec_module(mm)

REFERENCE = """# Client compatibility matrix against Apache Kafka 4.4.0

Run: 2026-11-28 03:00 UTC at commit `abc1234`, 900 s. Totals: 1 failed, 9 passed, 2 skipped.

## Default profile (Kafka 3.9 + 4.3 API versions)

| Scenario | kafka-python | java |
|---|---|---|
| Metadata | ✅ 1/1 | ✅ 2/2 |
| Restart | ❌ 0/1 (fails: SIGKILL) | ✅ 1/1 |
| Security | skipped | ✅ 3/3 |
| Emulated | skipped | skipped |

Not per client (several clients or the broker alone in one test):

| Test | Result |
|---|---|
| `test_x` (test_m) | ✅ 2/2 |
"""

MATRIX = """# Client compatibility matrix

Run: 2026-11-26 04:32 UTC at commit `ac138d5`. Totals: 9 passed.

Clients: two.

## Default profile (Kafka 3.9 + 4.3 API versions)

| Scenario | kafka-python | java |
|---|---|---|
| Metadata | ✅ 1/1 | ✅ 2/2 |
| Restart | ✅ 1/1 | ✅ 1/1 |
| Security | ✅ 1/1 | ✅ 3/3 |
| Emulated | ✅ 1/1 | ✅ 1/1 |
| Only here | ✅ 1/1 | — |

Not per client (several clients or the broker alone in one test):

| Test | Result |
|---|---|
| `test_x` (test_m) | ✅ 2/2 |
"""


def test_kafka_column_aggregates_rows_and_is_idempotent() -> None:
    once = mm.add_kafka_column(MATRIX, REFERENCE)
    lines = once.splitlines()
    assert "| Scenario | kafka-python | java | Kafka 4.4 |" in lines
    assert "|---|---|---|---|" in lines
    assert "| Metadata | ✅ 1/1 | ✅ 2/2 | ✅ 3/3 |" in lines
    assert "| Restart | ✅ 1/1 | ✅ 1/1 | ❌ 1/2 |" in lines
    assert "| Security | ✅ 1/1 | ✅ 3/3 | ✅ 3/3 + kafkalite-only |" in lines
    assert "| Emulated | ✅ 1/1 | ✅ 1/1 | kafkalite-only |" in lines
    assert "| Only here | ✅ 1/1 | — | — |" in lines
    assert "| `test_x` (test_m) | ✅ 2/2 | ✅ 2/2 |" in lines
    assert sum(x.startswith("The **Kafka 4.4** column") for x in lines) == 1
    assert "2026-11-28 03:00 UTC at commit `abc1234`" in once
    assert mm.add_kafka_column(once, REFERENCE) == once
