"""confluent-kafka-python's Schema Registry client and serializers against kafkalite's built-in registry
(``kafkalite serve --schema-registry``), records going through real kafkalite topics.

- AvroSerializer/AvroDeserializer and JSONSerializer/JSONDeserializer round trips (auto-registering);
- schema evolution through the client: a compatible version registers, an incompatible one is refused (409);
- references (an Avro type defined in another subject) and normalisation;
- the ``_schemas`` topic holds Confluent's records, read back with a plain consumer;
- a SIGKILLed broker comes back with every acknowledged schema, and the next id follows.
"""
from __future__ import annotations

import json
import signal
import uuid
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("confluent_kafka", "fastavro", "jsonschema", "protobuf", "grpc_tools")   # a loud skip, or CI failure
import importlib.resources  # noqa: E402
from pathlib import Path  # noqa: E402

from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import (  # noqa: E402
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2  # noqa: E402
from google.protobuf.message_factory import GetMessageClass  # noqa: E402
from grpc_tools import protoc  # noqa: E402
from harness.broker import _free_port  # noqa: E402

KAFKALITE_ONLY = "kafkalite's built-in schema registry (kafkalite serve --schema-registry); Apache Kafka has none"

USER_V1 = {"type": "record", "name": "User", "namespace": "com.example",
           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
USER_V2 = {**USER_V1, "fields": USER_V1["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}]}
USER_BAD = {**USER_V1, "fields": [{"name": "name", "type": "int"}, {"name": "age", "type": "int"}]}
JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
               "properties": {"id": {"type": "integer"}, "item": {"type": "string"}}, "required": ["id"]}


@pytest.fixture
def registry(broker_factory: Any) -> Any:
    port = _free_port()
    b = broker_factory(extra_args=["--schema-registry", f"127.0.0.1:{port}"])
    b.registry_url = f"http://127.0.0.1:{port}"
    return b


def _produce_consume(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, v)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out: list[bytes] = []
    try:
        for _ in range(300):
            if len(out) == len(values):
                break
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m.value())
    finally:
        c.close()
    return out


def test_avro_round_trip_through_a_topic(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    topic = f"users-{uuid.uuid4().hex[:8]}"
    ser = AvroSerializer(client, json.dumps(USER_V1))
    ctx = SerializationContext(topic, MessageField.VALUE)
    users = [{"name": f"u{i}", "age": 20 + i} for i in range(5)]
    payloads = [ser(u, ctx) for u in users]
    assert payloads[0][0] == 0 and int.from_bytes(payloads[0][1:5], "big") == 1   # magic byte 0, schema id 1
    got = _produce_consume(registry.bootstrap, topic, payloads)
    # a fresh client, so the schema comes from the registry by id and not from a cache
    de = AvroDeserializer(SchemaRegistryClient({"url": registry.registry_url}))
    assert [de(v, ctx) for v in got] == users
    latest = client.get_latest_version(f"{topic}-value")
    assert (latest.version, latest.schema_id) == (1, 1)
    assert json.loads(latest.schema.schema_str)["name"] == "User"


def test_json_schema_round_trip_through_a_topic(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    ser = JSONSerializer(json.dumps(JSON_SCHEMA), client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    orders = [{"id": i, "item": f"thing {i}"} for i in range(4)]
    got = _produce_consume(registry.bootstrap, topic, [ser(o, ctx) for o in orders])
    de = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": registry.registry_url}))
    assert [de(v, ctx) for v in got] == orders
    assert client.get_latest_version(f"{topic}-value").schema.schema_type == "JSON"


def test_evolution_compatible_then_incompatible(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    subject = "evolve-value"
    id1 = client.register_schema(subject, Schema(json.dumps(USER_V1), "AVRO"))
    id2 = client.register_schema(subject, Schema(json.dumps(USER_V2), "AVRO"))
    assert (id1, id2) == (1, 2)
    assert client.test_compatibility(subject, Schema(json.dumps(USER_BAD), "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as info:
        client.register_schema(subject, Schema(json.dumps(USER_BAD), "AVRO"))
    assert info.value.http_status_code == 409
    assert client.get_versions(subject) == [1, 2]
    client.set_compatibility(subject, "NONE")
    assert client.get_compatibility(subject) == "NONE"
    assert client.register_schema(subject, Schema(json.dumps(USER_BAD), "AVRO")) == 3
    looked = client.lookup_schema(subject, Schema(json.dumps(USER_V2), "AVRO"))
    assert (looked.version, looked.schema_id) == (2, 2)
    assert client.delete_version(subject, 3) == 3
    assert client.get_versions(subject) == [1, 2]
    assert sorted(client.delete_subject(subject)) == [1, 2]
    assert subject not in client.get_subjects()


def test_references_and_normalisation(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    address = {"type": "record", "name": "Address", "namespace": "com.example",
               "fields": [{"name": "city", "type": "string"}]}
    client.register_schema("address", Schema(json.dumps(address), "AVRO"))
    person = {"type": "record", "name": "Person", "namespace": "com.example",
              "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "Address"}]}
    refs = [SchemaReference("com.example.Address", "address", 1)]
    pid = client.register_schema("person-value", Schema(json.dumps(person), "AVRO", refs))
    got = client.get_schema(pid)
    assert [(r.name, r.subject, r.version) for r in got.references] == [("com.example.Address", "address", 1)]
    # the serializer resolves the reference to write a Person through a topic
    ser = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    de = AvroDeserializer(SchemaRegistryClient({"url": registry.registry_url}))
    ctx = SerializationContext("person", MessageField.VALUE)
    value = {"name": "Ann", "home": {"city": "Oslo"}}
    assert de(ser(value, ctx), ctx) == value
    # two spellings of one schema, normalised, are one version
    spelled = {"type": "record", "name": "com.example.N", "fields": [{"name": "x", "type": {"type": "int"}}]}
    plain = {"type": "record", "name": "N", "namespace": "com.example", "fields": [{"name": "x", "type": "int"}]}
    a = client.register_schema("norm", Schema(json.dumps(spelled), "AVRO"), normalize_schemas=True)
    b = client.register_schema("norm", Schema(json.dumps(plain), "AVRO"), normalize_schemas=True)
    assert a == b and client.get_versions("norm") == [1]


def test_schemas_topic_holds_confluents_records(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    client.register_schema("fmt-value", Schema(json.dumps(USER_V1), "AVRO"))
    client.set_compatibility("fmt-value", "FULL")
    c = Consumer({"bootstrap.servers": registry.bootstrap, "group.id": "fmt", "auto.offset.reset": "earliest"})
    c.subscribe(["_schemas"])
    seen: list[tuple[bytes, bytes]] = []
    try:
        for _ in range(300):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                seen.append((m.key(), m.value()))
            if len(seen) == 2:
                break
    finally:
        c.close()
    (k1, v1), (k2, v2) = seen
    assert k1 == b'{"keytype":"SCHEMA","subject":"fmt-value","version":1,"magic":1}'
    value = json.loads(v1)
    assert list(value) == ["subject", "version", "id", "schemaType", "schema", "deleted"]
    assert (value["id"], value["deleted"], json.loads(value["schema"])["name"]) == (1, False, "User")
    assert k2 == b'{"keytype":"CONFIG","subject":"fmt-value","magic":0}'
    assert json.loads(v2) == {"subject": "fmt-value", "compatibilityLevel": "FULL"}


def test_sigkill_loses_nothing_acknowledged(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    ids = [client.register_schema(f"s{i}", Schema(json.dumps({**USER_V1, "name": f"U{i}"}), "AVRO"))
           for i in range(20)]
    client.delete_subject("s3")
    registry.stop(signal.SIGKILL)
    registry.start()
    again = SchemaRegistryClient({"url": registry.registry_url})
    assert sorted(again.get_subjects()) == sorted(f"s{i}" for i in range(20) if i != 3)
    assert json.loads(again.get_schema(ids[7]).schema_str)["name"] == "U7"
    assert again.register_schema("new", Schema(json.dumps({**USER_V1, "name": "Fresh"}), "AVRO")) == 21


MONEY_PROTO = """syntax = "proto3";
package shared;
message Money { string currency = 1; int64 units = 2; }
"""
ORDER_PROTO = """syntax = "proto3";
package shop;
import "shared/money.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  shared.Money total = 2;
  map<string, int32> quantities = 3;
  oneof delivery { string address = 4; bool pickup = 5; }
  Status status = 6;
  google.protobuf.Timestamp placed = 7;
  enum Status { NEW = 0; PAID = 1; }
}
message Refund { int64 order_id = 1; }
"""


def _protobuf_classes(tmp: Path, files: dict[str, str], main: str) -> dict[str, Any]:
    """protoc (grpcio-tools, in process) compiles the files; the message classes come from a pool of their own."""
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    out = tmp / "set.pb"
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    assert protoc.main(["protoc", f"-I{tmp}", f"-I{include}", "--include_imports",
                        f"--descriptor_set_out={out}", main]) == 0
    pool = descriptor_pool.DescriptorPool()
    for fd in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(fd)
    assert timestamp_pb2.Timestamp is not None
    return {m.full_name: GetMessageClass(m) for m in pool.FindFileByName(main).message_types_by_name.values()}


def test_protobuf_round_trip_with_references_through_a_topic(registry: Any, tmp_path: Path) -> None:
    classes = _protobuf_classes(tmp_path, {"shared/money.proto": MONEY_PROTO, "shop/order.proto": ORDER_PROTO},
                                "shop/order.proto")
    Order, Refund = classes["shop.Order"], classes["shop.Refund"]
    client = SchemaRegistryClient({"url": registry.registry_url})
    topic = f"orders-pb-{uuid.uuid4().hex[:8]}"
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    orders = []
    for i in range(4):
        o = Order(id=i, status=Order.Status.PAID if i % 2 else Order.Status.NEW)
        o.total.currency, o.total.units = "EUR", 100 * i
        o.quantities["apple"] = i
        if i % 2:
            o.pickup = True
        else:
            o.address = f"street {i}"
        o.placed.seconds = 1_700_000_000 + i
        orders.append(o)
    payloads = [ser(o, ctx) for o in orders]
    assert payloads[0][0] == 0 and payloads[0][5] == 0   # magic byte, schema id, message index [0] (one 0 byte)
    # the import was registered as a reference under its file name, the Timestamp was not (a well-known file)
    latest = client.get_latest_version(f"{topic}-value")
    assert [(r.name, r.subject) for r in latest.schema.references] == [("shared/money.proto", "shared/money.proto")]
    assert latest.schema.schema_type == "PROTOBUF"
    assert latest.schema.schema_str.startswith('syntax = "proto3";\npackage shop;\n')   # stored as .proto text
    got = _produce_consume(registry.bootstrap, topic, payloads)
    de = ProtobufDeserializer(Order, {"use.deprecated.format": False},
                              schema_registry_client=SchemaRegistryClient({"url": registry.registry_url}))
    assert [de(v, ctx) for v in got] == orders
    # a second message type of the same file: index [1]
    refund_ctx = SerializationContext(f"{topic}-r", MessageField.VALUE)
    refund = ProtobufSerializer(Refund, client, {"use.deprecated.format": False})(Refund(order_id=7), refund_ctx)
    assert refund[5:7] == b"\x02\x02"   # zigzag: one index, 1
    de_refund = ProtobufDeserializer(Refund, {"use.deprecated.format": False},
                                     schema_registry_client=SchemaRegistryClient({"url": registry.registry_url}))
    assert de_refund(refund, refund_ctx) == Refund(order_id=7)


def test_protobuf_evolution_and_text_schemas(registry: Any) -> None:
    client = SchemaRegistryClient({"url": registry.registry_url})
    subject = "pb-evolve-value"
    v1 = 'syntax = "proto3";\npackage ev;\nmessage E { int32 a = 1; string b = 2; }\n'
    assert client.register_schema(subject, Schema(v1, "PROTOBUF")) == 1
    # int32 -> int64 and a new field: compatible; int32 -> string: refused with 409
    v2 = 'syntax = "proto3";\npackage ev;\nmessage E { int64 a = 1; string b = 2; repeated bytes c = 3; }\n'
    assert client.register_schema(subject, Schema(v2, "PROTOBUF")) == 2
    bad = 'syntax = "proto3";\npackage ev;\nmessage E { string a = 1; }\n'
    assert client.test_compatibility(subject, Schema(bad, "PROTOBUF")) is False
    with pytest.raises(SchemaRegistryError) as info:
        client.register_schema(subject, Schema(bad, "PROTOBUF"))
    assert info.value.http_status_code == 409 and "FIELD_SCALAR_KIND_CHANGED" in str(info.value)
    # the same schema spelled differently is one version once normalised
    spelled = 'syntax = "proto3"; package ev; message E { repeated bytes c = 3; string b = 2; int64 a = 1; }'
    assert client.register_schema(subject, Schema(spelled, "PROTOBUF"), normalize_schemas=True) == 2
    assert client.get_versions(subject) == [1, 2]
    # the serialized form of a text schema is a FileDescriptorProto the protobuf runtime reads
    raw = client.get_schema(2, fmt="serialized").schema_str
    fd = descriptor_pb2.FileDescriptorProto.FromString(__import__("base64").b64decode(raw))
    assert [f.name for f in fd.message_type[0].field] == ["a", "b", "c"]
