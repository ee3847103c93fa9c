"""ElectLeaders, partition reassignments, AlterReplicaLogDirs, DescribeProducers and DescribeQuorum on the wire,
answered as a one-node Kafka 3.9 answers them (codes and messages of its controller / ReplicaManager)."""
from __future__ import annotations

import time
from collections.abc import Callable

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_transaction_handlers import add, end, init, txn_produce
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    ApiVersionsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeQuorumRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)

Connect = Callable[[], RawClient]
NEW_KEYS = {34: (0, 2), 43: (0, 2), 45: (0, 1), 46: (0, 0), 55: (0, 2), 61: (0, 0)}


def test_advertised(raw: Connect) -> None:
    r = raw().request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    got = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert {k: got.get(k) for k in NEW_KEYS} == NEW_KEYS


def _elect(c: RawClient, parts: dict[str, list[int]] | None, version: int = 2, etype: int = 0) -> tuple:
    tp = None if parts is None else [ElectLeadersRequest.TopicPartitions(topic=t, partitions=ps)
                                      for t, ps in parts.items()]
    r = c.request(ElectLeadersRequest(election_type=etype, topic_partitions=tp, timeout_ms=1000), version)
    return r.error_code, {(t.topic, p.partition_id): (p.error_code, p.error_message)
                          for t in r.replica_election_results for p in t.partition_result}, \
        [t.topic for t in r.replica_election_results]


def test_elect_leaders(raw: Connect) -> None:
    c = raw()
    create_topic(c, "el", 2)
    not_needed = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    for version in (0, 1, 2):
        top, res, _ = _elect(c, {"el": [0, 1, 5], "nope": [0]}, version)
        assert top == 0 and res == {
            ("el", 0): not_needed, ("el", 1): not_needed,
            ("el", 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as el-5"),
            ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")}
    assert _elect(c, {"el": [0]}, etype=1)[1] == {("el", 0): not_needed}        # unclean: it has a leader
    top, res, topics = _elect(c, None)      # every partition: those not needing an election are left out
    assert top == 0 and res == {} and "el" in topics
    top, res, _ = _elect(c, {"el": [0]}, etype=7)
    assert top == ErrorCode.INVALID_REQUEST and res == {("el", 0): (ErrorCode.INVALID_REQUEST,
                                                                      "Unknown election type 7")}


def test_reassignments(raw: Connect) -> None:
    c = raw()
    create_topic(c, "ra", 1)
    P = AlterPartitionReassignmentsRequest.ReassignablePartition
    req = AlterPartitionReassignmentsRequest(topics=[
        AlterPartitionReassignmentsRequest.ReassignableTopic(name="ra", partitions=[
            P(partition_index=0, replicas=[1]), P(partition_index=0, replicas=[2]),
            P(partition_index=0, replicas=[1, 1]), P(partition_index=0, replicas=[]),
            P(partition_index=0, replicas=None), P(partition_index=3, replicas=[1])]),
        AlterPartitionReassignmentsRequest.ReassignableTopic(name="nope", partitions=[P(partition_index=0,
                                                                                         replicas=[1])])])
    r = c.request(req, 0)
    assert r.error_code == 0
    assert [(p.error_code, p.error_message) for t in r.responses for p in t.partitions] == [
        (0, None),
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 2, but no such broker is registered."),
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 more than once."),
        (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
        (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition ra:3."),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")]
    for topics in (None, [ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
            name="ra", partition_indexes=[0])]):
        lr = c.request(ListPartitionReassignmentsRequest(timeout_ms=1000, topics=topics), 0)
        assert (lr.error_code, lr.topics) == (0, [])


def test_alter_replica_log_dirs(raw: Connect) -> None:
    c = raw()
    create_topic(c, "ld", 1)
    ours = c.request(DescribeLogDirsRequest(topics=None), 4).results[0].log_dir
    D, T = AlterReplicaLogDirsRequest.AlterReplicaLogDir, AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic
    for version in (0, 1, 2):
        r = c.request(AlterReplicaLogDirsRequest(dirs=[
            D(path=ours, topics=[T(name="ld", partitions=[0, 4]), T(name="nope", partitions=[0])]),
            D(path="/not/a/log/dir", topics=[T(name="x" * 240, partitions=[0]), T(name="ld2", partitions=[0])])]),
            version)
        assert {(t.topic_name, p.partition_index): p.error_code for t in r.results for p in t.partitions} == {
            ("ld", 0): 0, ("ld", 4): ErrorCode.REPLICA_NOT_AVAILABLE, ("nope", 0): ErrorCode.REPLICA_NOT_AVAILABLE,
            ("x" * 240, 0): ErrorCode.INVALID_TOPIC_EXCEPTION, ("ld2", 0): ErrorCode.LOG_DIR_NOT_FOUND}


def _producers(c: RawClient, topic: str, partitions: list[int]) -> list:
    r = c.request(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name=topic, partition_indexes=partitions)]), 0)
    return [(p.partition_index, p.error_code, p.error_message,
             [(s.producer_id, s.producer_epoch, s.last_sequence, s.coordinator_epoch, s.current_txn_start_offset,
               s.last_timestamp > 0) for s in p.active_producers]) for p in r.topics[0].partitions]


