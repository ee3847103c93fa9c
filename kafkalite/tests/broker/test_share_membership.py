"""Share group membership persisted as Kafka 4.3 persists it (``grouprecords.py``): the record bytes follow the
schemas, replaying what the coordinator wrote rebuilds the groups it holds, and a broker started on a copy of a
live data directory (what SIGKILL leaves) knows the members, their epochs and assignments: a member goes on
heartbeating with its epoch instead of being told UNKNOWN_MEMBER_ID."""
from __future__ import annotations

import random
import shutil
import time
import uuid
from pathlib import Path

from kafkalite.coordinator.share import grouprecords as R
from kafkalite.coordinator.share.config import ShareConfig
from kafkalite.coordinator.share.group import ShareGroupCoordinator
from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.broker.test_share_handlers import fetch, hb, topic_id
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DeleteGroupsRequest, ListGroupsRequest, ShareGroupDescribeRequest

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def hb_loaded(c: RawClient, group: str, member: str, epoch: int):  # type: ignore[no-untyped-def]
    """A heartbeat retried while the coordinator loads (COORDINATOR_LOAD_IN_PROGRESS), as clients retry it."""
    deadline = time.monotonic() + 30
    while True:
        r = hb(c, group, member, epoch)
        if r.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            return r
        time.sleep(0.05)


def test_record_bytes_follow_the_schemas() -> None:
    assert R.key(R.MEMBER_METADATA, "g", "m") == b"\x00\x0a\x00\x01g\x00\x01m"
    assert R.key(R.GROUP_METADATA, "g") == b"\x00\x0b\x00\x01g"
    # version 0; RackId null, ClientId "c", ClientHost "/h", SubscribedTopicNames ["t"]; no tagged fields
    assert R.member_value(None, "c", "/h", ["t"]) == b"\x00\x00" + b"\x00" + b"\x02c" + b"\x03/h" + b"\x02\x02t" + b"\x00"
    # Epoch int32, MetadataHash int64 (a plain field in ShareGroupMetadataValue, unlike the consumer group's)
    assert R.group_value(3, -2) == b"\x00\x00" + b"\x00\x00\x00\x03" + b"\xff" * 7 + b"\xfe" + b"\x00"
    # AssignmentEpoch, then AssignmentTimestamp as tagged field 0
    assert R.target_metadata_value(4, 5) == b"\x00\x00\x00\x00\x00\x04\x01\x00\x08" + (5).to_bytes(8, "big")
    # MemberEpoch, PreviousMemberEpoch, State, AssignedPartitions [TopicId, Partitions [0, 1]]
    assert R.current_value(2, 1, {(T1, 0), (T1, 1)}) == (
        b"\x00\x00" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01" + b"\x00" + b"\x02" + T1.bytes
        + b"\x03\x00\x00\x00\x00\x00\x00\x00\x01\x00" + b"\x00")


