"""What Kafka keeps in its metadata log is one thing in a cluster: ACLs, SCRAM credentials, client quotas, feature
levels and group configs created through one broker are described and enforced at every other broker, and still are
after the whole cluster restarts on its data dir (they live in the cluster's metadata room, not in a broker's dir).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kafkalite.cluster import Cluster
from kafkalite.security.scram import salted_password
from kafkalite.tests.support import saslclient as sc
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterClientQuotasRequest,
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeConfigsRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    UpdateFeaturesRequest,
)

ADMIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
OVERRIDES = {
    # every broker's one listener speaks SASL: PLAIN for the super user, SCRAM for the users created at run time
    "listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.plaintext.plain.sasl.jaas.config": ADMIN_JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "offsets.topic.num.partitions": "3",
    "quota.window.num": "2",
}
TOPIC, GROUP_RESOURCE = 2, 32
LITERAL, READ, DESCRIBE, ALLOW = 3, 3, 8, 3


def _conn(cluster: Cluster, node: int, user: str = "admin", password: str = "admin-secret") -> RawClient:
    host, port = cluster.addresses()[node]
    c = RawClient(host, port, timeout=15)
    r = sc.login_plain(c, user, password) if user == "admin" else sc.login_scram(c, "SCRAM-SHA-256", user, password)
    assert r.error_code == 0, (node, user, r)
    return c


def _create_topics(c: RawClient, *names: str, partitions: int = 1) -> list[tuple[str, int]]:
    C = CreateTopicsRequest
    r = c.request(C(topics=[C.CreatableTopic(name=n, num_partitions=partitions, replication_factor=3) for n in names],
                    timeout_ms=15000), 7)
    return [(t.name, t.error_code) for t in r.topics]


def _topic_errors(c: RawClient, *names: str) -> dict[str, int]:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                          allow_auto_topic_creation=False)
    return {t.name: t.error_code for t in c.request(req, 9).topics}


def _acls(c: RawClient) -> set[tuple[str, str, int]]:
    r = c.request(DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                      principal_filter=None, host_filter=None, operation=1, permission_type=1), 3)
    assert r.error_code == 0, r
    return {(res.resource_name, a.principal, a.operation) for res in r.resources for a in res.acls}


def _scram_users(c: RawClient) -> dict[str, list[tuple[int, int]]]:
    r = c.request(DescribeUserScramCredentialsRequest(users=None), 0)
    return {u.user: [(i.mechanism, i.iterations) for i in u.credential_infos] for u in r.results}


def _quotas(c: RawClient) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    D = DescribeClientQuotasRequest
    r = c.request(D(components=[D.ComponentData(entity_type="client-id", match_type=2, match=None)], strict=False), 1)
    assert r.error_code == 0, r
    return {tuple((e.entity_type, e.entity_name) for e in x.entity): {v.key: v.value for v in x.values}
            for x in r.entries}


def _features(c: RawClient) -> tuple[int, dict[str, int]]:
    r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    return r.finalized_features_epoch, {f.name: f.max_version_level for f in r.finalized_features}


def _group_config(c: RawClient, group: str) -> dict[str, tuple[str | None, int]]:
    D = DescribeConfigsRequest
    r = c.request(D(resources=[D.DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=group,
                                                         configuration_keys=["consumer.session.timeout.ms"])]), 4)
    res = r.results[0]
    assert res.error_code == 0, res
    return {e.name: (e.value, e.config_source) for e in res.configs}


def _set_everything(c: RawClient) -> None:
    """Through one broker: a topic alice may read, one she may not, her SCRAM user, a client quota, a feature
    level and a group config."""
    assert _create_topics(c, "open", "closed") == [("open", 0), ("closed", 0)]
    A = CreateAclsRequest.AclCreation
    r = c.request(CreateAclsRequest(creations=[
        A(resource_type=TOPIC, resource_name="open", resource_pattern_type=LITERAL, principal="User:alice",
          host="*", operation=op, permission_type=ALLOW) for op in (READ, DESCRIBE)]), 3)
    assert [x.error_code for x in r.results] == [0, 0]
    U = AlterUserScramCredentialsRequest
    up = U.ScramCredentialUpsertion(name="alice", mechanism=1, iterations=4096, salt=b"salt-alice",
                                    salted_password=salted_password("SCRAM-SHA-256", "alice-pw", b"salt-alice", 4096))
    assert c.request(U(deletions=[], upsertions=[up]), 0).results[0].error_code == 0
    Q = AlterClientQuotasRequest
    r = c.request(Q(entries=[Q.EntryData(entity=[Q.EntityData(entity_type="client-id", entity_name="raw")],
                                         ops=[Q.OpData(key="controller_mutation_rate", value=1.0, remove=False)])],
                    validate_only=False), 1)
    assert r.entries[0].error_code == 0
    F = UpdateFeaturesRequest
    r = c.request(F(timeout_ms=5000, feature_updates=[F.FeatureUpdateKey(
        feature="share.version", max_version_level=0, upgrade_type=2)]), 1)
    assert (r.error_code, [x.error_code for x in r.results]) == (0, [0])
    IA = IncrementalAlterConfigsRequest
    r = c.request(IA(resources=[IA.AlterConfigsResource(resource_type=GROUP_RESOURCE, resource_name="g1", configs=[
        IA.AlterableConfig(name="consumer.session.timeout.ms", config_operation=0, value="50000")])]), 1)
    assert r.responses[0].error_code == 0, r.responses[0]


def _wait(cond: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _check_everywhere(cluster: Cluster, mutations_left: bool) -> None:
    """Every broker describes the same five things and enforces them."""
    for node in cluster.node_ids():
        with _conn(cluster, node) as admin:
            assert _acls(admin) == {("open", "User:alice", READ), ("open", "User:alice", DESCRIBE)}, node
            assert _scram_users(admin) == {"alice": [(1, 4096)]}, node
            assert _quotas(admin) == {(("client-id", "raw"),): {"controller_mutation_rate": 1.0}}, node
            _epoch, levels = _features(admin)
            assert "share.version" not in levels and levels["metadata.version"] == 33, (node, levels)
            assert _group_config(admin, "g1")["consumer.session.timeout.ms"] == ("50000", 8), node
        # the SCRAM user logs in at every broker, and the ACLs decide what she sees there
        with _conn(cluster, node, "alice", "alice-pw") as alice:
            _wait(lambda a=alice: _topic_errors(a, "open", "closed") == {
                "open": 0, "closed": ErrorCode.TOPIC_AUTHORIZATION_FAILED}, f"alice's view at broker {node}")
    if mutations_left:
        # the quota is enforced at a broker other than the one that set it: 2 topics of 3 partitions at 1/s
        # with 2 one-second windows overdraw the bucket with the first, the second is refused
        with _conn(cluster, cluster.node_ids()[-1]) as admin:
            got = _create_topics(admin, "q1", "q2", partitions=3)
            assert got == [("q1", 0), ("q2", ErrorCode.THROTTLING_QUOTA_EXCEEDED)], got


def test_acls_scram_quotas_features_and_group_configs_are_one_for_the_cluster(tmp_path: Path) -> None:
    with Cluster(brokers=3, data_dir=tmp_path, overrides=OVERRIDES) as cluster:
        first = cluster.node_ids()[0]
        with _conn(cluster, first) as admin:
            _set_everything(admin)
        _check_everywhere(cluster, mutations_left=True)
    with Cluster(brokers=3, data_dir=tmp_path, overrides=OVERRIDES) as cluster:   # the same data dir again
        _check_everywhere(cluster, mutations_left=False)
