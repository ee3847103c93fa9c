"""The authorizer through the wire: what a principal without rights sees (Metadata hiding, authorized
operations, Kafka's error per API), with ACLs written to the data directory before the broker starts."""
from __future__ import annotations

from pathlib import Path

from kafkalite import Broker
from kafkalite.authz.acl import AclBinding, Op, PatternType, Permission, ResourceType
from kafkalite.authz.authorizer import Authorizer
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeGroupsRequest,
    InitProducerIdRequest,
    MetadataRequest,
)

STANDARD = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANON = "User:ANONYMOUS"
M = MetadataRequest


def _md(c: RawClient, names: list[str] | None, auto: bool = False):
    topics = None if names is None else [M.MetadataRequestTopic(name=n) for n in names]
    return c.request(M(topics=topics, allow_auto_topic_creation=auto, include_cluster_authorized_operations=True,
                       include_topic_authorized_operations=True), 9)


def test_what_a_principal_without_rights_sees(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, overrides={**STANDARD, "super.users": ANON}) as b, \
            RawClient("127.0.0.1", b.port) as c:
        assert {t.name for t in _md(c, ["r", "hidden"], auto=True).topics} == {"r", "hidden"}
    Authorizer(tmp_path).create([
        AclBinding(ResourceType.TOPIC, "r", PatternType.LITERAL, ANON, "*", Op.READ, Permission.ALLOW),
        AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ANON, "*", Op.DESCRIBE,
                   Permission.ALLOW),
        AclBinding(ResourceType.GROUP, "g", PatternType.LITERAL, ANON, "*", Op.DESCRIBE, Permission.ALLOW),
    ])
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient("127.0.0.1", b.port) as c:
        md = _md(c, None)
        assert [t.name for t in md.topics] == ["r"]                      # "hidden" left out
        assert md.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
        assert md.cluster_authorized_operations == 1 << Op.DESCRIBE
        named = {t.name: t.error_code for t in _md(c, ["hidden", "brand-new"], auto=True).topics}
        assert named == {"hidden": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         "brand-new": ErrorCode.TOPIC_AUTHORIZATION_FAILED}   # no CREATE: not auto-created
        assert "brand-new" not in {t.name for t in _md(c, None).topics}
        dc = c.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
        assert dc.cluster_authorized_operations == 1 << Op.DESCRIBE
        dg = c.request(DescribeGroupsRequest(groups=["g", "other"], include_authorized_operations=True), 5)
        assert [(g.group_id, g.error_code) for g in dg.groups] == [
            ("g", 0), ("other", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
        assert dg.groups[0].authorized_operations == 1 << Op.DESCRIBE
        ipi = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
        assert ipi.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED   # no IDEMPOTENT_WRITE, no topic WRITE
        ca = c.request(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
            resource_type=2, resource_name="r", resource_pattern_type=3, principal=ANON, host="*", operation=4,
            permission_type=3)]), 3)
        assert ca.results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED   # no ALTER on the cluster


def test_delete_on_the_cluster_deletes_any_topic(tmp_path: Path) -> None:
    """DeleteTopics: DELETE on the cluster allows every topic, as KRaft Kafka's controller does
    (ControllerApis.deleteTopics; Kafka 4.4 answered so in compat-tests/test_acls.py); without it, DELETE on the
    topic is needed."""
    Authorizer(tmp_path).create([
        AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ANON, "*", Op.CREATE,
                   Permission.ALLOW)])
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient("127.0.0.1", b.port) as c:
        for t in ("d1", "d2"):
            r = c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name=t, num_partitions=1, replication_factor=1)], timeout_ms=5000), 5)
            assert r.topics[0].error_code == 0
        r = c.request(DeleteTopicsRequest(topic_names=["d1"], timeout_ms=5000), 5)
        assert r.responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    Authorizer(tmp_path).create([
        AclBinding(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL, ANON, "*", Op.DELETE,
                   Permission.ALLOW)])
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient("127.0.0.1", b.port) as c:
        r = c.request(DeleteTopicsRequest(topic_names=["d1", "d2"], timeout_ms=5000), 5)
        assert [(x.name, x.error_code) for x in r.responses] == [("d1", 0), ("d2", 0)]
