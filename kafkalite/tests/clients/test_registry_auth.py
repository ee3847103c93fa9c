"""The schema registry with HTTP Basic auth against the broker's SASL users and the broker's ACLs
(kafkalite.registry.auth): a broker with a SASL_PLAINTEXT listener (PLAIN users admin, alice), a SCRAM user made
with AlterUserScramCredentials, the StandardAuthorizer with ``super.users=User:admin``; ACLs are created with
confluent-kafka's AdminClient, and the registry is called over HTTP and through confluent-kafka's
SchemaRegistryClient and AvroSerializer with ``basic.auth.user.info``."""
from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite import Broker
from kafkalite.tests.support.tools_helpers import need_confluent

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret";')
AVRO = json.dumps({"type": "record", "name": "O", "fields": [{"name": "id", "type": "long"}]})
CT = "application/vnd.schemaregistry.v1+json"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Broker, str]]:
    need_confluent()
    b = Broker(data_dir=tmp_path_factory.mktemp("registry-auth"), overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "kafkalite.schema.registry.listen": "127.0.0.1:0",
        "kafkalite.schema.registry.authentication.method": "BASIC",
    }).start()
    try:
        assert b.schema_registry_url is not None
        yield b, b.schema_registry_url
    finally:
        b.stop()


def call(url: str, method: str, path: str, user: str | None = None, password: str = "",
         body: Any = None) -> tuple[int, Any, dict[str, str]]:
    headers = {"Content-Type": CT}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    req = urllib.request.Request(url + path, None if body is None else json.dumps(body).encode(), headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), dict(exc.headers)


def _admin(b: Broker) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                        "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"})


def _grant(b: Broker, principal: str, topic: str, op: str, prefixed: bool = False) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    binding = AclBinding(ResourceType.TOPIC, topic,
                         ResourcePatternType.PREFIXED if prefixed else ResourcePatternType.LITERAL,
                         principal, "*", getattr(AclOperation, op), AclPermissionType.ALLOW)
    admin = _admin(b)   # kept alive until the futures are done
    for f in admin.create_acls([binding]).values():
        f.result(30)


def test_credentials_are_the_brokers_sasl_users(env: tuple[Broker, str]) -> None:
    b, url = env
    status, body, headers = call(url, "GET", "/subjects")
    assert (status, body["error_code"]) == (401, 401) and headers["WWW-Authenticate"].startswith("Basic")
    assert call(url, "GET", "/subjects", "alice", "wrong")[0] == 401
    assert call(url, "GET", "/subjects", "nobody", "x")[0] == 401
    assert call(url, "GET", "/subjects", "alice", "alice-secret")[:2] == (200, [])
    # a SCRAM user made with AlterUserScramCredentials logs in with its password
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    up = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                      b"carol-secret", b"salt-of-carol")
    admin = _admin(b)
    for f in admin.alter_user_scram_credentials([up]).values():
        f.result(30)
    assert call(url, "GET", "/subjects", "carol", "carol-secret")[0] == 200
    assert call(url, "GET", "/subjects", "carol", "carol-secret")[0] == 200   # cached the second time
    assert call(url, "GET", "/subjects", "carol", "not-carols")[0] == 401


def test_subjects_follow_their_topics_acls(env: tuple[Broker, str]) -> None:
    b, url = env
    assert call(url, "POST", "/subjects/orders-value/versions", "admin", "admin-secret", {"schema": AVRO})[0] == 200
    # alice has no ACL: the subject is hidden and every operation on it refused with 40301
    assert call(url, "GET", "/subjects", "alice", "alice-secret")[1] == []
    status, body, _ = call(url, "GET", "/subjects/orders-value/versions/latest", "alice", "alice-secret")
    assert (status, body["error_code"]) == (403, 40301) and "User:alice" in body["message"]
    assert call(url, "GET", "/schemas/ids/1", "alice", "alice-secret")[0] == 403
    assert call(url, "GET", "/config", "alice", "alice-secret")[0] == 403
    # READ on topic orders: its value schema can be read, not written
    _grant(b, "User:alice", "orders", "READ")
    assert call(url, "GET", "/subjects", "alice", "alice-secret")[1] == ["orders-value"]
    assert call(url, "GET", "/subjects/orders-value/versions/latest", "alice", "alice-secret")[1]["id"] == 1
    assert call(url, "GET", "/schemas/ids/1", "alice", "alice-secret")[0] == 200
    assert call(url, "POST", "/subjects/orders-value/versions", "alice", "alice-secret",
                {"schema": AVRO.replace('"O"', '"P"')})[0] == 403
    assert call(url, "DELETE", "/subjects/orders-value", "alice", "alice-secret")[0] == 403
    # WRITE on a PREFIXED pattern: registering under any subject of those topics
    _grant(b, "User:alice", "pay", "WRITE", prefixed=True)
    assert call(url, "POST", "/subjects/payments-value/versions", "alice", "alice-secret", {"schema": AVRO})[:2] == \
        (200, {"id": 1})
    assert call(url, "PUT", "/config/payments-value", "alice", "alice-secret", {"compatibility": "NONE"})[0] == 403
    assert call(url, "PUT", "/config", "admin", "admin-secret", {"compatibility": "FULL"})[0] == 200


def test_confluent_client_with_basic_auth(env: tuple[Broker, str]) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.serialization import MessageField, SerializationContext

    b, url = env
    _grant(b, "User:alice", "clicks", "WRITE")
    _grant(b, "User:alice", "clicks", "READ")
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:alice-secret"})
    ctx = SerializationContext("clicks", MessageField.VALUE)
    data = AvroSerializer(client, AVRO)({"id": 5}, ctx)
    assert AvroDeserializer(SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:alice-secret"}))(
        data, ctx) == {"id": 5}
    stranger = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:nope"})
    with pytest.raises(SchemaRegistryError) as info:
        stranger.get_subjects()
    assert info.value.http_status_code == 401
