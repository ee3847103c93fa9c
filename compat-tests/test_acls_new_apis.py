"""ACLs on this session's new APIs with confluent-kafka (authenticated users over SASL PLAIN, ``User:admin`` a
super user granting through the admin API): a KIP-848 consumer (``group.protocol=consumer``) without READ on
its group (DESCRIBE only) gets GROUP_AUTHORIZATION_FAILED from ConsumerGroupHeartbeat and reads once READ is
granted; ElectLeaders from the AdminClient is
CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster and reaches the controller logic with it; the Java
Admin (3.9.1) sees the replication admin APIs refused or served per ACL; a ShareConsumer needs READ on its
group. Every ACL is granted through the admin API by the super user, so the same tests run against Apache Kafka
(KAFKALITE_COMPAT_BROKER=kafka: the listener file becomes Kafka's server.properties, harness/reference.py)."""
from __future__ import annotations

import time
from collections.abc import Callable

from test_acls_sasl import _conf, sasl_broker  # noqa: F401 -- the module's broker fixture

from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true
import confluent_kafka as ck  # noqa: E402
from confluent_kafka import (  # noqa: E402
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
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


def _allow(admin: AdminClient, rtype: ResourceType, name: str, op: AclOperation, user: str = "alice") -> None:
    acl = AclBinding(rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW)
    admin.create_acls([acl])[acl].result(30)
    # Kafka's broker applies it when it replays its controller's record; DescribeAcls reads the same authorizer
    flt = AclBindingFilter(rtype, name, ResourcePatternType.LITERAL, f"User:{user}", "*", op, AclPermissionType.ALLOW)
    deadline = time.monotonic() + 30
    while not admin.describe_acls(flt).result(30):
        assert time.monotonic() < deadline, f"{acl} not in effect after 30 s"
        time.sleep(0.1)


def _members(admin: AdminClient, group: str) -> int:
    """How many members the group has, as the admin sees it (0 for a group that does not exist)."""
    try:
        return len(admin.describe_consumer_groups([group])[group].result(30).members)
    except KafkaException:
        return 0


def _consume_one(bs: str, topic: str, group: str, deadline_s: float,
                 on_denied: Callable[[], object] = lambda: None) -> tuple[bytes | None, set[int]]:
    """The first record a KIP-848 consumer as alice reads (None by the deadline) and the errors it saw;
    ``on_denied`` runs while the consumer is still open when it is refused."""
    c = Consumer({**_conf(bs, "alice"), "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest"})
    errors: set[int] = set()
    try:
        c.subscribe([topic])
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                err = m.error()
                # librdkafka 2.16 makes a ConsumerGroupHeartbeat GROUP_AUTHORIZATION_FAILED a fatal error
                # ("ConsumerGroupHeartbeat fatal error: Broker: Group authorization failed" in its log)
                denied = err.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError._FATAL)
                errors.add(KafkaError.GROUP_AUTHORIZATION_FAILED if denied else err.code())
                if denied:
                    on_denied()
                    break
                continue
            return m.value(), errors
        return None, errors
    finally:
        c.close()


def test_kip848_consumer_needs_group_read(sasl_broker: str) -> None:  # noqa: F811
    admin = AdminClient(_conf(sasl_broker, "admin"))
    admin.create_topics([NewTopic("acl848", 1, 1)])["acl848"].result(30)
    p = Producer(_conf(sasl_broker, "admin"))
    p.produce("acl848", b"hello")
    assert p.flush(20) == 0
    _allow(admin, ResourceType.TOPIC, "acl848", AclOperation.READ)
    # DESCRIBE on the group passes FindCoordinator and OffsetFetch; the heartbeat needs READ
    _allow(admin, ResourceType.GROUP, "g848", AclOperation.DESCRIBE)
    seen: list[int] = []
    got, errors = _consume_one(sasl_broker, "acl848", "g848", 30, lambda: seen.append(_members(admin, "g848")))
    assert got is None and KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    assert seen == [0]          # refused at the heartbeat: never a member
    _allow(admin, ResourceType.GROUP, "g848", AclOperation.READ)
    got, errors = _consume_one(sasl_broker, "acl848", "g848", 60)
    assert got == b"hello", errors


