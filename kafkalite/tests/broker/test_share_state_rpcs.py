"""The share coordinator's state RPCs on the wire (``coordinator/share/coordinator_reads.py``):
ReadShareGroupStateSummary (87) answers from what ``__share_group_state`` holds, with Kafka's errors and
CLUSTER_ACTION."""
from __future__ import annotations

import uuid

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ReadShareGroupStateSummaryRequest

S = ReadShareGroupStateSummaryRequest
SHARE = {"kafkalite.share.auto.offset.reset": "earliest", "share.coordinator.state.topic.num.partitions": "1"}


def _summary(c: RawClient, group: str, topics: dict[uuid.UUID, list[int]], version: int = 1
             ) -> dict[tuple[uuid.UUID, int], tuple[int, int, int, int, int]]:
    r = c.request(S(group_id=group, topics=[S.ReadStateSummaryData(topic_id=t, partitions=[
        S.PartitionData(partition=p, leader_epoch=0) for p in ps]) for t, ps in topics.items()]), version)
    return {(t.topic_id, p.partition): (p.error_code, p.start_offset, p.delivery_complete_count, p.leader_epoch,
                                         p.state_epoch) for t in r.results for p in t.partitions}


def test_summary_reads_the_persisted_state() -> None:
    with Broker(overrides=SHARE) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "ss", 2)
        tid = topic_id(c, "ss")
        # no __share_group_state yet: no coordinator owns the key (Kafka's runtime has no shard)
        assert _summary(c, "g", {tid: [0]})[(tid, 0)][0] == ErrorCode.NOT_COORDINATOR
        assert c.request(produce_req("ss", encode_batch([Rec(b"a"), Rec(b"b"), Rec(b"c")])), 9) \
            .responses[0].partition_responses[0].error_code == 0
        hb(c, "g", "m", 0, ["ss"])
        assert acquired(fetch(c, "g", "m", 0, tid)) == [0, 1, 2]
        # initialised at 0; acquired records are not persisted
        assert _summary(c, "g", {tid: [0]}) == {(tid, 0): (0, 0, 0, 0, 0)}
        assert acquired(fetch(c, "g", "m", 1, tid, acks=[(0, 1, [1])])) == []
        assert _summary(c, "g", {tid: [0]})[(tid, 0)][:3] == (0, 2, 0)   # 0-1 accepted: start moves to 2
        assert _summary(c, "g", {tid: [0]}, version=0)[(tid, 0)][2] == -1   # v0 has no DeliveryCompleteCount
        # no state for partition 1 or another group: Kafka's uninitialised answer
        assert _summary(c, "g", {tid: [1]}) == {(tid, 1): (0, -1, -1, 0, 0)}
        assert _summary(c, "other", {tid: [0]}) == {(tid, 0): (0, -1, -1, 0, 0)}
        # unknown partition / topic id, negative partition
        got = _summary(c, "g", {tid: [5, -1], uuid.uuid4(): [0]})
        assert got[(tid, 5)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert got[(tid, -1)][0] == ErrorCode.INVALID_REQUEST
        assert [v[0] for k, v in got.items() if k[0] != tid] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        # an empty group id, no topics or a topic without partitions: an empty answer
        assert _summary(c, "", {tid: [0]}) == {}
        assert _summary(c, "g", {}) == {}
        assert _summary(c, "g", {tid: [0], uuid.uuid4(): []}) == {}


def test_summary_needs_cluster_action() -> None:
    with Broker(overrides={**SHARE, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "super.users": "User:admin"}) as b, RawClient(b.host, b.port) as c:
        tid = uuid.uuid4()
        r = c.request(S(group_id="g", topics=[S.ReadStateSummaryData(topic_id=tid, partitions=[
            S.PartitionData(partition=0), S.PartitionData(partition=1)])]), 1)
        parts = r.results[0].partitions
        assert [(p.partition, p.error_code, p.error_message) for p in parts] == [
            (0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
            (1, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
