"""WriteTxnMarkers (key 27) on the wire, as Admin.abortTransaction sends it: markers appended with the producer
state's checks, Kafka's per-partition errors, CLUSTER_ACTION (compat-tests/test_transactions_abort.py runs Kafka's
kafka-transactions tool against it; compat-tests/differential compares the answers with Kafka 4.4)."""
from __future__ import annotations

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeProducersRequest, ListOffsetsRequest, WriteTxnMarkersRequest

W = WriteTxnMarkersRequest


def _mark(c: RawClient, topics: dict[str, list[int]], *, pid: int = 7000, epoch: int = 0, commit: bool = False,
          coordinator_epoch: int = 0) -> dict[tuple[str, int], int]:
    r = c.request(W(markers=[W.WritableTxnMarker(
        producer_id=pid, producer_epoch=epoch, transaction_result=commit, coordinator_epoch=coordinator_epoch,
        topics=[W.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in topics.items()])]), 1)
    return {(t.name, p.partition_index): p.error_code for t in r.markers[0].topics for p in t.partitions}


def _producers(c: RawClient) -> list[tuple[int, int, int, int]]:
    r = c.request(DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
        name="m", partition_indexes=[0])]), 0)
    return [(s.producer_id, s.producer_epoch, s.coordinator_epoch, s.current_txn_start_offset)
            for s in r.topics[0].partitions[0].active_producers]


def _end(c: RawClient) -> int:
    r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="m", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 5)
    return int(r.topics[0].partitions[0].offset)


def test_markers_errors_and_producer_state() -> None:
    with Broker() as b, RawClient(b.host, b.port) as c:
        create_topic(c, "m", 2)
        assert _mark(c, {"m": [0, 1, 5], "nope": [0]}, epoch=3, coordinator_epoch=4) == {
            ("m", 0): 0, ("m", 1): 0, ("m", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert _producers(c) == [(7000, 3, 4, -1)]   # the marker's epochs, no open transaction
        assert _end(c) == 1   # one control batch
        assert _mark(c, {"m": [0]}, epoch=2, coordinator_epoch=4) == {("m", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
        assert _mark(c, {"m": [0]}, epoch=3, coordinator_epoch=1) == {
            ("m", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
        assert _end(c) == 1   # refused markers write nothing
        assert _mark(c, {"m": [0]}, epoch=3, coordinator_epoch=4, commit=True) == {("m", 0): 0}


def test_markers_need_cluster_action() -> None:
    with Broker(overrides={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "allow.everyone.if.no.acl.found": "true"}) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "m", 1)
        # allow.everyone.if.no.acl.found: no ACL on the cluster, so ANONYMOUS may
        assert _mark(c, {"m": [0]}) == {("m", 0): 0}
    with Broker(overrides={"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "super.users": "User:admin"}) as b, RawClient(b.host, b.port) as c:
        assert _mark(c, {"m": [0], "x": [1]}) == {("m", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                  ("x", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
