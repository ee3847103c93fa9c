"""Streams groups (KIP-1071) over the wire: a member joins through StreamsGroupHeartbeat, the broker creates the
internal topics its topology names and assigns its tasks; StreamsGroupDescribe and ListGroups show the group; the
group (epochs, members, tasks, topology) survives a broker restart through its __consumer_offsets records."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire import messages as m

SGH, SGD = m.StreamsGroupHeartbeatRequest, m.StreamsGroupDescribeRequest


def join(c: RawClient, group: str, member: str) -> Any:
    changelog = SGH.TopicInfo(name=f"{group}-store-changelog", partitions=0, replication_factor=-1,
                              topic_configs=[SGH.KeyValue(key="cleanup.policy", value="compact")])
    topo = SGH.Topology(epoch=0, subtopologies=[SGH.Subtopology(subtopology_id="0", source_topics=["in"],
                                                                state_changelog_topics=[changelog])])
    return c.request(SGH(group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30_000,
                         topology=topo, process_id="p-" + member, active_tasks=[], standby_tasks=[],
                         warmup_tasks=[]), 1)


def beat(c: RawClient, group: str, member: str, epoch: int, owned: list[Any] | None = None) -> Any:
    return c.request(SGH(group_id=group, member_id=member, member_epoch=epoch, active_tasks=owned,
                         standby_tasks=None if owned is None else [], warmup_tasks=None if owned is None else []), 1)


def describe(c: RawClient, group: str) -> Any:
    """StreamsGroupDescribe, once the coordinator has read __consumer_offsets back (COORDINATOR_LOAD_IN_PROGRESS
    until then)."""
    for _ in range(10_000):
        d = c.request(SGD(group_ids=[group]), 1).groups[0]
        if d.error_code != 14:
            return d
        time.sleep(0.01)
    raise AssertionError("the coordinator never finished loading")


def test_join_assign_describe_and_survive_a_restart(tmp_path: Path) -> None:
    args: dict[str, Any] = {"data_dir": tmp_path, "overrides": {"group.streams.initial.rebalance.delay.ms": "0"}}
    with Broker(**args) as b, RawClient(b.host, b.port) as c:
        c.request(m.CreateTopicsRequest(topics=[m.CreateTopicsRequest.CreatableTopic(
            name="in", num_partitions=2, replication_factor=1)], timeout_ms=10_000), 5)
        r = join(c, "app", "m1")
        assert r.error_code == 0, r
        assert [(s.status_code, s.status_detail) for s in r.status] == [
            (3, "Internal topics are missing: [app-store-changelog]")]
        meta = c.request(m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(
            name="app-store-changelog")]), 12)
        assert [len(t.partitions) for t in meta.topics] == [2]   # one partition per task
        r = beat(c, "app", "m1", r.member_epoch)
        assert r.status == [] and [(t.subtopology_id, t.partitions) for t in r.active_tasks] == [("0", [0, 1])]
        epoch = r.member_epoch
        r = beat(c, "app", "m1", epoch, [SGH.TaskIds(subtopology_id="0", partitions=[0, 1])])
        assert (r.error_code, r.member_epoch, r.active_tasks) == (0, epoch, None)   # unchanged: not sent
        d = c.request(SGD(group_ids=["app"]), 1).groups[0]
        assert (d.error_code, d.group_state, d.assignor_name) == (0, "Stable", "sticky")
        before = (d.group_epoch, d.assignment_epoch, [(x.member_id, x.member_epoch, x.process_id) for x in d.members])
        lg = c.request(m.ListGroupsRequest(types_filter=["streams"]), 5)
        assert [(g.group_id, g.group_type, g.group_state) for g in lg.groups] == [("app", "streams", "Stable")]
    with Broker(**args) as b, RawClient(b.host, b.port) as c:
        d = describe(c, "app")
        assert (d.error_code, d.group_epoch, d.assignment_epoch, [(x.member_id, x.member_epoch, x.process_id)
                                                                  for x in d.members]) == (0, *before)
        assert [(t.subtopology_id, t.partitions) for t in d.members[0].assignment.active_tasks] == [("0", [0, 1])]
        assert d.topology.subtopologies[0].source_topics == ["in"]
        # the member goes on at its epoch, its tasks unchanged
        r = beat(c, "app", "m1", epoch, [SGH.TaskIds(subtopology_id="0", partitions=[0, 1])])
        assert (r.error_code, r.member_epoch, r.active_tasks) == (0, epoch, None)
        assert beat(c, "app", "m1", -1).member_epoch == -1
        assert c.request(m.DeleteGroupsRequest(groups_names=["app"]), 2).results[0].error_code == 0
    with Broker(**args) as b, RawClient(b.host, b.port) as c:
        d = describe(c, "app")
        assert d.error_code == 69   # GROUP_ID_NOT_FOUND: the deletion's tombstones were read back


def test_console_and_metrics_show_a_streams_group() -> None:
    """A streams group in the console (type streams, its state, members with the input partitions of their
    active tasks and the tasks themselves, offsets and lag) and in metrics (kafkalite_group_type), not as an
    Empty classic group (its committed offsets live in the classic store)."""
    from kafkalite.tests.broker.test_metrics import scrape, val
    from kafkalite.tests.broker.test_protocol import produce_req
    from kafkalite.tests.support.console_helpers import console_broker
    from kafkalite_storage.testing import encode_batch

    with console_broker(**{"group.streams.initial.rebalance.delay.ms": "0",
                           "kafkalite.metrics.listen": "127.0.0.1:0"}) as (b, con), \
            RawClient(b.host, b.port) as c:
        c.request(m.CreateTopicsRequest(topics=[m.CreateTopicsRequest.CreatableTopic(
            name="in", num_partitions=2, replication_factor=1)], timeout_ms=10_000), 5)
        for p in (0, 1):
            for _ in range(3):
                assert c.request(produce_req("in", encode_batch([b"x"]), partition=p), 9) \
                    .responses[0].partition_responses[0].error_code == 0
        r = join(c, "app", "m1")
        r = beat(c, "app", "m1", r.member_epoch)
        epoch = r.member_epoch
        beat(c, "app", "m1", epoch, [SGH.TaskIds(subtopology_id="0", partitions=[0, 1])])
        oc = m.OffsetCommitRequest
        res = c.request(oc(group_id="app", generation_id_or_member_epoch=epoch, member_id="m1", topics=[
            oc.OffsetCommitRequestTopic(name="in", partitions=[oc.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1)])]), 9)
        assert res.topics[0].partitions[0].error_code == 0
        rows = [g for g in con.get("groups").json()["groups"] if g["group_id"] == "app"]
        assert [(g["type"], g["state"], g["members"], g["lag"]) for g in rows] == [("streams", "Stable", 1, 2)]
        g = con.get("groups/app").json()
        assert (g["type"], g["state"]) == ("streams", "Stable")
        (mem,) = g["members"]
        assert mem["assignment"] == [{"topic": "in", "partitions": [0, 1]}]
        assert mem["tasks"] == {"active": ["0_0", "0_1"], "standby": [], "warmup": []}
        assert {(o["topic"], o["partition"], o["committed"], o["lag"], o["member"]) for o in g["offsets"]} == {
            ("in", 0, 1, 2, "m1"), ("in", 1, None, None, "m1")}
        s = scrape(b)
        assert val(s, "kafkalite_group_type", consumergroup="app", type="streams") == 1
        assert val(s, "kafkalite_group_type", consumergroup="app", type="classic") == 0
        assert val(s, "kafka_consumergroup_members", consumergroup="app") == 1
