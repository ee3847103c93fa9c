"""ACLs with authenticated users (SASL PLAIN): ``User:admin`` is a super user, ``User:alice`` and
``User:bob`` have no rights until the admin grants them through confluent-kafka's admin API; a grant to
alice does not reach bob, and the principal of each connection is the authenticated one."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.broker import BrokerProcess, BrokerStartError, _free_port

from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true
from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret" user_bob="bob-secret";')


class _PropsBroker(BrokerProcess):
    """Started from a server.properties naming its listener (no --listen)."""

    def __init__(self, base: Path, properties: Path) -> None:
        super().__init__(base / "data", base / "broker.log")
        self.properties = properties

    def _command(self) -> list[str]:
        if self.kind == "kafka":   # the same file is Kafka's server.properties (harness/reference.py adds the rest)
            self.extra_args = ["--config", str(self.properties)]
            return super()._command()
        cmd = super()._command()
        i = cmd.index("--listen")
        return [*cmd[:i], *cmd[i + 2:], "--config", str(self.properties)]


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("broker-acls-sasl")
    for attempt in range(3):   # a port picked here can be taken by another process before the broker binds it
        port = _free_port()
        props = base / "server.properties"
        props.write_text("\n".join([
            f"listeners=SASL_PLAINTEXT://127.0.0.1:{port}",
            "sasl.enabled.mechanisms=PLAIN",
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin",
        ]) + "\n")
        b = _PropsBroker(base, props)
        try:
            b.start()
            break
        except BrokerStartError as exc:
            b.kill()
            if attempt == 2 or "Address already in use" not in str(exc):
                raise
    try:
        yield f"127.0.0.1:{port}"
    finally:
        b.kill()


def _conf(bs: str, user: str) -> dict[str, object]:
    return {"bootstrap.servers": bs, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-secret"}


def _produce(bs: str, user: str, topic: str) -> KafkaError | None:
    p = Producer({**_conf(bs, user), "message.timeout.ms": 8000})
    got: list[KafkaError | None] = []
    p.produce(topic, b"v", on_delivery=lambda err, _m: got.append(err))
    p.flush(20)
    assert got
    return got[0]


def test_grants_reach_only_the_named_user(sasl_broker: str) -> None:
    admin = AdminClient(_conf(sasl_broker, "admin"))
    admin.create_topics([NewTopic("sasl-acl", 1, 1)])["sasl-acl"].result(30)
    for user in ("alice", "bob"):
        err = _produce(sasl_broker, user, "sasl-acl")
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, (user, err)
    acl = AclBinding(ResourceType.TOPIC, "sasl-acl", ResourcePatternType.LITERAL, "User:alice", "*",
                     AclOperation.WRITE, AclPermissionType.ALLOW)
    admin.create_acls([acl])[acl].result(30)
    # Kafka's broker applies the ACL when it replays its controller's record, a moment after CreateAcls returned;
    # DescribeAcls reads the same authorizer (kafkalite: at once)
    deadline = time.monotonic() + 30
    while not admin.describe_acls(AclBindingFilter(
            ResourceType.TOPIC, "sasl-acl", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.WRITE,
            AclPermissionType.ALLOW)).result(30):
        assert time.monotonic() < deadline, "the ACL is not in effect after 30 s"
        time.sleep(0.1)
    assert _produce(sasl_broker, "alice", "sasl-acl") is None
    err = _produce(sasl_broker, "bob", "sasl-acl")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # alice may write but not manage ACLs (no ALTER on the cluster)
    mine = AclBinding(ResourceType.TOPIC, "sasl-acl", ResourcePatternType.LITERAL, "User:bob", "*",
                      AclOperation.WRITE, AclPermissionType.ALLOW)
    alice_admin = AdminClient(_conf(sasl_broker, "alice"))
    with pytest.raises(KafkaException) as exc:
        alice_admin.create_acls([mine])[mine].result(30)
    assert exc.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
