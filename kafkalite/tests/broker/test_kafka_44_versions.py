"""The request versions Kafka 4.4 advertises beyond 3.9's, served with their semantics: Produce v13 and OffsetCommit /
OffsetFetch v10 name topics by id (UNKNOWN_TOPIC_ID for an id no topic has), Fetch v18, ListOffsets v10-11 (the
timestamps each version knows, UNSUPPORTED_VERSION for the others, INVALID_REQUEST for a partition named twice),
Metadata v13's top-level error, DescribeGroups v6's GROUP_ID_NOT_FOUND, ApiVersions v5's cluster check
(REBOOTSTRAP_REQUIRED), ListTransactions v2's id pattern, DescribeLogDirs v5, DescribeCluster v2, DeleteGroups v3,
AlterPartitionReassignments v1."""
from __future__ import annotations

import uuid
from collections.abc import Callable

from kafkalite.tests.broker.test_protocol import fetch_req, metadata, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterPartitionReassignmentsRequest,
    ApiVersionsRequest,
    DeleteGroupsRequest,
    DescribeClusterRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

Connect = Callable[[], RawClient]
NO_SUCH_ID = uuid.UUID(int=0x5EED)


def _topic(c: RawClient, name: str) -> uuid.UUID:
    md = metadata(c, name)
    t = md.topics[0]  # type: ignore[attr-defined]
    assert t.error_code == 0
    return t.topic_id  # type: ignore[no-any-return]


def test_produce_v13_and_fetch_v18_by_topic_id(raw: Connect) -> None:
    c = raw()
    tid = _topic(c, "v13")
    req = produce_req("", encode_batch([b"a", b"b"]))
    req.topic_data[0].topic_id = tid
    r = c.request(req, 13).responses[0]
    assert (r.topic_id, r.partition_responses[0].error_code, r.partition_responses[0].base_offset) == (tid, 0, 0)
    req.topic_data[0].topic_id = NO_SUCH_ID
    r = c.request(req, 13).responses[0]
    assert (r.topic_id, r.partition_responses[0].error_code) == (NO_SUCH_ID, ErrorCode.UNKNOWN_TOPIC_ID)
    assert c.request(produce_req("v13", encode_batch([b"c"])), 12).responses[0].partition_responses[0].base_offset == 2
    part = c.request(fetch_req("", 0, topic_id=tid), 18).responses[0].partitions[0]
    assert (part.error_code, part.high_watermark) == (0, 3) and len(part.records) > 0


def _list_offsets(c: RawClient, version: int, *timestamps: int, name: str = "lo11") -> list[tuple[int, int]]:
    L = ListOffsetsRequest
    r = c.request(L(replica_id=-1, topics=[L.ListOffsetsTopic(name=name, partitions=[
        L.ListOffsetsPartition(partition_index=0, timestamp=ts) for ts in timestamps])]), version)
    return [(p.error_code, p.offset) for p in r.topics[0].partitions]


def test_list_offsets_v10_v11_and_the_timestamps_each_version_knows(raw: Connect) -> None:
    c = raw()
    _topic(c, "lo11")
    c.request(produce_req("lo11", encode_batch([b"x"])), 9)
    assert _list_offsets(c, 11, -1) == [(0, 1)] and _list_offsets(c, 10, -2) == [(0, 0)]
    assert _list_offsets(c, 11, -6) == [(0, -1)]                    # EARLIEST_PENDING_UPLOAD: nothing tiered
    assert _list_offsets(c, 10, -6) == [(ErrorCode.UNSUPPORTED_VERSION, -1)]
    assert _list_offsets(c, 11, -7) == [(ErrorCode.UNSUPPORTED_VERSION, -1)]
    assert _list_offsets(c, 6, -3) == [(ErrorCode.UNSUPPORTED_VERSION, -1)]   # MAX_TIMESTAMP is v7+
    assert _list_offsets(c, 11, -1, -2) == [(ErrorCode.INVALID_REQUEST, -1)] * 2   # one partition twice


