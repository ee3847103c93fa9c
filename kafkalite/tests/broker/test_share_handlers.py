"""Share group APIs over the wire (RawClient against an embedded broker): ShareGroupHeartbeat membership and
assignment, ShareFetch sessions and their errors, acknowledgements, ShareGroupDescribe, the share offset admin
APIs, and share groups in ListGroups/DeleteGroups."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterShareGroupOffsetsRequest,
    DeleteGroupsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ListGroupsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)

FR = ShareFetchRequest
AR = ShareAcknowledgeRequest


@pytest.fixture(scope="module")
def raw() -> Iterator[RawClient]:
    with Broker(overrides={"kafkalite.share.auto.offset.reset": "earliest",
                           "share.coordinator.state.topic.num.partitions": "2"}) as b, \
            RawClient(b.host, b.port) as c:
        yield c


def topic_id(c: RawClient, name: str) -> uuid.UUID:
    r = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]), 12)
    return r.topics[0].topic_id


def hb(c: RawClient, group: str, member: str, epoch: int, topics: list[str] | None = None):  # type: ignore[no-untyped-def]
    return c.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                                subscribed_topic_names=topics), 1)


def fetch(c: RawClient, group: str, member: str, epoch: int, tid: uuid.UUID, acks=None, max_wait: int = 0):  # type: ignore[no-untyped-def]
    batches = [FR.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=t) for a, b, t in acks or []]
    return c.request(FR(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait,
                        min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100, topics=[
                            FR.FetchTopic(topic_id=tid, partitions=[FR.FetchPartition(
                                partition_index=0, acknowledgement_batches=batches)])]), 1)


def acquired(r) -> list[int]:  # type: ignore[no-untyped-def]
    return [o for t in r.responses for p in t.partitions for a in p.acquired_records
            for o in range(a.first_offset, a.last_offset + 1)]


def test_heartbeat_membership_and_assignment(raw: RawClient) -> None:
    create_topic(raw, "hb", 1)
    tid = topic_id(raw, "hb")
    assert hb(raw, "sg1", "", 0, ["hb"]).error_code == ErrorCode.INVALID_REQUEST
    assert hb(raw, "sg1", "m1", 0, None).error_code == ErrorCode.INVALID_REQUEST
    assert hb(raw, "sg1", "nobody", 3).error_code == ErrorCode.GROUP_ID_NOT_FOUND   # no such group yet
    members = {}
    for m in ("m1", "m2", "m3", "m4"):
        r = hb(raw, "sg1", m, 0, ["hb"])
        assert r.error_code == 0 and r.member_id == m and r.heartbeat_interval_ms > 0
        assert [(tp.topic_id, list(tp.partitions)) for tp in r.assignment.topic_partitions] == [(tid, [0])]
        members[m] = r.member_epoch
    assert hb(raw, "sg1", "nobody", 3).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    # m1 is behind: its next heartbeat moves it to the group epoch, keeping the shared partition
    r = hb(raw, "sg1", "m1", members["m1"])
    assert r.error_code == 0 and r.member_epoch == members["m4"]
    assert hb(raw, "sg1", "m1", r.member_epoch).assignment is None        # nothing new: null
    assert hb(raw, "sg1", "m2", 99).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    d = raw.request(ShareGroupDescribeRequest(group_ids=["sg1", "nope"]), 1)
    g, missing = d.groups
    assert g.error_code == 0 and g.group_state == "Stable" and g.assignor_name == "simple"
    assert sorted(m.member_id for m in g.members) == ["m1", "m2", "m3", "m4"]
    assert g.members[0].assignment.topic_partitions[0].topic_name == "hb"
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    listed = raw.request(ListGroupsRequest(types_filter=["share"]), 5).groups
    assert [(x.group_id, x.group_type, x.protocol_type, x.group_state) for x in listed] == \
        [("sg1", "share", "share", "Stable")]
    assert all(x.group_type != "share" for x in raw.request(ListGroupsRequest(types_filter=["classic"]), 5).groups)
    assert raw.request(DeleteGroupsRequest(groups_names=["sg1"]), 2).results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    for m in members:
        assert hb(raw, "sg1", m, -1).member_epoch == -1
    assert raw.request(ListGroupsRequest(types_filter=["share"], states_filter=["empty"]), 5).groups[0].group_id == "sg1"
    assert raw.request(DeleteGroupsRequest(groups_names=["sg1"]), 2).results[0].error_code == 0
    assert raw.request(ListGroupsRequest(types_filter=["share"]), 5).groups == []


def test_share_fetch_sessions_acks_and_errors(raw: RawClient) -> None:
    create_topic(raw, "sf", 1)
    tid = topic_id(raw, "sf")
    batch = encode_batch([Rec(b"a"), Rec(b"b"), Rec(b"c")])
    assert raw.request(produce_req("sf", batch), 9).responses[0].partition_responses[0].error_code == 0
    hb(raw, "sg2", "m", 0, ["sf"])
    # no session yet / acknowledgements in an opening request
    assert fetch(raw, "sg2", "m", 1, tid).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert fetch(raw, "sg2", "m", 0, tid, acks=[(0, 0, [1])]).error_code == ErrorCode.INVALID_REQUEST
    r = fetch(raw, "sg2", "m", 0, tid)
    assert r.error_code == 0 and acquired(r) == [0, 1, 2] and r.acquisition_lock_timeout_ms == 30000
    part = r.responses[0].partitions[0]
    assert part.acquired_records[0].delivery_count == 1 and len(bytes(part.records)) == len(batch)
    assert fetch(raw, "sg2", "m", 5, tid).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # piggy-backed: accept 0, release 1 (redelivered at once with count 2), 2 stays acquired
    r = fetch(raw, "sg2", "m", 1, tid, acks=[(0, 1, [1, 2])])
    assert r.responses[0].partitions[0].acknowledge_error_code == 0 and acquired(r) == [1]
    assert r.responses[0].partitions[0].acquired_records[0].delivery_count == 2
    # ShareAcknowledge: 0 is no longer acquired -> INVALID_RECORD_STATE, nothing applied
    ack = AR(group_id="sg2", member_id="m", share_session_epoch=2, topics=[AR.AcknowledgeTopic(
        topic_id=tid, partitions=[AR.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            AR.AcknowledgementBatch(first_offset=0, last_offset=2, acknowledge_types=[1])])])])
    r = raw.request(ack, 1)
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    ack.share_session_epoch = 3
    ack.topics[0].partitions[0].acknowledgement_batches[0].first_offset = 1
    assert raw.request(ack, 2).responses[0].partitions[0].error_code == 0
    ack.share_session_epoch = 0
    assert raw.request(ack, 1).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    # offsets: all three complete
    d = raw.request(DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id="sg2", topics=None)]), 1)
    p = d.groups[0].topics[0].partitions[0]
    assert (d.groups[0].topics[0].topic_name, p.start_offset, p.lag) == ("sf", 3, 0)
    # closing the session: epoch -1
    r = fetch(raw, "sg2", "m", -1, tid)
    assert r.error_code == 0 and acquired(r) == []
    assert fetch(raw, "sg2", "m", 4, tid).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    # admin: alter while the member is in the group is refused; after it leaves, restart from 1
    A = AlterShareGroupOffsetsRequest
    alter = A(group_id="sg2", topics=[A.AlterShareGroupOffsetsRequestTopic(
        topic_name="sf", partitions=[A.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=1)])])
    assert raw.request(alter, 0).error_code == ErrorCode.NON_EMPTY_GROUP
    hb(raw, "sg2", "m", -1)
    r = raw.request(alter, 0)
    assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0
    hb(raw, "sg2", "m2", 0, ["sf"])
    assert acquired(fetch(raw, "sg2", "m2", 0, tid)) == [1, 2]
    hb(raw, "sg2", "m2", -1)
    assert fetch(raw, "sg2", "m2", -1, tid).error_code == 0         # closing the session releases the records
    D = DeleteShareGroupOffsetsRequest
    r = raw.request(D(group_id="sg2", topics=[D.DeleteShareGroupOffsetsRequestTopic(topic_name="sf"),
                                              D.DeleteShareGroupOffsetsRequestTopic(topic_name="nope")]), 0)
    assert [t.error_code for t in r.responses] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    d = raw.request(DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id="sg2", topics=[
            DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestTopic(topic_name="sf", partitions=[0])])]), 1)
    assert d.groups[0].topics[0].partitions[0].start_offset == -1


def test_hostile_share_requests_get_error_codes(raw: RawClient) -> None:
    create_topic(raw, "hostile", 1)
    tid = topic_id(raw, "hostile")
    raw.request(produce_req("hostile", encode_batch([Rec(b"a")])), 9)
    hb(raw, "sg3", "m", 0, ["hostile"])
    r = fetch(raw, "sg3", "m", 0, tid)
    assert acquired(r) == [0]
    # an acknowledgement spanning 2^62 offsets, a types array of the wrong length, a type out of range
    cases = [((0, 2**62, [1]), ErrorCode.INVALID_RECORD_STATE), ((0, 0, [1, 1]), ErrorCode.INVALID_REQUEST),
             ((0, 0, [9]), ErrorCode.INVALID_REQUEST), ((-5, -1, [1]), ErrorCode.INVALID_RECORD_STATE),
             ((3, 1, [1]), ErrorCode.INVALID_REQUEST)]
    for epoch, (ack, code) in enumerate(cases, start=1):
        acks = [ack]
        r = fetch(raw, "sg3", "m", epoch, tid, acks=acks)
        assert r.error_code == 0 and r.responses[0].partitions[0].acknowledge_error_code == code, acks
    # unknown topic ids and partitions: per-partition errors, the session and connection stay usable
    bogus = uuid.uuid4()
    r = raw.request(FR(group_id="sg3", member_id="m", share_session_epoch=6, max_wait_ms=0, min_bytes=1,
                       max_bytes=1000, max_records=10, batch_size=10, topics=[
                           FR.FetchTopic(topic_id=bogus, partitions=[FR.FetchPartition(partition_index=0)]),
                           FR.FetchTopic(topic_id=tid, partitions=[FR.FetchPartition(partition_index=7)])]), 1)
    errs = {(t.topic_id, p.partition_index): p.error_code for t in r.responses for p in t.partitions}
    assert errs == {(bogus, 0): ErrorCode.UNKNOWN_TOPIC_ID, (tid, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert hb(raw, "x" * 40000, "m", 0, ["hostile"]).error_code == ErrorCode.INVALID_GROUP_ID
    assert fetch(raw, "x" * 40000, "m", 0, tid).error_code == ErrorCode.INVALID_REQUEST
    assert acquired(fetch(raw, "sg3", "m", 7, tid, acks=[(0, 0, [1])])) == []


def test_deleting_a_topic_deletes_its_share_state(raw: RawClient) -> None:
    from kafkalite_wire.messages import DeleteTopicsRequest

    create_topic(raw, "gone", 1)
    tid = topic_id(raw, "gone")
    raw.request(produce_req("gone", encode_batch([Rec(b"a")])), 9)
    hb(raw, "sg4", "m", 0, ["gone"])
    assert acquired(fetch(raw, "sg4", "m", 0, tid)) == [0]
    d = DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id="sg4", topics=None)])
    assert [t.topic_name for t in raw.request(d, 1).groups[0].topics] == ["gone"]
    r = raw.request(DeleteTopicsRequest(topic_names=["gone"], timeout_ms=5000), 4)
    assert r.responses[0].error_code == 0
    assert raw.request(d, 1).groups[0].topics == []
    r = fetch(raw, "sg4", "m", 1, tid)
    assert r.error_code == 0 and [p.error_code for t in r.responses for p in t.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]


def test_share_fetch_v2_record_limit_and_renew(raw: RawClient) -> None:
    create_topic(raw, "v2", 1)
    tid = topic_id(raw, "v2")
    raw.request(produce_req("v2", encode_batch([Rec(b"%d" % i) for i in range(5)])), 9)
    hb(raw, "sg5", "m", 0, ["v2"])

    def req(epoch: int, acks=None, renew: bool = False, mode: int = 1):  # type: ignore[no-untyped-def]
        batches = [FR.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=t) for a, b, t in acks or []]
        zero = renew
        return raw.request(FR(group_id="sg5", member_id="m", share_session_epoch=epoch, max_wait_ms=0,
                              min_bytes=0 if zero else 1, max_bytes=0 if zero else 1 << 20,
                              max_records=0 if zero else 2, batch_size=2, share_acquire_mode=mode,
                              is_renew_ack=renew, topics=[FR.FetchTopic(topic_id=tid, partitions=[
                                  FR.FetchPartition(partition_index=0, acknowledgement_batches=batches)])]), 2)

    assert acquired(req(0)) == [0, 1]                       # record-limit: exactly MaxRecords, batch split
    r = req(1, acks=[(0, 1, [4])], renew=True)              # RENEW: locks extended, nothing fetched
    assert r.error_code == 0 and acquired(r) == [] and r.responses[0].partitions[0].acknowledge_error_code == 0
    bad = FR(group_id="sg5", member_id="m", share_session_epoch=2, max_wait_ms=0, min_bytes=1, max_bytes=1,
             max_records=1, batch_size=1, is_renew_ack=True, topics=[])
    assert raw.request(bad, 2).error_code == ErrorCode.INVALID_REQUEST
    assert acquired(req(2, acks=[(0, 1, [1])])) == [2, 3]


def test_closing_a_connection_releases_its_sessions_records(raw: RawClient) -> None:
    """Kafka's ShareSessionCache disconnect listener: the session a connection opened ends when it closes, and
    its acquired records are available at once (the default 30 s lock is far away), the aborted delivery
    counted (Kafka 4.2+: DeliveryCountOps.NO_OP). A session the member reopened on another connection is not
    ended by the old connection closing."""
    create_topic(raw, "dc", 1)
    tid = topic_id(raw, "dc")
    raw.request(produce_req("dc", encode_batch([Rec(b"a"), Rec(b"b")])), 9)
    host, port = raw.sock.getpeername()[:2]
    hb(raw, "sg-dc", "a", 0, ["dc"])
    hb(raw, "sg-dc", "b", 0, ["dc"])
    with RawClient(host, port) as a:
        r = fetch(a, "sg-dc", "a", 0, tid)
        assert acquired(r) == [0, 1] and r.responses[0].partitions[0].acquired_records[0].delivery_count == 1
        assert acquired(fetch(raw, "sg-dc", "b", 0, tid)) == []
    # a's connection is gone: b's long poll is woken by the release and gets both records, second delivery
    r = fetch(raw, "sg-dc", "b", 1, tid, max_wait=15_000)
    assert acquired(r) == [0, 1] and r.responses[0].partitions[0].acquired_records[0].delivery_count == 2
    # c opens its session on one connection, reopens it on a second: the first closing leaves it alone
    raw.request(produce_req("dc", encode_batch([Rec(b"c"), Rec(b"d")])), 9)
    with RawClient(host, port) as c2:
        with RawClient(host, port) as c1:
            assert acquired(fetch(c1, "sg-dc", "c", 0, tid)) == [2, 3]
            r = fetch(c2, "sg-dc", "c", 0, tid)      # the replaced session's records are released, taken again
            assert acquired(r) == [2, 3] and r.responses[0].partitions[0].acquired_records[0].delivery_count == 2
        time.sleep(0.5)                               # (the broker sees c1 close; nothing may happen then)
        assert fetch(c2, "sg-dc", "c", 1, tid).error_code == 0
        assert acquired(fetch(raw, "sg-dc", "b", 2, tid)) == []   # 2-3 still c's


def fetch_req(group: str, member: str, epoch: int, tid: uuid.UUID, *, min_bytes: int = 1, max_wait: int = 0,
              batch_size: int = 500) -> ShareFetchRequest:
    return FR(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait,
              min_bytes=min_bytes, max_bytes=1 << 20, max_records=500, batch_size=batch_size, topics=[
                  FR.FetchTopic(topic_id=tid, partitions=[FR.FetchPartition(partition_index=0)])])


def test_min_bytes_long_poll_and_batch_size(raw: RawClient) -> None:
    """Kafka's DelayedShareFetch: with less than MinBytes acquirable the fetch waits (woken by appends) and
    answers once there is enough — or, at MaxWaitMs, with what there is. BatchSize cuts new records into
    AcquiredRecords ranges at log batch boundaries."""
    create_topic(raw, "mb", 1)
    tid = topic_id(raw, "mb")
    raw.request(produce_req("mb", encode_batch([Rec(b"small")])), 9)
    host, port = raw.sock.getpeername()[:2]
    with RawClient(host, port) as a:
        hb(a, "sg-mb", "m", 0, ["mb"])
        cid = a.send(fetch_req("sg-mb", "m", 0, tid, min_bytes=3000, max_wait=60_000), 1)
        time.sleep(0.3)       # (the fetch is parked by then; were MinBytes ignored it would have answered [0])
        raw.request(produce_req("mb", encode_batch([Rec(b"x" * 1000) for _ in range(4)])), 9)
        got_cid, r = a.recv(78, 1)
        assert got_cid == cid and r.error_code == 0
        assert acquired(r) == [0, 1, 2, 3, 4]
        # MinBytes never reached: at MaxWaitMs whatever there is
        raw.request(produce_req("mb", encode_batch([Rec(b"y")])), 9)
        r = a.request(fetch_req("sg-mb", "m", 1, tid, min_bytes=1 << 30, max_wait=300), 1)
        assert acquired(r) == [5]
    # BatchSize 4: three log batches of 4 records answered as three ranges, not one
    create_topic(raw, "bs", 1)
    tid = topic_id(raw, "bs")
    for _ in range(3):
        raw.request(produce_req("bs", encode_batch([Rec(b"z")] * 4)), 9)
    hb(raw, "sg-bs", "m", 0, ["bs"])
    r = raw.request(fetch_req("sg-bs", "m", 0, tid, batch_size=4), 1)
    ranges = [(x.first_offset, x.last_offset) for x in r.responses[0].partitions[0].acquired_records]
    assert ranges == [(0, 3), (4, 7), (8, 11)]


def test_partitions_are_initialised_at_assignment_and_resolved_at_first_fetch(raw: RawClient) -> None:
    """Kafka 4.x: the heartbeat that assigns a partition initialises its share-partition with start offset -1
    (InitializeShareGroupState; DescribeShareGroupOffsets lists it with start offset and lag -1), and the
    leader's first ShareFetch resolves share.auto.offset.reset then: with latest, records produced between
    the assignment and that fetch are not delivered; those produced after it are."""
    from kafkalite.tests.broker.test_configs_protocol import incremental

    create_topic(raw, "init", 1)
    tid = topic_id(raw, "init")
    assert incremental(raw, "sg-init", ("share.auto.offset.reset", 0, "latest"), rtype=32) == (0, None)
    raw.request(produce_req("init", encode_batch([Rec(b"before")])), 9)
    h = hb(raw, "sg-init", "m", 0, ["init"])
    assert h.error_code == 0 and [(t.topic_id, t.partitions) for t in h.assignment.topic_partitions] == [(tid, [0])]
    d = DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id="sg-init", topics=None)])
    (t,) = raw.request(d, 1).groups[0].topics
    assert (t.topic_name, [(p.partition_index, p.start_offset, p.lag) for p in t.partitions]) == \
        ("init", [(0, -1, -1)])
    raw.request(produce_req("init", encode_batch([Rec(b"between")], base_offset=1)), 9)
    assert acquired(fetch(raw, "sg-init", "m", 0, tid)) == []            # latest, resolved now: offset 2
    (t,) = raw.request(d, 1).groups[0].topics
    assert [(p.start_offset, p.lag) for p in t.partitions] == [(2, 0)]
    raw.request(produce_req("init", encode_batch([Rec(b"after")], base_offset=2)), 9)
    assert acquired(fetch(raw, "sg-init", "m", 1, tid)) == [2]