def test_elect_leaders_needs_cluster_alter(sasl_broker: str) -> None:  # noqa: F811
    admin = AdminClient(_conf(sasl_broker, "admin"))
    admin.create_topics([NewTopic("acl-elect", 1, 1)])["acl-elect"].result(30)
    alice = AdminClient(_conf(sasl_broker, "alice"))

    def elect() -> int:
        try:
            result = alice.elect_leaders(ElectionType.PREFERRED, [TopicPartition("acl-elect", 0)]).result(30)
        except KafkaException as exc:
            return exc.args[0].code()
        return result[TopicPartition("acl-elect", 0)].code()

    assert elect() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    _allow(admin, ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER)
    assert elect() == KafkaError.ELECTION_NOT_NEEDED


def _java_sasl(user: str) -> dict[str, str]:
    """The Java client's settings for ``user`` on the module's SASL PLAIN listener."""
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                f'username="{user}" password="{user}-secret";'}


def test_replication_admin_apis_java(sasl_broker: str, get_client) -> None:  # noqa: F811
    """Java Admin 3.9.1 as User:bob, granted DESCRIBE on the cluster and READ on topic ``repl-r`` (DESCRIBE only on
    ``repl-hidden``) by the admin through the admin API: listing reassignments and the quorum work, electing
    leaders and reading the producers of an unreadable topic are refused with Kafka's exceptions."""
    from harness.topics import create_topic

    j = get_client("java")
    bs = sasl_broker
    admin = AdminClient(_conf(bs, "admin"))
    for t in ("repl-r", "repl-hidden"):
        create_topic(bs, t, 1, client_conf=_conf(bs, "admin"))
    _allow(admin, ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE, user="bob")
    _allow(admin, ResourceType.TOPIC, "repl-r", AclOperation.READ, user="bob")
    _allow(admin, ResourceType.TOPIC, "repl-hidden", AclOperation.DESCRIBE, user="bob")   # not READ
    bob = _java_sasl("bob")
    assert j.admin(bs, "list_reassignments", partitions=None, config=bob) == {"reassignments": {}, "ok": True}
    assert j.admin(bs, "describe_quorum", config=bob)["leader_id"] == 1
    r = j.admin(bs, "elect_leaders", partitions=[["repl-r", 0]], config=bob)
    assert "ClusterAuthorizationException" in str(r), r
    assert j.admin(bs, "describe_producers", topic="repl-r", partition=0, config=bob)["producers"] == []
    r = j.admin(bs, "describe_producers", topic="repl-hidden", partition=0, config=bob)
    assert r["error"].startswith("TopicAuthorizationException"), r


def test_share_consumer_needs_group_read(sasl_broker: str) -> None:  # noqa: F811
    """confluent-kafka's ShareConsumer (KIP-932) as User:alice: with only DESCRIBE on its group (FindCoordinator
    passes) ShareGroupHeartbeat refuses it (a fatal GROUP_AUTHORIZATION_FAILED in librdkafka); a group with
    READ reads the records. Both groups read from the beginning: share.auto.offset.reset=earliest, a group config
    the admin sets with IncrementalAlterConfigs."""
    from harness.topics import create_topic
    from test_share_groups import set_group_config

    bs = sasl_broker
    admin_conf = _conf(bs, "admin")
    create_topic(bs, "sq", 1, client_conf=admin_conf)
    p = Producer(admin_conf)
    for i in range(3):
        p.produce("sq", b"q%d" % i)
    assert p.flush(20) == 0
    admin = AdminClient(admin_conf)
    _allow(admin, ResourceType.TOPIC, "sq", AclOperation.READ)
    _allow(admin, ResourceType.GROUP, "share-denied", AclOperation.DESCRIBE)
    _allow(admin, ResourceType.GROUP, "share-ok", AclOperation.READ)
    for group in ("share-denied", "share-ok"):
        set_group_config(bs, group, "share.auto.offset.reset", "earliest", client_conf=admin_conf)

    def read(group: str, deadline_s: float) -> tuple[list[bytes], set[int]]:
        c = ck.ShareConsumer({**_conf(bs, "alice"), "group.id": group})
        got: list[bytes] = []
        errors: set[int] = set()
        try:
            c.subscribe(["sq"])
            end = time.monotonic() + deadline_s
            while len(got) < 3 and time.monotonic() < end:
                try:
                    batch = c.poll(0.5)
                except KafkaException as exc:   # librdkafka: a fatal error naming the refusal
                    errors.add(exc.args[0].code())
                    break
                for m in batch:
                    if m.error():
                        errors.add(m.error().code())
                    else:
                        got.append(m.value())
        finally:
            c.close()
        return got, errors

    got, errors = read("share-denied", 30)
    assert got == [] and errors == {KafkaError.GROUP_AUTHORIZATION_FAILED}, (got, errors)
    got, errors = read("share-ok", 60)
    assert sorted(got) == [b"q0", b"q1", b"q2"], errors
