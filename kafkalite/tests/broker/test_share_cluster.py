"""Share groups in ``kafkalite.cluster`` at the protocol level (``kafkalite.coordinator.share.cluster``): a
ShareGroupHeartbeat at a broker that does not coordinate the group answers NOT_COORDINATOR, ShareFetch and
ShareAcknowledge at a broker that does not lead the partition answer NOT_LEADER_OR_FOLLOWER (nothing acquired
from a follower's replica), and the leader of a partition acquires its records for a member the coordinator
assigned, its share-partition state written to ``__share_group_state`` through that partition's leader."""
from __future__ import annotations

import time

from kafkalite.cluster import Cluster
from kafkalite.tests.broker.test_cluster import _client, _create, _produce
from kafkalite.tests.broker.test_configs_protocol import incremental
from kafkalite.tests.broker.test_protocol import fetch_req, produce_req
from kafkalite.tests.broker.test_share_handlers import acquired, hb, topic_id
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.messages import DeleteShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequest
from kafkalite_wire.messages import ShareAcknowledgeRequest as AR
from kafkalite_wire.messages import ShareFetchRequest as FR

NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR = 6, 16


def _fetch(c, group: str, member: str, epoch: int, tid, partition: int):  # type: ignore[no-untyped-def]
    return c.request(FR(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
                        max_bytes=1 << 20, max_records=100, batch_size=100, topics=[FR.FetchTopic(
                            topic_id=tid, partitions=[FR.FetchPartition(partition_index=partition)])]), 1)


def test_coordinator_and_partition_leaders() -> None:
    overrides = {"offsets.topic.num.partitions": "3", "share.coordinator.state.topic.num.partitions": "3",
                 "kafkalite.share.auto.offset.reset": "earliest"}
    with Cluster(brokers=3, overrides=overrides) as cluster:
        _create(cluster, "sq", partitions=3)
        leaders = {p["partition"]: p["leader"] for p in cluster.sync.describe()["partitions"] if p["topic"] == "sq"}
        with _client(cluster, leaders[0]) as c:
            _produce(c, "sq", [b"a", b"b"], acks=-1)          # partition 0
            tid = topic_id(c, "sq")
        group = "sg-cluster"
        with _client(cluster, 1) as c:
            hb(c, group, "m0", 0, ["sq"])                      # creates __consumer_offsets
        coord = cluster.coordinator("group", group)
        others = [n for n in (1, 2, 3) if n != coord]
        with _client(cluster, others[0]) as c:
            assert hb(c, group, "m1", 0, ["sq"]).error_code == NOT_COORDINATOR
        with _client(cluster, coord) as c:
            h = hb(c, group, "m1", 0, ["sq"])
            assert h.error_code == 0, h.error_message
            hb(c, group, "m1", h.member_epoch)
        follower = next(n for n in (1, 2, 3) if n != leaders[0])
        with _client(cluster, follower) as c:
            r = _fetch(c, group, "m1", 0, tid, 0)
            assert r.responses[0].partitions[0].error_code == NOT_LEADER_OR_FOLLOWER and acquired(r) == []
            a = c.request(AR(group_id=group, member_id="m1", share_session_epoch=1, topics=[AR.AcknowledgeTopic(
                topic_id=tid, partitions=[AR.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                    AR.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])])])]), 1)
            assert a.error_code == 0 and a.responses[0].partitions[0].error_code == NOT_LEADER_OR_FOLLOWER, a
        with _client(cluster, leaders[0]) as c:
            r = _fetch(c, group, "m1", 0, tid, 0)
            assert r.responses[0].partitions[0].error_code == 0 and acquired(r) == [0, 1]
        # the share-partition's first snapshot is in __share_group_state, at its partition's leader
        rt = cluster.runtime
        written = [(p, rt.leader_of("__share_group_state", p)) for p in range(3)
                   if rt.state_of(rt.leader_of("__share_group_state", p)).get_log("__share_group_state",
                                                                                  p).log_end_offset > 0]
        assert len(written) == 1


def _ack(c, group: str, member: str, epoch: int, tid, first: int, last: int):  # type: ignore[no-untyped-def]
    return c.request(AR(group_id=group, member_id=member, share_session_epoch=epoch, topics=[AR.AcknowledgeTopic(
        topic_id=tid, partitions=[AR.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            AR.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=[1])])])]), 1)


