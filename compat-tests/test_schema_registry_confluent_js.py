"""@confluentinc/schemaregistry 1.10.1 (npm: Confluent's JavaScript Schema Registry client with its Avro, JSON
Schema and Protobuf serdes) against kafkalite's built-in registry, records produced and consumed through kafkalite
with kafkajs 2.2.4. One run of compat-tests/node/confluent_schemaregistry.js per module; each test checks one part
of what it printed:

- Avro: register, look up by schema, by id, latest and by version, a compatible second version, the
  AvroSerializer writing the latest version and a fresh AvroDeserializer reading it back by id; auto-registration
  of a schema the serializer derives from the value;
- JSON Schema: register, look up, the JsonSerializer validating (an invalid value is refused by the client), round
  trip;
- Protobuf: messages built from protoc's descriptors (what protoc-gen-es embeds in generated code), the
  ProtobufSerializer auto-registering the file and its import as a reference, a fresh ProtobufDeserializer reading
  them back (a map, a oneof, an enum, a well-known Timestamp, a second message type's index);
- incompatible Avro, JSON Schema and Protobuf schemas refused: the client's RestError carries HTTP 409 and error
  code 409, the compatibility check says false; with the subject's compatibility NONE the schema registers.
"""
from __future__ import annotations

import importlib.resources
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness.broker import _free_port
from harness.clients.base import which

from kafkalite.tests.support.requires import missing, require

HERE = Path(__file__).resolve().parent
PACKAGE = HERE / "node_modules" / "@confluentinc" / "schemaregistry" / "package.json"
KAFKALITE_ONLY = "kafkalite's built-in schema registry (kafkalite serve --schema-registry); Apache Kafka has none"
PORT = _free_port()
KAFKALITE_ARGS = ["--schema-registry", f"127.0.0.1:{PORT}"]

MONEY_PROTO = 'syntax = "proto3";\npackage shared;\nmessage Money { string currency = 1; int64 units = 2; }\n'
ORDER_PROTO = """syntax = "proto3";
package shop;
import "shared/money.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  shared.Money total = 2;
  repeated string tags = 3;
  Status status = 4;
  map<string, int32> quantities = 5;
  oneof delivery { string address = 6; bool pickup = 7; }
  google.protobuf.Timestamp placed = 8;
  enum Status { NEW = 0; PAID = 1; }
}
message Refund { int64 order_id = 1; }
"""


def _descriptor_set(tmp: Path) -> Path:
    """protoc (grpcio-tools, in process): shop/order.proto with its imports as one FileDescriptorSet."""
    require("grpc_tools")
    from grpc_tools import protoc

    for name, text in {"shared/money.proto": MONEY_PROTO, "shop/order.proto": ORDER_PROTO}.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    out = tmp / "order.pb"
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{tmp}", f"-I{include}", "--include_imports", f"--descriptor_set_out={out}",
                        "shop/order.proto"]) == 0
    return out


@pytest.fixture(scope="module")
def run(broker: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not which("node"):
        missing("node not on PATH (tools/bootstrap.sh clients)")
    if not PACKAGE.exists():
        missing("compat-tests/node_modules/@confluentinc/schemaregistry missing: run tools/bootstrap.sh clients")
    descriptors = _descriptor_set(tmp_path_factory.mktemp("protos"))
    proc = subprocess.run(["node", str(HERE / "node" / "confluent_schemaregistry.js"), broker.bootstrap,
                           f"http://127.0.0.1:{PORT}", str(descriptors)],
                          cwd=HERE, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_avro_register_lookup_and_round_trip(run: dict[str, Any]) -> None:
    a = run["avro"]
    assert a["id"] == 1 and a["lookupId"] == 1 and a["version"] == 1
    assert a["byId"] == {"type": "AVRO", "name": "User"}
    assert a["compatibleV2"] is True and a["idV2"] == 2
    assert a["latest"] == {"id": 2, "version": 2, "subject": "cf-users-value"}
    assert a["v1"] == {"id": 1, "version": 1}
    assert a["versions"] == [1, 2]
    assert a["wireId"] == 2   # useLatestVersion: the serializer wrote with version 2's id
    assert a["decoded"] == [{"name": "ann", "age": 30, "email": None},
                            {"name": "bob", "age": 41, "email": "bob@example.com"}]
    assert a["autoId"] == 3 and a["autoSubjects"] == ["cf-auto-value"]
    assert a["autoDecoded"] == {"sku": "x1", "qty": 3}


def test_json_schema_register_lookup_and_round_trip(run: dict[str, Any]) -> None:
    j = run["json"]
    assert j["lookupId"] == j["id"] == j["wireId"] == 4
    assert j["latest"] == {"id": 4, "version": 1, "type": "JSON"}
    assert j["invalid"] == "SerializationError"   # the client validates against the registered schema
    assert j["decoded"] == [{"id": 1, "item": "a"}, {"id": 2, "item": "b"}]


def test_protobuf_with_a_reference_round_trip(run: dict[str, Any]) -> None:
    p = run["protobuf"]
    # the import is registered first (id 5) under its file name, then the file itself with the reference
    assert p["money"] == {"id": 5, "version": 1}
    assert p["wireId"] == 6 and p["indexes"] == 0   # message index [0]: one 0 byte
    assert p["latest"] == {"id": 6, "version": 1, "type": "PROTOBUF", "text": True,
                           "references": [{"name": "shared/money.proto", "subject": "shared/money.proto",
                                           "version": 1}]}
    assert p["decoded"] == [
        {"typeName": "shop.Order", "id": "7", "total": {"currency": "EUR", "units": "12"}, "tags": ["x", "y"],
         "status": "PAID", "quantities": {"apple": 2}, "pickup": True},
        {"typeName": "shop.Order", "id": "8", "total": {"currency": "NOK", "units": "99"}, "address": "street 1",
         "placed": "2023-11-14T22:13:20Z"},
    ]
    assert p["refundIndexes"] == [2, 2]   # zigzag varints: one index, 1
    assert p["refund"] == {"typeName": "shop.Refund", "orderId": "7"}


def test_incompatible_schemas_are_refused_with_409(run: dict[str, Any]) -> None:
    i = run["incompatible"]
    assert (i["avroCheck"], i["jsonCheck"], i["protobufCheck"]) == (False, False, False)
    for kind in ("avro", "json", "protobuf"):
        assert (i[kind]["status"], i[kind]["errorCode"], i[kind]["name"]) == (409, 409, "RestError"), i[kind]
        assert "incompatible" in i[kind]["message"].lower(), i[kind]
    assert "FIELD_SCALAR_KIND_CHANGED" in i["protobuf"]["message"]
    assert i["versionsAfter"] == [1, 2]
    assert i["compatibilitySet"] == "NONE" and i["compatibility"] == "NONE"
    assert i["afterNone"] == 7 and i["deleted"] == 3 and i["versionsFinal"] == [1, 2]
