"""@kafkajs/confluent-schema-registry 4.1.0 (npm, the registry client kafkajs users take) against kafkalite's
built-in registry, records going through kafkalite topics with kafkajs 2.2.4: Avro, JSON Schema and Protobuf
(one schema importing another through a reference) registered, encoded, produced, consumed and decoded by a
fresh client that fetches each schema by id; an incompatible Avro schema is refused with 409. The scenario is
compat-tests/node/schema_registry.js."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness.broker import _free_port
from harness.clients.base import which

from kafkalite.tests.support.requires import missing

HERE = Path(__file__).resolve().parent
KAFKALITE_ONLY = "kafkalite's built-in schema registry (kafkalite serve --schema-registry); Apache Kafka has none"


@pytest.fixture
def registry(broker_factory: Any) -> Any:
    if not which("node"):
        missing("node not on PATH (tools/bootstrap.sh clients)")
    if not (HERE / "node_modules" / "@kafkajs" / "confluent-schema-registry" / "package.json").exists():
        missing("compat-tests/node_modules/@kafkajs/confluent-schema-registry missing: run tools/bootstrap.sh clients")
    port = _free_port()
    b = broker_factory(extra_args=["--schema-registry", f"127.0.0.1:{port}"])
    b.registry_url = f"http://127.0.0.1:{port}"
    return b


def test_kafkajs_schema_registry_client_round_trips(registry: Any) -> None:
    run = subprocess.run(["node", str(HERE / "node" / "schema_registry.js"), registry.bootstrap, registry.registry_url],
                         cwd=HERE, capture_output=True, text=True, timeout=240,
                         env={**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["avro"] == {"id": 1, "decoded": [{"name": "ann", "age": 30}, {"name": "bob", "age": 41}], "latest": 1}
    assert out["incompatible"]["status"] == 409 and "incompatible" in out["incompatible"]["message"].lower()
    assert out["json"] == {"id": 2, "decoded": [{"id": 1, "item": "a"}, {"id": 2, "item": "b"}]}
    assert out["protobuf"] == {"id": 3, "decoded": [{"text": "hi", "n": 1}, {"text": "there", "n": 2}]}
    assert out["protobuf_ref"]["id"] == 5
    assert out["protobuf_ref"]["decoded"] == [{"id": "7", "total": {"currency": "EUR", "units": "12"},
                                               "tags": ["x", "y"], "status": "PAID"}]