def test_leader_moves_never_redeliver_acknowledged_records() -> None:
    """A share-partition follows its partition's leader: the new leader starts from the latest persisted state
    (read at the current leader of its ``__share_group_state`` partition), not from the copy it read at its
    start, and the old leader forgets its own. Acknowledged records never come again; acquired but
    unacknowledged ones do — also after the state partition's leader moved, and back at the first leader."""
    overrides = {"offsets.topic.num.partitions": "3", "share.coordinator.state.topic.num.partitions": "3",
                 "kafkalite.share.auto.offset.reset": "earliest"}
    with Cluster(brokers=3, overrides=overrides) as cluster:
        _create(cluster, "mv", partitions=1)
        first = cluster.runtime.leader_of("mv", 0)
        with _client(cluster, first) as c:
            assert _produce(c, "mv", [b"r%d" % i for i in range(8)], acks=-1).error_code == 0
            tid = topic_id(c, "mv")
        group = "sg-move"
        with _client(cluster, 1) as c:
            hb(c, group, "m0", 0, ["mv"])                      # creates __consumer_offsets
        with _client(cluster, cluster.coordinator("group", group)) as c:
            h = hb(c, group, "m1", 0, ["mv"])
            assert h.error_code == 0, h.error_message
            hb(c, group, "m1", h.member_epoch)
        with _client(cluster, first) as c:
            assert acquired(_fetch(c, group, "m1", 0, tid, 0)) == list(range(8))
            a = _ack(c, group, "m1", 1, tid, 0, 2)
            assert a.responses[0].partitions[0].error_code == 0, a
        second = next(n for n in (1, 2, 3) if n != first)
        cluster.sync.move_leader("mv", 0, second)
        with _client(cluster, cluster.coordinator("group", group)) as c:   # before the new leader served it
            SO = DescribeShareGroupOffsetsRequest
            d = c.request(SO(groups=[SO.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
                SO.DescribeShareGroupOffsetsRequestTopic(topic_name="mv", partitions=[0])])]), 1)
            assert d.groups[0].topics[0].partitions[0].start_offset == 3, d
        with _client(cluster, second) as c:
            r = _fetch(c, group, "m1", 0, tid, 0)
            assert r.responses[0].partitions[0].error_code == 0
            assert acquired(r) == list(range(3, 8))            # 0..2 acknowledged; 3..7 were only acquired
            assert _ack(c, group, "m1", 1, tid, 3, 3).responses[0].partitions[0].error_code == 0
        rt = cluster.runtime
        from kafkalite.coordinator.share.records import ShareKey, partition_for
        state_p = partition_for(ShareKey(group, tid, 0), 3)
        state_leader = rt.leader_of("__share_group_state", state_p)
        cluster.sync.move_leader("__share_group_state", state_p, next(n for n in (1, 2, 3) if n != state_leader))
        cluster.sync.move_leader("mv", 0, first)               # back to a broker that served it before
        with _client(cluster, first) as c:
            r = _fetch(c, group, "m1", 0, tid, 0)
            assert r.responses[0].partitions[0].error_code == 0
            assert acquired(r) == list(range(4, 8))
        # the group empties and its offsets are deleted while the partition's leader is one that dropped its
        # copy: the state is tombstoned all the same (describe, which reads the latest state, finds none)
        cluster.sync.move_leader("mv", 0, second)
        with _client(cluster, cluster.coordinator("group", group)) as c:
            for m in ("m0", "m1"):
                assert hb(c, group, m, -1).error_code == 0
            DO = DeleteShareGroupOffsetsRequest
            d = c.request(DO(group_id=group, topics=[DO.DeleteShareGroupOffsetsRequestTopic(topic_name="mv")]), 0)
            assert d.error_code == 0 and d.responses[0].error_code == 0, d
            SO = DescribeShareGroupOffsetsRequest
            r = c.request(SO(groups=[SO.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
                SO.DescribeShareGroupOffsetsRequestTopic(topic_name="mv", partitions=[0])])]), 1)
            assert r.groups[0].topics[0].partitions[0].start_offset == -1, r


