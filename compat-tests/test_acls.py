"""ACLs with real clients: a broker with Kafka's StandardAuthorizer configuration, every connection
``User:ANONYMOUS`` (PLAINTEXT). The principal gets Kafka's authorization error from produce, fetch, group join,
commit, transactions and admin calls until the client's own admin API (confluent-kafka
``AdminClient.create_acls``, kafka-python ``KafkaAdminClient.create_acls``, Java ``Admin.createAcls``, kafkajs
``admin.createAcls``) grants it, after which the same call succeeds.

Against Apache Kafka (KAFKALITE_COMPAT_BROKER=kafka) the same --override settings become its server.properties;
the harness adds its own CONTROLLER and INTERNAL listeners with a super user of its own (harness/reference.py).

The module's broker bootstraps itself the way an operator would: started once with
``allow.everyone.if.no.acl.found=true`` so the first client may grant ``User:ANONYMOUS`` ALL on the cluster,
then restarted with it false; that ACL surviving the restart is what lets the tests manage ACLs at all.
"""
from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness.broker import BrokerProcess

from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANON = "User:ANONYMOUS"
_n = itertools.count()


def _args(**kv: str) -> list[str]:
    return [a for k, v in kv.items() for a in ("--override", f"{k.replace('_', '.')}={v}")]


def _start(base: Path, args: list[str]) -> BrokerProcess:
    b = BrokerProcess(base / "data", base / "broker.log", extra_args=args)
    b.start()
    return b


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("broker-acls")
    b = _start(base, _args(authorizer_class_name=STANDARD, allow_everyone_if_no_acl_found="true"))
    try:
        adm = AdminClient({"bootstrap.servers": b.bootstrap})
        grant(adm, ResourceType.BROKER, "kafka-cluster", AclOperation.ALL)
        b.stop()
        b.extra_args = _args(authorizer_class_name=STANDARD)
        b.start()
        yield b
    finally:
        b.kill()


def grant(adm: AdminClient, rtype: ResourceType, name: str, op: AclOperation,
          perm: AclPermissionType = AclPermissionType.ALLOW,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> None:
    binding = AclBinding(rtype, name, pattern, ANON, "*", op, perm)
    adm.create_acls([binding], request_timeout=20)[binding].result(timeout=30)
    effective(adm, rtype, name, op, perm, pattern)


def effective(adm: AdminClient, rtype: ResourceType, name: str, op: AclOperation,
              perm: AclPermissionType = AclPermissionType.ALLOW,
              pattern: ResourcePatternType = ResourcePatternType.LITERAL, present: bool = True) -> None:
    """Wait until the broker's authorizer has (or, ``present=False``, no longer has) the ACL. Kafka answers
    CreateAcls/DeleteAcls once its controller committed the change; the broker's authorizer applies it when it
    replays that metadata a moment later, and DescribeAcls reads the same authorizer. (kafkalite: at once.)"""
    flt = AclBindingFilter(rtype, name, pattern, ANON, "*", op, perm)
    deadline = time.monotonic() + 30
    while bool(adm.describe_acls(flt, request_timeout=20).result(timeout=30)) != present:
        assert time.monotonic() < deadline, f"ACL {flt} {'not yet' if present else 'still'} in effect after 30 s"
        time.sleep(0.1)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_n)}-{uuid.uuid4().hex[:6]}"


def make_topic(adm: AdminClient, name: str) -> None:
    adm.create_topics([NewTopic(name, 1, 1)], request_timeout=20)[name].result(timeout=30)


def produce_one(bs: str, topic: str, **conf: object) -> KafkaError | None:
    """Produce one record; the delivery error (None when it was written)."""
    p = Producer({"bootstrap.servers": bs, "message.timeout.ms": 8000, **conf})
    got: list[KafkaError | None] = []
    p.produce(topic, b"v", on_delivery=lambda err, _msg: got.append(err))
    p.flush(20)
    assert got, "no delivery report"
    return got[0]


def error_code(exc: BaseException) -> int:
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else -1


