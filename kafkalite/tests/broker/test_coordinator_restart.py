"""Committed offsets and group metadata come back after a restart of the embedded broker."""
from __future__ import annotations

import time
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import commit, create_topic, join
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import (
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)


def fetch(c: RawClient, group: str) -> dict[int, int]:
    r = c.request(OffsetFetchRequest(group_id=group, topics=None), 7)
    return {p.partition_index: p.committed_offset for t in r.topics for p in t.partitions}


def loaded(c: RawClient, group: str):  # type: ignore[no-untyped-def]
    """DescribeGroups until the coordinator has loaded (COORDINATOR_LOAD_IN_PROGRESS before)."""
    for _ in range(1000):
        r = c.request(DescribeGroupsRequest(groups=[group]), 5)
        if r.groups[0].error_code == 0:
            return r.groups[0]
        time.sleep(0.01)
    raise AssertionError("the group coordinator did not finish loading")


def test_offsets_and_stable_group_survive_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t", 2)
        assert c.request(FindCoordinatorRequest(key="simple"), 1).error_code == 0
        assert commit(c, "simple", 5, "t", {0: 3, 1: 4}) == {0: 0, 1: 0}
        j = join(c, "live", 3)
        s = c.request(SyncGroupRequest(group_id="live", generation_id=j.generation_id, member_id=j.member_id,
                                       assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                           member_id=j.member_id, assignment=b"A")]), 3)
        assert s.error_code == 0
        assert commit(c, "live", 5, "t", {0: 9}, j.generation_id, j.member_id) == {0: 0}
    # a different offsets.topic.num.partitions now: the existing topic's 50 partitions still decide
    with Broker(data_dir=data, overrides={"offsets.topic.num.partitions": "10"}) as b, \
            RawClient(b.host, b.port) as c:
        g = loaded(c, "live")
        assert g.group_state == "Stable" and [m.member_id for m in g.members] == [j.member_id]
        assert bytes(g.members[0].member_assignment) == b"A"
        assert fetch(c, "simple") == {0: 3, 1: 4}
        assert fetch(c, "live") == {0: 9}
        # "simple" hashes to partition 26 of 50 but 6 of 10: a write to the wrong partition would be
        # replayed before the old one on the next load and lose
        assert commit(c, "simple", 5, "t", {0: 5}) == {0: 0}
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        loaded(c, "simple")
        assert fetch(c, "simple") == {0: 5, 1: 4}
