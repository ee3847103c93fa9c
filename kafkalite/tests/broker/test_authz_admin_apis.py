"""The authorizer on the APIs added this session (replication admin, ListConfigResources, KIP-848 groups):
each answers Kafka's authorization error without the ACL KafkaApis / ControllerApis checks, and works once
it is granted. The ACLs are written to the data directory between broker runs (as in test_authz_broker)."""
from __future__ import annotations

import time
import uuid
from pathlib import Path

from kafkalite import Broker
from kafkalite.authz.acl import AclBinding, Op, PatternType, Permission, ResourceType
from kafkalite.authz.authorizer import Authorizer
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DescribeProducersRequest,
    DescribeQuorumRequest,
    ElectLeadersRequest,
    ListConfigResourcesRequest,
    ListPartitionReassignmentsRequest,
)

STANDARD = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
ANON = "User:ANONYMOUS"
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
HB = ConsumerGroupHeartbeatRequest


def _acl(rtype: ResourceType, name: str, op: Op) -> AclBinding:
    return AclBinding(rtype, name, PatternType.LITERAL, ANON, "*", op, Permission.ALLOW)


def _loaded(send):  # type: ignore[no-untyped-def]
    """``send()``'s answer once the group coordinator has read __consumer_offsets (it loads after start)."""
    for _ in range(600):
        r = send()
        codes = [r.error_code] if hasattr(r, "error_code") else [g.error_code for g in r.groups]
        if ErrorCode.COORDINATOR_LOAD_IN_PROGRESS not in codes:
            return r
        time.sleep(0.05)
    raise AssertionError("the group coordinator did not load")


def _join(c: RawClient, group: str, member: str, names: list[str] | None = None, regex: str | None = None):
    return _loaded(lambda: c.request(HB(group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=5000,
                                        subscribed_topic_names=names, subscribed_topic_regex=regex,
                                        topic_partitions=[]), 1))


def _describe(c: RawClient, groups: list[str]):  # type: ignore[no-untyped-def]
    return _loaded(lambda: c.request(ConsumerGroupDescribeRequest(group_ids=groups, include_authorized_operations=True),
                                     1))


def _admin_answers(c: RawClient) -> dict[str, object]:
    """The error each admin API answers for one request naming topic t partition 0 (and topic x)."""
    el = c.request(ElectLeadersRequest(election_type=0, timeout_ms=1000, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic="t", partitions=[0])]), 2)
    ap = AlterPartitionReassignmentsRequest
    ar = c.request(ap(topics=[ap.ReassignableTopic(name="t", partitions=[ap.ReassignablePartition(
        partition_index=0, replicas=[1])])]), 0)
    lp = c.request(ListPartitionReassignmentsRequest(timeout_ms=1000, topics=[
        ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name="t", partition_indexes=[0])]), 0)
    ald = c.request(AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDirsRequest.AlterReplicaLogDir(
        path="/nowhere", topics=[AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic(name="t", partitions=[0])])]),
        2)
    dp = c.request(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=n, partition_indexes=[0]) for n in ("t", "x", "missing")]), 0)
    dq = c.request(DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])]), 2)
    lc = c.request(ListConfigResourcesRequest(resource_types=[]), 1)
    return {
        "elect": (el.error_code, [(p.error_code, p.error_message) for t in el.replica_election_results
                                  for p in t.partition_result]),
        "reassign": (ar.error_code, [p.error_code for t in ar.responses for p in t.partitions]),
        "list_reassign": (lp.error_code, [(t.name, [p.partition_index for p in t.partitions]) for t in lp.topics]),
        "log_dirs": [p.error_code for t in ald.results for p in t.partitions],
        "producers": {t.name: t.partitions[0].error_code for t in dp.topics},
        "quorum": (dq.error_code, len(dq.topics)),
        "config_resources": (lc.error_code, len(lc.config_resources)),
    }


