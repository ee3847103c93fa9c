"""The share coordinator's state RPCs on the wire: ReadShareGroupStateSummary (87) answers from what
``__share_group_state`` holds (``coordinator/share/coordinator_reads.py``); InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85) and DeleteShareGroupState (86) as Kafka's share coordinator
(``coordinator/share/coordinator_state.py``, ``shard.py``), with Kafka's errors and CLUSTER_ACTION, and the
broker's share-partitions following the state they change."""
from __future__ import annotations

import time
import uuid

import pytest

from kafkalite.coordinator.share import coordinator_state
from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)

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


# -- InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86)
INIT, RD, W, D = (InitializeShareGroupStateRequest, ReadShareGroupStateRequest, WriteShareGroupStateRequest,
               DeleteShareGroupStateRequest)


def _init(c: RawClient, group: str, tid: uuid.UUID, parts: dict[int, tuple[int, int]]) -> dict[int, int]:
    """partition -> (state epoch, start offset); answers partition -> error code."""
    r = c.request(INIT(group_id=group, topics=[INIT.InitializeStateData(topic_id=tid, partitions=[
        INIT.PartitionData(partition=p, state_epoch=se, start_offset=so) for p, (se, so) in parts.items()])]), 0)
    return {p.partition: p.error_code for t in r.results for p in t.partitions}


def _read(c: RawClient, group: str, tid: uuid.UUID, p: int, leader_epoch: int = 0):  # type: ignore[no-untyped-def]
    while True:   # after a restart the share coordinator answers COORDINATOR_LOAD_IN_PROGRESS until it has loaded
        r = c.request(RD(group_id=group, topics=[RD.ReadStateData(topic_id=tid, partitions=[
            RD.PartitionData(partition=p, leader_epoch=leader_epoch)])]), 0)
        (res,) = r.results[0].partitions
        if res.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            break
        time.sleep(0.05)
    return res.error_code, res.state_epoch, res.start_offset, [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in res.state_batches]


def _write(c: RawClient, group: str, tid: uuid.UUID, p: int, *, state_epoch: int, leader_epoch: int = 0,
           start: int = -1, batches: list[tuple[int, int, int, int]] = (), version: int = 1) -> int:  # type: ignore[assignment]
    r = c.request(W(group_id=group, topics=[W.WriteStateData(topic_id=tid, partitions=[W.PartitionData(
        partition=p, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start,
        delivery_complete_count=-1, state_batches=[W.StateBatch(first_offset=a, last_offset=b, delivery_state=s,
                                                                delivery_count=n) for a, b, s, n in batches])])]),
        version)
    return int(r.results[0].partitions[0].error_code)


def _delete(c: RawClient, group: str, tid: uuid.UUID, p: int) -> int:
    r = c.request(D(group_id=group, topics=[D.DeleteStateData(topic_id=tid, partitions=[
        D.PartitionData(partition=p)])]), 0)
    return int(r.results[0].partitions[0].error_code)


def test_initialize_write_read_delete_as_kafkas_share_coordinator(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Broker(data_dir=tmp_path, overrides=SHARE) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "st", 2)
        tid = topic_id(c, "st")
        # no __share_group_state yet: not the coordinator of any key
        assert _init(c, "g", tid, {0: (0, 5)}) == {0: ErrorCode.NOT_COORDINATOR}
        hb(c, "boot", "m", 0, ["st"])
        fetch(c, "boot", "m", 0, tid)                      # the share coordinator's topic now exists
        assert _read(c, "g", tid, 0)[:1] == (ErrorCode.INVALID_REQUEST,)      # read before initialize
        assert _write(c, "g", tid, 0, state_epoch=0) == ErrorCode.INVALID_REQUEST
        assert _init(c, "g", tid, {0: (1, 5), 1: (0, -1), 7: (0, 0), -1: (0, 0)}) == {
            0: 0, 1: 0, 7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1: ErrorCode.INVALID_REQUEST}
        assert _init(c, "g", tid, {0: (-1, 5)}) == {0: ErrorCode.INVALID_REQUEST}
        assert _read(c, "g", tid, 0) == (0, 1, 5, [])
        assert _read(c, "g", tid, 1) == (0, 0, -1, [])
        # Write: state batches merged; a lower state epoch is fenced, as is a lower leader epoch
        assert _write(c, "g", tid, 0, state_epoch=1, batches=[(5, 7, 2, 1), (6, 9, 0, 2)]) == 0
        assert _read(c, "g", tid, 0) == (0, 1, 5, [(5, 5, 2, 1), (6, 9, 0, 2)])   # the higher count wins
        assert _write(c, "g", tid, 0, state_epoch=0, batches=[(5, 5, 0, 1)]) == ErrorCode.FENCED_STATE_EPOCH
        assert _write(c, "g", tid, 0, state_epoch=1, start=7, version=0) == 0
        assert _read(c, "g", tid, 0) == (0, 1, 7, [(7, 9, 0, 2)])
        assert _write(c, "g", tid, 0, state_epoch=1, start=6) == 0             # the start never moves back
        assert _read(c, "g", tid, 0)[2] == 7
        assert _read(c, "g", tid, 0, leader_epoch=3)[0] == 0                  # records leader epoch 3
        assert _read(c, "g", tid, 0, leader_epoch=2)[0] == ErrorCode.FENCED_LEADER_EPOCH
        assert _write(c, "g", tid, 0, state_epoch=1, leader_epoch=2) == ErrorCode.FENCED_LEADER_EPOCH
        assert _write(c, "g", tid, 0, state_epoch=1, leader_epoch=-1) == ErrorCode.INVALID_REQUEST
        assert _summary(c, "g", {tid: [0]})[(tid, 0)] == (0, 7, -1, 3, 1)
        # Initialize again: a new state epoch resets the state; an older one is fenced
        assert _init(c, "g", tid, {0: (0, 0)}) == {0: ErrorCode.FENCED_STATE_EPOCH}
        assert _init(c, "g", tid, {0: (2, 8)}) == {0: 0}
        assert _read(c, "g", tid, 0, leader_epoch=3) == (0, 2, 8, [])
        # Delete: a tombstone; deleting what has no state is fine
        assert _delete(c, "g", tid, 1) == 0 and _delete(c, "g", tid, 1) == 0
        assert _read(c, "g", tid, 1)[0] == ErrorCode.INVALID_REQUEST
        assert _delete(c, "g", tid, 9) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # empty group id / no topics: empty answers
        assert c.request(INIT(group_id="", topics=[INIT.InitializeStateData(topic_id=tid, partitions=[
            INIT.PartitionData(partition=0)])]), 0).results == []
        assert c.request(W(group_id="g", topics=[]), 1).results == []
        assert c.request(D(group_id="g", topics=[D.DeleteStateData(topic_id=tid, partitions=[])]), 0).results == []
    # what the RPCs wrote survives a restart
    with Broker(data_dir=tmp_path, overrides=SHARE) as b, RawClient(b.host, b.port) as c:
        tid = topic_id(c, "st")
        assert _read(c, "g", tid, 0, leader_epoch=3) == (0, 2, 8, [])
        assert _read(c, "g", tid, 1)[0] == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("thread_catch_up", [1000, 0], ids=["inline-tail", "thread-tail"])
