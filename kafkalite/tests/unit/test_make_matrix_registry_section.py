"""compat-tests/make_matrix.py's Schema Registry section: the registry modules' cases as (client, scenario) rows,
spliced into MATRIX.md by ``--section registry`` in place of their rows in the "Not per client" table; written
twice, the same file."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[3] / "compat-tests" / "make_matrix.py"
_NAME = "make_matrix_under_test"   # one name for the file in every test that loads it
if _NAME in sys.modules:
    mm = sys.modules[_NAME]
else:
    _spec = importlib.util.spec_from_file_location(_NAME, _PATH)
    assert _spec is not None and _spec.loader is not None
    mm = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = mm   # its dataclasses look their module up there
    _spec.loader.exec_module(mm)

MATRIX = """# Client compatibility matrix

Run: 2026-11-26 04:32 UTC at commit `ac138d5`. Totals: 9 passed.

Not per client (several clients or the broker alone in one test):

| Test | Result |
|---|---|
| `test_a` (test_acls) | ✅ 1/1 |
| `test_avro_round_trip_through_a_topic` (test_schema_registry) | ✅ 1/1 |

## Client limitations (no test generated)

- **kcat**: text.
"""


def _case(module: str, func: str, outcome: str = "passed") -> object:
    return mm.Case(module, func, {}, outcome)


def test_registry_rows_replace_the_not_per_client_rows_and_are_idempotent() -> None:
    cases = [_case("test_schema_registry_java", "test_kafka_avro_serializer_round_trip"),
             _case("test_schema_registry", "test_avro_round_trip_through_a_topic"),
             _case("test_schema_registry_confluent_js", "test_incompatible_schemas_are_refused_with_409", "failed"),
             _case("test_schema_registry", "test_something_new", "skipped"),
             _case("test_acls", "test_a")]
    section = mm.render_registry(cases)
    rows = [line for line in section if line.startswith("| ") and not line.startswith("| Client")]
    assert rows == [
        "| confluent-kafka AvroSerializer / AvroDeserializer | auto-register, produce, consume, decode by id | ✅ 1/1 |",
        "| confluent-kafka 2.16.1 (Python) | `test_something_new` | skipped |",
        "| @confluentinc/schemaregistry 1.10.1 SchemaRegistryClient | Avro, JSON Schema, Protobuf: incompatible -> "
        "RestError 409 / 409, compatibility checks, NONE | ❌ 0/1 |",
        "| Java KafkaAvroSerializer / KafkaAvroDeserializer 7.0.16 + kafka-clients | auto-register, produce (Java "
        "producer), consume, decode GenericRecords by id | ✅ 1/1 |",
    ]
    once = mm.splice_section(mm.drop_rows_of(MATRIX, list(mm.REGISTRY_MODULES)), mm.REGISTRY_HEADER, section)
    assert "(test_schema_registry) |" not in once and "| `test_a` (test_acls) | ✅ 1/1 |" in once
    assert once.index(mm.REGISTRY_HEADER) < once.index("## Client limitations")
    twice = mm.splice_section(mm.drop_rows_of(once, list(mm.REGISTRY_MODULES)), mm.REGISTRY_HEADER, section)
    assert twice == once
    assert mm.render_registry([_case("test_acls", "test_a")]) == []