def test_metadata_v13_top_level_error_is_none(raw: Connect) -> None:
    assert metadata(raw(), "md13", version=13).error_code == 0  # type: ignore[attr-defined]


def test_offset_commit_and_fetch_v10_by_topic_id(raw: Connect) -> None:
    c = raw()
    tid = _topic(c, "oc10")
    C, F = OffsetCommitRequest, OffsetFetchRequest
    commit = C(group_id="g10", generation_id_or_member_epoch=-1, member_id="", topics=[
        C.OffsetCommitRequestTopic(topic_id=t, partitions=[C.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=7, committed_metadata="m")]) for t in (tid, NO_SUCH_ID)])
    r = c.request(commit, 10)
    assert [(t.topic_id, t.partitions[0].error_code) for t in r.topics] == [
        (tid, 0), (NO_SUCH_ID, ErrorCode.UNKNOWN_TOPIC_ID)]
    fetch = F(groups=[F.OffsetFetchRequestGroup(group_id="g10", topics=[
        F.OffsetFetchRequestTopics(topic_id=t, partition_indexes=[0]) for t in (tid, NO_SUCH_ID)])])
    g = c.request(fetch, 10).groups[0]
    got = {t.topic_id: (t.partitions[0].error_code, t.partitions[0].committed_offset) for t in g.topics}
    assert got == {tid: (0, 7), NO_SUCH_ID: (ErrorCode.UNKNOWN_TOPIC_ID, -1)}
    every = c.request(F(groups=[F.OffsetFetchRequestGroup(group_id="g10", topics=None)]), 10).groups[0]
    assert [(t.topic_id, t.partitions[0].committed_offset) for t in every.topics] == [(tid, 7)]


def test_describe_groups_v6_and_delete_groups_v3(raw: Connect) -> None:
    c = raw()
    v6 = c.request(DescribeGroupsRequest(groups=["nope"]), 6).groups[0]
    assert (v6.error_code, v6.error_message, v6.group_state) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.", "Dead")
    v5 = c.request(DescribeGroupsRequest(groups=["nope"]), 5).groups[0]
    assert (v5.error_code, v5.group_state) == (0, "Dead")
    d = c.request(DeleteGroupsRequest(groups_names=["nope"]), 3).results[0]
    assert d.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_api_versions_v5_checks_the_cluster_the_client_means(raw: Connect) -> None:
    c = raw()
    ours = c.request(DescribeClusterRequest(), 2)

    def av(cluster: str | None, node: int) -> int:
        return int(c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1",
                                                cluster_id=cluster, node_id=node), 5).error_code)

    assert av(None, -1) == 0 and av(ours.cluster_id, ours.brokers[0].broker_id) == 0
    assert av("someone-else", ours.brokers[0].broker_id) == ErrorCode.REBOOTSTRAP_REQUIRED
    assert av(ours.cluster_id, 99) == ErrorCode.REBOOTSTRAP_REQUIRED
    assert av(None, 1) == ErrorCode.INVALID_REQUEST and av(ours.cluster_id, -1) == ErrorCode.INVALID_REQUEST
    assert [b.is_fenced for b in ours.brokers] == [False]


def test_list_transactions_v2_pattern(raw: Connect) -> None:
    c = raw()
    r = c.request(ListTransactionsRequest(state_filters=[], producer_id_filters=[], transactional_id_pattern="a.*"), 2)
    assert (r.error_code, r.transaction_states) == (0, [])
    r = c.request(ListTransactionsRequest(state_filters=[], producer_id_filters=[], transactional_id_pattern="(a"), 2)
    assert r.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION


def test_describe_log_dirs_v5_and_reassignments_v1(raw: Connect) -> None:
    c = raw()
    r = c.request(DescribeLogDirsRequest(topics=None), 5)
    assert (r.error_code, r.results[0].is_cordoned) == (0, False)
    A = AlterPartitionReassignmentsRequest
    r = c.request(A(timeout_ms=1000, allow_replication_factor_change=False, topics=[]), 1)
    assert (r.error_code, r.allow_replication_factor_change) == (0, False)