def test_replay_rebuilds_what_the_coordinator_holds() -> None:
    topics = {"a": (T1, 3), "b": (T2, 1)}
    coord = ShareGroupCoordinator(ShareConfig(), lambda: topics)
    written: list[tuple[bytes, bytes | None]] = []
    rng = random.Random(5)
    now = 0
    for _step in range(400):
        now += rng.randint(0, 3000)
        g = rng.choice(["g1", "g2"])
        m = rng.choice(["m1", "m2", "m3", "m4"])
        grp = coord.groups.get(g)
        member = grp.members.get(m) if grp is not None else None
        r = rng.random()
        if r < 0.15 and member is not None:
            coord.heartbeat(now, g, m, -1, None, None)
        elif r < 0.25:
            coord.poll(now)
        elif r < 0.3 and grp is not None and not grp.members:
            coord.delete(g)
        elif member is None:
            coord.heartbeat(now, g, m, 0, rng.choice([None, "r1"]), rng.choice([["a"], ["b"], ["a", "b"]]), "c", "/h")
        else:
            subs = rng.choice([None, None, ["a"], ["a", "b"]])
            coord.heartbeat(now, g, m, member.member_epoch, None, subs)
        for recs in coord.take_outbox().values():
            written.extend(recs)
    replay = R.GroupReplay()
    for k, v in written:
        replay.feed(k, v)
    assert replay.skipped == 0
    again = ShareGroupCoordinator(ShareConfig(), lambda: topics)
    again.load(replay.groups, now)
    assert set(again.groups) == set(coord.groups)
    for gid, g in coord.groups.items():
        h = again.groups[gid]
        assert (h.epoch, h.assignment_epoch, h.target, h.topology) == (g.epoch, g.assignment_epoch, g.target, g.topology)
        assert {m: (x.member_epoch, x.previous_epoch, x.assignment, x.subscribed, x.rack_id, x.client_id)
                for m, x in h.members.items()} == {
            m: (x.member_epoch, x.previous_epoch, x.assignment, x.subscribed, x.rack_id, x.client_id)
            for m, x in g.members.items()}
    assert not again.take_outbox()                 # loading writes nothing


def test_members_survive_a_broker_crash(tmp_path: Path) -> None:
    live, image = tmp_path / "live", tmp_path / "image"
    overrides = {"kafkalite.share.auto.offset.reset": "earliest", "share.coordinator.state.topic.num.partitions": "2",
                 "offsets.topic.num.partitions": "3"}
    with Broker(data_dir=live, overrides=overrides) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "mt", 2)
        tid = topic_id(c, "mt")
        c.request(produce_req("mt", encode_batch([Rec(b"x")])), 9)
        epochs = {m: hb(c, "sg-m", m, 0, ["mt"]).member_epoch for m in ("m1", "m2", "m3")}
        assert hb(c, "sg-m", "m3", -1).member_epoch == -1
        r = hb(c, "sg-m", "m1", epochs["m1"])
        e1, parts1 = r.member_epoch, r.assignment
        assert e1 > epochs["m1"] and parts1 is not None
        e2 = hb(c, "sg-m", "m2", epochs["m2"]).member_epoch
        assert e2 == e1
        assert fetch(c, "sg-m", "m1", 0, tid).error_code == 0          # share state: topic-partitions initialised
        hb(c, "sg-e", "x", 0, ["mt"])
        hb(c, "sg-e", "x", -1)
        assert c.request(DeleteGroupsRequest(groups_names=["sg-e"]), 2).results[0].error_code == 0
        shutil.copytree(live, image)                                   # what a SIGKILL leaves on disk
    with Broker(data_dir=image, overrides=overrides) as b, RawClient(b.host, b.port) as c:
        r = hb_loaded(c, "sg-m", "m1", e1)
        assert (r.error_code, r.member_epoch) == (0, e1)               # no UNKNOWN_MEMBER_ID, no new epoch
        assert r.assignment is None                                    # its assignment is what it has
        assert hb(c, "sg-m", "m3", epochs["m3"]).error_code == ErrorCode.UNKNOWN_MEMBER_ID   # it had left
        d = c.request(ShareGroupDescribeRequest(group_ids=["sg-m"]), 1).groups[0]
        assert d.error_code == 0 and d.group_state == "Stable" and d.group_epoch == e1
        assert sorted(m.member_id for m in d.members) == ["m1", "m2"]
        m1 = next(m for m in d.members if m.member_id == "m1")
        assert m1.member_epoch == e1 and m1.client_id == "raw" and m1.subscribed_topic_names == ["mt"]
        assert sorted((tp.topic_id, sorted(tp.partitions)) for tp in m1.assignment.topic_partitions) == sorted(
            (tp.topic_id, sorted(tp.partitions)) for tp in parts1.topic_partitions)
        listed = {g.group_id for g in c.request(ListGroupsRequest(types_filter=["share"]), 5).groups}
        assert "sg-m" in listed and "sg-e" not in listed               # the deleted group stays deleted