def test_new_apis_need_kafkas_acls(tmp_path: Path) -> None:
    # run 1, no authorizer: topics t and x; group "h" gets a member assigned x (persisted in __consumer_offsets)
    with Broker(data_dir=tmp_path) as b, RawClient("127.0.0.1", b.port) as c:
        made = c.request(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name=n, num_partitions=1, replication_factor=1) for n in ("t", "x")]), 7)
        ids = {t.name: t.topic_id for t in made.topics}
        assert _join(c, "h", "hm", ["x"]).error_code == 0
    # run 2, an authorizer and no ACL: every API refused as Kafka refuses it
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient("127.0.0.1", b.port) as c:
        got = _admin_answers(c)
        assert got == {
            "elect": (CLUSTER_DENIED, [(CLUSTER_DENIED, "Cluster authorization failed.")]),
            "reassign": (CLUSTER_DENIED, [CLUSTER_DENIED]),
            "list_reassign": (CLUSTER_DENIED, [("t", [0])]),
            "log_dirs": [CLUSTER_DENIED],
            "producers": dict.fromkeys(("t", "x", "missing"), ErrorCode.TOPIC_AUTHORIZATION_FAILED),
            "quorum": (CLUSTER_DENIED, 0),
            "config_resources": (CLUSTER_DENIED, 0),
        }
        assert _join(c, "g", "m1", ["t"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        cd = _describe(c, ["g"])
        assert cd.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    Authorizer(tmp_path).create([
        _acl(ResourceType.CLUSTER, "kafka-cluster", Op.ALTER), _acl(ResourceType.CLUSTER, "kafka-cluster", Op.DESCRIBE),
        _acl(ResourceType.CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS), _acl(ResourceType.TOPIC, "t", Op.READ),
        _acl(ResourceType.GROUP, "g", Op.READ), _acl(ResourceType.GROUP, "r", Op.READ),
        _acl(ResourceType.GROUP, "h", Op.DESCRIBE)])
    # run 3, granted: the APIs answer as without an authorizer; topic x stays out of reach
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient("127.0.0.1", b.port) as c:
        got = _admin_answers(c)
        assert got["elect"] == (0, [(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")])
        assert got["reassign"] == (0, [0])
        assert got["list_reassign"] == (0, [])
        assert got["log_dirs"] == [ErrorCode.LOG_DIR_NOT_FOUND]
        assert got["producers"] == {"t": 0, "x": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                    "missing": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        assert got["quorum"] == (0, 1) and got["config_resources"][0] == 0
        # READ on t implies DESCRIBE; x is not describable: a name subscription to it is refused outright
        assert _join(c, "g", "m2", ["t", "x"]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        hb = _join(c, "g", "m1", ["t"])
        assert hb.error_code == 0 and [tp.topic_id for tp in hb.assignment.topic_partitions] == [ids["t"]]
        # a regex matching both resolves to t only
        rx = _join(c, "r", "m3", regex="t|x")
        assert rx.error_code == 0 and [tp.topic_id for tp in rx.assignment.topic_partitions] == [ids["t"]]
        cd = _describe(c, ["g", "h"])
        g, h = cd.groups
        assert (g.error_code, g.authorized_operations) == (0, (1 << Op.READ) | (1 << Op.DESCRIBE))  # READ implies it
        assert [m.member_id for m in g.members] == ["m1"]
        assert (h.error_code, h.error_message, h.members) == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "The group has described topic(s) that the client is not authorized to describe.", [])
    Authorizer(tmp_path).create([_acl(ResourceType.TOPIC, "x", Op.DESCRIBE)])
    with Broker(data_dir=tmp_path, overrides=STANDARD) as b, RawClient("127.0.0.1", b.port) as c:
        cd = _describe(c, ["h"])
        h = cd.groups[0]
        assert (h.error_code, [m.member_id for m in h.members]) == (0, ["hm"])
        assert h.authorized_operations == 1 << Op.DESCRIBE
    assert isinstance(ids["t"], uuid.UUID)