def test_a_share_partition_reloads_when_its_state_changes_under_it(tmp_path, monkeypatch,  # type: ignore[no-untyped-def]
                                                                   thread_catch_up: int) -> None:
    """The broker's share-partition caches its state; a raw Initialize (as AlterShareGroupOffsets) or Write makes
    it start again from the coordinator's state, and what it acknowledged before is kept. (thread-tail: the
    coordinator's view catches up with the share-partition's own writes in a worker thread.)"""
    monkeypatch.setattr(coordinator_state, "THREAD_CATCH_UP", thread_catch_up)
    with Broker(data_dir=tmp_path, overrides=SHARE) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "rl", 1)
        tid = topic_id(c, "rl")
        assert c.request(produce_req("rl", encode_batch([Rec(b"%d" % i) for i in range(6)])), 9) \
            .responses[0].partition_responses[0].error_code == 0
        hb(c, "g", "m", 0, ["rl"])
        assert acquired(fetch(c, "g", "m", 0, tid)) == [0, 1, 2, 3, 4, 5]
        assert acquired(fetch(c, "g", "m", 1, tid, acks=[(0, 1, [1])])) == []    # 0-1 accepted: start 2
        assert _read(c, "g", tid, 0) == (0, 0, 2, [])
        # a raw write at the current state epoch: offset 4 acknowledged by someone else
        assert _write(c, "g", tid, 0, state_epoch=0, batches=[(4, 4, 2, 1)]) == 0
        # the share-partition dropped its cache: acknowledging what it had acquired is INVALID_RECORD_STATE (and
        # writes nothing); 2-5 are available again, but not 4
        r = fetch(c, "g", "m", 2, tid, acks=[(2, 3, [1])])
        assert r.responses[0].partitions[0].acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
        assert acquired(r) == [2, 3, 5]
        assert _read(c, "g", tid, 0)[2:] == (2, [(4, 4, 2, 1)])                 # acquisitions are not persisted
        r = fetch(c, "g", "m", 3, tid, acks=[(2, 3, [1]), (5, 5, [1])])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _read(c, "g", tid, 0)[2] == 6                                     # 2-5 all done: start 6
        # a raw Initialize at a new state epoch resets it; the share-partition follows
        assert _init(c, "g", tid, {0: (1, 1)}) == {0: 0}
        assert acquired(fetch(c, "g", "m", 4, tid)) == [1, 2, 3, 4, 5]
        r = fetch(c, "g", "m", 5, tid, acks=[(1, 5, [1])])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _read(c, "g", tid, 0)[:3] == (0, 1, 6)                            # its writes keep epoch 1
        # a stale writer (state epoch 0) is fenced and changes nothing
        assert _write(c, "g", tid, 0, state_epoch=0, start=0) == ErrorCode.FENCED_STATE_EPOCH
        # Delete: the share-partition starts again from share.auto.offset.reset (earliest here)
        assert _delete(c, "g", tid, 0) == 0
        assert acquired(fetch(c, "g", "m", 6, tid)) == [0, 1, 2, 3, 4, 5]
    with Broker(data_dir=tmp_path, overrides=SHARE) as b, RawClient(b.host, b.port) as c:
        tid = topic_id(c, "rl")
        assert _read(c, "g", tid, 0)[:3] == (0, 0, 0)


def test_state_rpcs_need_cluster_action() -> None:
    with Broker(overrides={**SHARE, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "super.users": "User:admin"}) as b, RawClient(b.host, b.port) as c:
        tid = uuid.uuid4()
        assert _init(c, "g", tid, {0: (0, 0)}) == {0: ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        assert _read(c, "g", tid, 0)[0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert _write(c, "g", tid, 0, state_epoch=0) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert _delete(c, "g", tid, 0) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