def test_describe_producers(raw: Connect) -> None:
    c = raw()
    create_topic(c, "dp", 2)
    assert _producers(c, "dp", [0, 1, 9]) == [(0, 0, None, []), (1, 0, None, []),
                                              (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None, [])]
    assert _producers(c, "nope", [0]) == [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                           "This server does not host this topic-partition.", [])]
    pid, ep = init(c, "dp-tx")
    add(c, "dp-tx", pid, ep, {"dp": [0]})
    assert txn_produce(c, "dp-tx", "dp", pid, ep, 0, [b"a", b"b"]) == (0, 0)
    assert txn_produce(c, "dp-tx", "dp", pid, ep, 2, [b"c"]) == (0, 0 + 2)
    # open transaction: last sequence 2, no marker yet (coordinator epoch -1), started at offset 0
    assert _producers(c, "dp", [0]) == [(0, 0, None, [(pid, ep, 2, -1, 0, True)])]
    assert end(c, "dp-tx", pid, ep, commit=True) == 0
    for _ in range(200):
        got = _producers(c, "dp", [0])
        if got[0][3] and got[0][3][0][4] == -1:
            break
        time.sleep(0.02)
    assert got == [(0, 0, None, [(pid, ep, 2, 0, -1, True)])]     # the COMMIT marker: coordinator epoch 0


def test_describe_quorum(raw: Connect, broker: Broker) -> None:
    c = raw()
    Q = DescribeQuorumRequest
    req = Q(topics=[Q.TopicData(topic_name="__cluster_metadata", partitions=[Q.PartitionData(partition_index=0)])])
    for version in (0, 1, 2):
        r = c.request(req, version)
        p = r.topics[0].partitions[0]
        assert (r.error_code, r.topics[0].topic_name, p.error_code, p.leader_id, p.leader_epoch, p.high_watermark,
                [v.replica_id for v in p.current_voters], p.observers) == (0, "__cluster_metadata", 0, 1, 1, 0, [1], [])
        if version >= 1:
            assert p.current_voters[0].last_fetch_timestamp > 0
        if version >= 2:
            assert p.current_voters[0].replica_directory_id.int != 0
            assert [(n.node_id, [lst.port for lst in n.listeners]) for n in r.nodes] == [(1, [broker.port])]
    bad = c.request(Q(topics=[Q.TopicData(topic_name="t", partitions=[Q.PartitionData(partition_index=0)])]), 2)
    assert bad.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_list_config_resources(raw: Connect) -> None:
    from kafkalite_wire.messages import ListConfigResourcesRequest

    c = raw()
    create_topic(c, "lcr", 1)

    def listed(version: int, types: list[int]) -> tuple[int, list[tuple[str, int]]]:
        r = c.request(ListConfigResourcesRequest(resource_types=types), version)
        return r.error_code, [(x.resource_name, x.resource_type) for x in r.config_resources]

    code, res = listed(1, [])                 # every type v1 knows: the broker (logger, configs), the topics
    assert code == 0 and res[:2] == [("1", 8), ("1", 4)] and ("lcr", 2) in res
    code, topics = listed(1, [2])
    assert code == 0 and ("lcr", 2) in topics and {t for _n, t in topics} == {2} and len(topics) == len(res) - 2
    assert listed(1, [4, 16, 32]) == (0, [("1", 4)])       # no client-metrics subscriptions, no group configs
    assert listed(1, [3]) == (ErrorCode.UNSUPPORTED_VERSION, [])
    assert listed(0, []) == (0, [])           # v0 (ListClientMetricsResources): client metrics only
