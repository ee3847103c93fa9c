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

require("confluent_kafka", "fastavro", "jsonschema")   # a loud skip, or a failure under CI=true
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import (  # noqa: E402
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
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