# -- confluent-kafka (librdkafka) --------------------------------------------------------------------------
def test_produce_denied_until_write_is_granted(acl_broker: BrokerProcess) -> None:
    bs = acl_broker.bootstrap
    adm = AdminClient({"bootstrap.servers": bs})
    topic = unique("acl-produce")
    make_topic(adm, topic)   # CREATE on the cluster (ALL), but nothing on the topic
    err = produce_one(bs, topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err
    grant(adm, ResourceType.TOPIC, topic, AclOperation.WRITE)
    assert produce_one(bs, topic) is None


def test_fetch_and_group_denied_until_read_is_granted(acl_broker: BrokerProcess) -> None:
    bs = acl_broker.bootstrap
    adm = AdminClient({"bootstrap.servers": bs})
    topic, group = unique("acl-fetch"), unique("acl-group")
    make_topic(adm, topic)
    grant(adm, ResourceType.TOPIC, topic, AclOperation.WRITE)
    assert produce_one(bs, topic) is None

    def consume_errors(conf: dict[str, object]) -> tuple[list[int], list[bytes]]:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, **conf})
        codes: list[int] = []
        values: list[bytes] = []
        try:
            c.subscribe([topic])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not values and not codes:
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    codes.append(m.error().code())
                else:
                    values.append(m.value())
                    c.commit(message=m, asynchronous=False)
        finally:
            c.close()
        return codes, values

    codes, values = consume_errors({})
    assert not values and codes == [KafkaError.GROUP_AUTHORIZATION_FAILED], codes
    grant(adm, ResourceType.GROUP, group, AclOperation.READ)
    codes, values = consume_errors({})
    assert not values and KafkaError.TOPIC_AUTHORIZATION_FAILED in codes, codes
    grant(adm, ResourceType.TOPIC, topic, AclOperation.READ)
    codes, values = consume_errors({})
    assert values == [b"v"], codes
    # the commit went through: the group's offset is 1
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=20)
        assert tp.offset == 1
    finally:
        c.close()


def test_commit_denied_without_group_read(acl_broker: BrokerProcess) -> None:
    bs = acl_broker.bootstrap
    adm = AdminClient({"bootstrap.servers": bs})
    topic, group = unique("acl-commit"), unique("acl-commit-group")
    make_topic(adm, topic)
    grant(adm, ResourceType.TOPIC, topic, AclOperation.READ)
    grant(adm, ResourceType.GROUP, group, AclOperation.DESCRIBE)   # FindCoordinator, but no READ to commit
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as exc:
            c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
        assert error_code(exc.value) == KafkaError.GROUP_AUTHORIZATION_FAILED
        grant(adm, ResourceType.GROUP, group, AclOperation.READ)
        c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        c.close()


def test_transactions_denied_until_transactional_id_write(acl_broker: BrokerProcess) -> None:
    bs = acl_broker.bootstrap
    adm = AdminClient({"bootstrap.servers": bs})
    topic, txn_id = unique("acl-txn"), unique("acl-txn-id")
    make_topic(adm, topic)
    grant(adm, ResourceType.TOPIC, topic, AclOperation.WRITE)
    p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id, "transaction.timeout.ms": 10000})
    with pytest.raises(KafkaException) as exc:
        p.init_transactions(20)
    assert error_code(exc.value) == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(adm, ResourceType.TRANSACTIONAL_ID, txn_id, AclOperation.WRITE)
    p = Producer({"bootstrap.servers": bs, "transactional.id": txn_id, "transaction.timeout.ms": 10000})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"in-txn")
    p.commit_transaction(20)