def test_dlq_records_go_to_the_dlq_partitions_leader() -> None:
    """The share group DLQ (KIP-1191) in a cluster: the share-partition's leader writes the DLQ record through the
    Produce handler of the DLQ partition's leader, another broker here (acks=-1, replicated)."""
    overrides = {"offsets.topic.num.partitions": "3", "share.coordinator.state.topic.num.partitions": "3",
                 "kafkalite.share.auto.offset.reset": "earliest"}
    with Cluster(brokers=3, overrides=overrides) as cluster:
        _create(cluster, "src", partitions=3)
        _create(cluster, "dlq.c", partitions=2, configs={"errors.deadletterqueue.group.enable": "true"})
        parts = cluster.sync.describe()["partitions"]
        src = {p["partition"]: p["leader"] for p in parts if p["topic"] == "src"}
        dlq = {p["partition"]: p["leader"] for p in parts if p["topic"] == "dlq.c"}
        p = next(p for p in range(3) if src[p] != dlq[p % 2])     # a DLQ partition led elsewhere
        group = "sg-dlq"
        with _client(cluster, 1) as c:
            assert incremental(c, group, ("errors.deadletterqueue.topic.name", 0, "dlq.c"), rtype=32) == (0, None)
        with _client(cluster, src[p]) as c:
            assert c.request(produce_req("src", encode_batch([Rec(b"v")]), partition=p), 9) \
                .responses[0].partition_responses[0].error_code == 0
            tid = topic_id(c, "src")
        with _client(cluster, 1) as c:
            hb(c, group, "m0", 0, ["src"])                      # creates __consumer_offsets
        coord = cluster.coordinator("group", group)
        with _client(cluster, coord) as c:
            h = hb(c, group, "m", 0, ["src"])
            hb(c, group, "m", h.member_epoch)
        with _client(cluster, src[p]) as c:
            assert acquired(_fetch(c, group, "m", 0, tid, p)) == [0]
            r = c.request(FR(group_id=group, member_id="m", share_session_epoch=1, max_wait_ms=0, min_bytes=1,
                            max_bytes=1 << 20, max_records=100, batch_size=100, topics=[FR.FetchTopic(
                                topic_id=tid, partitions=[FR.FetchPartition(partition_index=p, acknowledgement_batches=[
                                    FR.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[3])])])]),
                          1)
            assert r.responses[0].partitions[0].acknowledge_error_code == 0
        with _client(cluster, dlq[p % 2]) as c:
            deadline = time.monotonic() + 20
            recs: list = []
            while not recs and time.monotonic() < deadline:
                data = bytes(c.request(fetch_req("dlq.c", 0, partition=p % 2), 11).responses[0].partitions[0].records
                             or b"")
                recs = [r for pos, hdr in iter_batches(data) for r in batch_records(data[pos:pos + hdr.size])]
                time.sleep(0.05)
        assert [dict(r.headers)["__dlq.errors.partition"] for r in recs] == [str(p).encode()]


def test_state_rpcs_at_the_share_coordinator_reach_the_partition_leader() -> None:
    """InitializeShareGroupState / ReadShareGroupState are answered by the leader of the key's
    ``__share_group_state`` partition only (NOT_COORDINATOR elsewhere); a new state epoch there makes the
    share-partition at the topic-partition's leader (another broker, maybe) start again from it."""
    from kafkalite.coordinator.share.records import ShareKey, partition_for
    from kafkalite.tests.broker.test_share_state_rpcs import _init, _read

    overrides = {"offsets.topic.num.partitions": "3", "share.coordinator.state.topic.num.partitions": "3",
                 "kafkalite.share.auto.offset.reset": "earliest"}
    with Cluster(brokers=3, overrides=overrides) as cluster:
        _create(cluster, "rpc", partitions=1)
        leader = cluster.runtime.leader_of("rpc", 0)
        group = "sg-rpc"
        with _client(cluster, leader) as c:
            _produce(c, "rpc", [b"r%d" % i for i in range(4)], acks=-1)
            tid = topic_id(c, "rpc")
        with _client(cluster, 1) as c:
            hb(c, group, "m0", 0, ["rpc"])                     # creates __consumer_offsets
        coord = cluster.coordinator("group", group)
        with _client(cluster, coord) as c:
            h = hb(c, group, "m1", 0, ["rpc"])
            assert h.error_code == 0, h.error_message
        with _client(cluster, leader) as c:
            assert acquired(_fetch(c, group, "m1", 0, tid, 0)) == [0, 1, 2, 3]
        state_leader = cluster.runtime.leader_of("__share_group_state", partition_for(ShareKey(group, tid, 0), 3))
        for n in (1, 2, 3):
            if n != state_leader:
                with _client(cluster, n) as c:
                    assert _init(c, group, tid, {0: (1, 2)}) == {0: NOT_COORDINATOR}
        with _client(cluster, state_leader) as c:
            # the records the closed connection's session had acquired were released (delivery count 1)
            assert _read(c, group, tid, 0) == (0, 0, 0, [(0, 3, 0, 1)])
            assert _init(c, group, tid, {0: (1, 2)}) == {0: 0}
            assert _read(c, group, tid, 0) == (0, 1, 2, [])
        with _client(cluster, leader) as c:
            assert acquired(_fetch(c, group, "m1", 0, tid, 0)) == [2, 3]
            a = _ack(c, group, "m1", 1, tid, 2, 3)
            assert a.responses[0].partitions[0].error_code == 0
        with _client(cluster, state_leader) as c:
            assert _read(c, group, tid, 0)[:3] == (0, 1, 4)