def test_admin_calls_denied_until_granted(acl_broker: BrokerProcess) -> None:
    bs = acl_broker.bootstrap
    adm = AdminClient({"bootstrap.servers": bs})
    topic = unique("acl-admin")
    make_topic(adm, topic)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    with pytest.raises(KafkaException) as exc:
        adm.describe_configs([res], request_timeout=20)[res].result(timeout=30)
    assert error_code(exc.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert topic not in adm.list_topics(timeout=20).topics   # no DESCRIBE: left out of Metadata
    grant(adm, ResourceType.TOPIC, topic, AclOperation.ALTER_CONFIGS)   # implies DESCRIBE_CONFIGS
    assert adm.describe_configs([res], request_timeout=20)[res].result(timeout=30)
    grant(adm, ResourceType.TOPIC, topic, AclOperation.DELETE)          # implies DESCRIBE
    assert topic in adm.list_topics(timeout=20).topics
    adm.delete_topics([topic], request_timeout=20)[topic].result(timeout=30)
    # a topic without any ACL can be deleted too: ALL on the cluster includes DELETE, which a KRaft controller
    # takes for every topic (ControllerApis.deleteTopics)
    other = unique("acl-admin-other")
    make_topic(adm, other)
    adm.delete_topics([other], request_timeout=20)[other].result(timeout=30)


def test_deny_beats_allow_and_prefixed_patterns(acl_broker: BrokerProcess) -> None:
    bs = acl_broker.bootstrap
    adm = AdminClient({"bootstrap.servers": bs})
    prefix = unique("acl-pre") + "."
    open_topic, closed_topic = prefix + "open", prefix + "closed"
    make_topic(adm, open_topic)
    make_topic(adm, closed_topic)
    grant(adm, ResourceType.TOPIC, prefix, AclOperation.ALL, pattern=ResourcePatternType.PREFIXED)
    grant(adm, ResourceType.TOPIC, closed_topic, AclOperation.WRITE, AclPermissionType.DENY)
    assert produce_one(bs, open_topic) is None
    err = produce_one(bs, closed_topic)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # DescribeAcls with a MATCH filter lists both ACLs that apply to the closed topic
    flt = AclBindingFilter(ResourceType.TOPIC, closed_topic, ResourcePatternType.MATCH, None, None,
                           AclOperation.ANY, AclPermissionType.ANY)
    found = adm.describe_acls(flt, request_timeout=20).result(timeout=30)
    assert {(b.name, b.resource_pattern_type, b.permission_type) for b in found} == {
        (prefix, ResourcePatternType.PREFIXED, AclPermissionType.ALLOW),
        (closed_topic, ResourcePatternType.LITERAL, AclPermissionType.DENY)}
    # deleting the DENY through a filter lets the write through
    deny = AclBindingFilter(ResourceType.TOPIC, closed_topic, ResourcePatternType.LITERAL, ANON, "*",
                            AclOperation.WRITE, AclPermissionType.DENY)
    deleted = adm.delete_acls([deny], request_timeout=20)[deny].result(timeout=30)
    assert len(deleted) == 1
    effective(adm, ResourceType.TOPIC, closed_topic, AclOperation.WRITE, AclPermissionType.DENY, present=False)
    assert produce_one(bs, closed_topic) is None


# -- kafka-python ---------------------------------------------------------------------------------------
def test_kafka_python_create_acls_then_produce(acl_broker: BrokerProcess) -> None:
    require("kafka")   # a loud skip, or a failure under CI=true
    import kafka
    from kafka.admin import ACL, ACLFilter, ACLOperation, ACLPermissionType, KafkaAdminClient, ResourcePattern
    from kafka.admin import ResourceType as KR
    from kafka.errors import TopicAuthorizationFailedError

    bs = acl_broker.bootstrap
    topic = unique("acl-kp")
    make_topic(AdminClient({"bootstrap.servers": bs}), topic)
    prod = kafka.KafkaProducer(bootstrap_servers=bs, max_block_ms=5000, enable_idempotence=False)
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            prod.send(topic, b"x").get(timeout=10)
    finally:
        prod.close(timeout=5)
    adm = KafkaAdminClient(bootstrap_servers=bs)
    try:
        acl = ACL(ANON, "*", ACLOperation.WRITE, ACLPermissionType.ALLOW, ResourcePattern(KR.TOPIC, topic))
        result = adm.create_acls([acl])
        assert not result["failed"] and len(result["succeeded"]) == 1
        effective(AdminClient({"bootstrap.servers": bs}), ResourceType.TOPIC, topic, AclOperation.WRITE)
        listed, _err = adm.describe_acls(ACLFilter(ANON, "*", ACLOperation.ANY, ACLPermissionType.ANY,
                                                  ResourcePattern(KR.TOPIC, topic)))
        assert [a.operation for a in listed] == [ACLOperation.WRITE]
    finally:
        adm.close()
    prod = kafka.KafkaProducer(bootstrap_servers=bs, max_block_ms=10000, enable_idempotence=False)
    try:
        assert prod.send(topic, b"x").get(timeout=20).offset == 0
    finally:
        prod.close(timeout=5)


# -- other brokers: super users, no authorizer ------------------------------------------------------------
@pytest.mark.parametrize("authorizer", [
    STANDARD,
    pytest.param("kafka.security.authorizer.AclAuthorizer", marks=pytest.mark.kafkalite_only(
        "Kafka 3.9's ZooKeeper AclAuthorizer, whose name kafkalite takes; Kafka 4.x has only the StandardAuthorizer")),
], ids=["standard", "acl-authorizer"])
def test_super_user_needs_no_acls(tmp_path: Path, authorizer: str) -> None:
    b = _start(tmp_path, _args(authorizer_class_name=authorizer, super_users=ANON))
    try:
        adm = AdminClient({"bootstrap.servers": b.bootstrap})
        topic = unique("acl-super")
        make_topic(adm, topic)
        grant(adm, ResourceType.TOPIC, topic, AclOperation.ALL, AclPermissionType.DENY)  # ignored for super users
        assert produce_one(b.bootstrap, topic) is None
    finally:
        b.kill()


def test_security_disabled_without_authorizer(tmp_path: Path) -> None:
    require("kafka")   # a loud skip, or a failure under CI=true
    import kafka
    from kafka.admin import ACL, ACLOperation, ACLPermissionType, KafkaAdminClient, ResourcePattern
    from kafka.admin import ResourceType as KR

    b = _start(tmp_path, [])
    try:
        adm = AdminClient({"bootstrap.servers": b.bootstrap})
        binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, ANON, "*", AclOperation.READ,
                             AclPermissionType.ALLOW)
        with pytest.raises(KafkaException) as exc:
            adm.create_acls([binding], request_timeout=20)[binding].result(timeout=30)
        assert error_code(exc.value) == KafkaError.SECURITY_DISABLED
        kadm = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            result = kadm.create_acls([ACL(ANON, "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                           ResourcePattern(KR.TOPIC, "t"))])
            assert [e.__name__ for e in result["failed"]] == ["SecurityDisabledError"]
        finally:
            kadm.close()
        assert kafka is not None
    finally:
        b.kill()


# -- Java (kafka-clients 3.9 Admin + KafkaProducer) -----------------------------------------------------------
def test_java_create_acls_then_produce(acl_broker: BrokerProcess, get_client) -> None:
    from harness.clients.base import ClientError
    from harness.records import make_records

    java = get_client("java")
    bs = acl_broker.bootstrap
    topic = unique("acl-java")
    make_topic(AdminClient({"bootstrap.servers": bs}), topic)
    records = make_records(3, partitions=1, prefix="acl-java")
    with pytest.raises(ClientError, match="TopicAuthorizationException"):
        java.produce(bs, topic, records, timeout_s=10)
    java.create_acl(bs, "TOPIC", topic, ANON, "WRITE")
    effective(AdminClient({"bootstrap.servers": bs}), ResourceType.TOPIC, topic, AclOperation.WRITE)
    assert f"TOPIC:LITERAL:{topic}:{ANON}:WRITE:ALLOW" in java.describe_acls(bs)
    assert len(java.produce(bs, topic, records, timeout_s=30)) == 3


# -- kafkajs ------------------------------------------------------------------------------------------------
def test_kafkajs_create_acls_then_produce(acl_broker: BrokerProcess, get_client) -> None:
    from harness.clients.base import ClientError
    from harness.records import make_records

    js = get_client("kafkajs")
    bs = acl_broker.bootstrap
    topic = unique("acl-kafkajs")
    make_topic(AdminClient({"bootstrap.servers": bs}), topic)
    records = make_records(2, partitions=1, prefix="acl-js", headers=False, nulls=False)
    with pytest.raises(ClientError, match="(?i)authoriz"):
        js.produce(bs, topic, records, idempotent=False, timeout_s=15)
    js.create_acl(bs, 2, topic, ANON, 4)                                  # TOPIC, WRITE, ALLOW, LITERAL
    effective(AdminClient({"bootstrap.servers": bs}), ResourceType.TOPIC, topic, AclOperation.WRITE)
    assert (2, topic, 3, ANON, 4, 3) in js.describe_acls(bs)
    js.produce(bs, topic, records, idempotent=False, timeout_s=30)
    c = Consumer({"bootstrap.servers": bs, "group.id": unique("g")})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
        assert hi - lo == 2
    finally:
        c.close()
