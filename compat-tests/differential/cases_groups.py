"""Differential cases of the group APIs: classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), offsets
(OffsetCommit, OffsetFetch, OffsetDelete), DescribeGroups, ListGroups, DeleteGroups, KIP-848 consumer groups
(ConsumerGroupHeartbeat, ConsumerGroupDescribe) and share groups (ShareGroupHeartbeat, ShareGroupDescribe,
ShareFetch, ShareAcknowledge, Describe/Alter/DeleteShareGroupOffsets): the success path and the errors a client
meets (unknown member, illegal generation, fenced member epoch, invalid session timeout, inconsistent protocol,
unknown group, non-empty group, unknown topic, no share session).

A case that changes a group's state works on a group of its own per version (``diff-<case>-v<N>``), so every
version starts from the same state on both brokers; setup joins members and commits offsets, and puts the
member id and generation each broker chose into ``ctx``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from differential.helpers import Ctx, create, topic_of, warm_coordinator
from differential.wireconn import WireConn
from kafkalite_wire import messages as m

SESSION_MS = 10_000
META = b"\x00\x03\x00\x00\x00\x01\x00\x04diff\xff\xff\xff\xff"   # consumer protocol subscription bytes (opaque here)
MEMBER_ID_REQUIRED = 79
J, S, H, L = m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest, m.LeaveGroupRequest
OC, OF, OD = m.OffsetCommitRequest, m.OffsetFetchRequest, m.OffsetDeleteRequest


def group_of(case: str, ctx: Ctx) -> str:
    return f"diff-{case}-v{ctx['version']}"


def join_req(group: str, member_id: str = "", protocol_type: str = "consumer", session: int = SESSION_MS) -> Any:
    return J(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=30_000, member_id=member_id,
             protocol_type=protocol_type, protocols=[J.JoinGroupRequestProtocol(name="range", metadata=META)])


def join(conn: WireConn, ctx: Ctx, group: str, sync: bool = True) -> None:
    """Join ``group`` as its only member (v5: the member id the broker asks for first), then SyncGroup as the
    leader: the group is Stable. ctx gets group, member, generation."""
    warm_coordinator(conn, ctx, group, 0)
    r = conn.request(join_req(group), 5)
    if r.error_code == MEMBER_ID_REQUIRED:
        r = conn.request(join_req(group, r.member_id), 5)
    if r.error_code:
        raise RuntimeError(f"setup: JoinGroup {group}: error {r.error_code}")
    ctx.update(group=group, member=r.member_id, generation=r.generation_id)
    if sync:
        s = conn.request(S(group_id=group, generation_id=r.generation_id, member_id=r.member_id,
                           assignments=[S.SyncGroupRequestAssignment(member_id=r.member_id, assignment=b"assigned")]), 3)
        if s.error_code:
            raise RuntimeError(f"setup: SyncGroup {group}: error {s.error_code}")


def commit_req(v: int, ctx: Ctx, group: str, topic: str, offset: int, generation: int = -1, member: str = "") -> Any:
    tid = ctx.get("topic_ids", {}).get(topic, uuid.UUID(int=0x5EED))
    t = OC.OffsetCommitRequestTopic(name=topic if v < 10 else "", partitions=[OC.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=offset, committed_metadata="diff")])
    if v >= 10:
        t.topic_id = tid
    return OC(group_id=group, generation_id_or_member_epoch=generation, member_id=member, topics=[t])


def fetch_req(v: int, ctx: Ctx, group: str, topic: str | None) -> Any:
    if v >= 8:
        topics = None
        if topic is not None:
            t = OF.OffsetFetchRequestTopics(name=topic if v < 10 else "", partition_indexes=[0])
            if v >= 10:
                t.topic_id = ctx.get("topic_ids", {}).get(topic, uuid.UUID(int=0x5EED))
            topics = [t]
        return OF(groups=[OF.OffsetFetchRequestGroup(group_id=group, topics=topics)])
    return OF(group_id=group, topics=None if topic is None else [
        OF.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])])


def add_cases(add: Callable[..., None]) -> None:
    topic = topic_of("groups")

    def with_topic(conn: WireConn, ctx: Ctx) -> None:
        create(conn, ctx, topic, 1)
        warm_coordinator(conn, ctx, "diff-warm", 0)

    def joined(name: str, sync: bool = True) -> Callable[[WireConn, Ctx], None]:
        def setup(conn: WireConn, ctx: Ctx) -> None:
            with_topic(conn, ctx)
            join(conn, ctx, group_of(name, ctx), sync)
        return setup

    def committed(name: str) -> Callable[[WireConn, Ctx], None]:
        def setup(conn: WireConn, ctx: Ctx) -> None:
            with_topic(conn, ctx)
            g = group_of(name, ctx)
            warm_coordinator(conn, ctx, g, 0)
            r = conn.request(commit_req(8, ctx, g, topic, 5), 8)
            if r.topics[0].partitions[0].error_code:
                raise RuntimeError(f"setup: OffsetCommit {g}: {r}")
            ctx["group"] = g
        return setup

    # JoinGroup
    add("join_group_new_member", m.JoinGroupRequest, lambda v, ctx: join_req(ctx["group"]),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("join-new", ctx))),
        doc="a new member of a new group (v4+: MEMBER_ID_REQUIRED with the id to use)")
    add("join_group_invalid_session_timeout", m.JoinGroupRequest,
        lambda v, ctx: join_req(ctx["group"], session=1),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("join-session", ctx))),
        doc="session timeout 1 ms: INVALID_SESSION_TIMEOUT")
    add("join_group_unknown_member", m.JoinGroupRequest, lambda v, ctx: join_req(ctx["group"], "diff-nobody"),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("join-unknown", ctx))),
        doc="a member id the group never gave: UNKNOWN_MEMBER_ID")
    add("join_group_inconsistent_protocol", m.JoinGroupRequest,
        lambda v, ctx: join_req(ctx["group"], protocol_type="connect"),
        joined("join-protocol"), doc="protocol type 'connect' in a 'consumer' group: INCONSISTENT_GROUP_PROTOCOL")

    # SyncGroup
    def sync(v: int, ctx: Ctx, generation: int | None = None, member: str | None = None) -> Any:
        mid = ctx.get("member", "diff-nobody") if member is None else member
        return S(group_id=ctx["group"], generation_id=ctx.get("generation", 1) if generation is None else generation,
                 member_id=mid, protocol_type="consumer", protocol_name="range",
                 assignments=[S.SyncGroupRequestAssignment(member_id=mid, assignment=b"assigned")])

    add("sync_group_leader", m.SyncGroupRequest, lambda v, ctx: sync(v, ctx), joined("sync-leader", sync=False),
        doc="the leader's SyncGroup after its JoinGroup: its assignment comes back")
    add("sync_group_illegal_generation", m.SyncGroupRequest, lambda v, ctx: sync(v, ctx, generation=99),
        joined("sync-gen", sync=False), doc="generation 99: ILLEGAL_GENERATION")
    add("sync_group_unknown_group", m.SyncGroupRequest, lambda v, ctx: sync(v, ctx),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("sync-unknown", ctx))),
        doc="a group that does not exist")

    # Heartbeat
    def hb(v: int, ctx: Ctx, generation: int | None = None) -> Any:
        return H(group_id=ctx["group"], generation_id=ctx.get("generation", 1) if generation is None else generation,
                 member_id=ctx.get("member", "diff-nobody"))

    add("heartbeat_stable", m.HeartbeatRequest, lambda v, ctx: hb(v, ctx), joined("hb-ok"),
        doc="the member of a Stable group")
    add("heartbeat_illegal_generation", m.HeartbeatRequest, lambda v, ctx: hb(v, ctx, 99), joined("hb-gen"),
        doc="generation 99: ILLEGAL_GENERATION")
    add("heartbeat_unknown_group", m.HeartbeatRequest, lambda v, ctx: hb(v, ctx),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("hb-unknown", ctx))),
        doc="a group that does not exist")

    # LeaveGroup
    def leave(v: int, ctx: Ctx) -> Any:
        mid = ctx.get("member", "diff-nobody")
        if v >= 3:
            return L(group_id=ctx["group"], members=[L.MemberIdentity(member_id=mid)])
        return L(group_id=ctx["group"], member_id=mid)

    add("leave_group_member", m.LeaveGroupRequest, leave, joined("leave-ok"), doc="the only member leaves")
    add("leave_group_unknown_member", m.LeaveGroupRequest, leave,
        lambda conn, ctx: (joined("leave-unknown")(conn, ctx), ctx.update(member="diff-nobody")),
        doc="a member id the group does not have: UNKNOWN_MEMBER_ID")

    # OffsetCommit
    add("offset_commit_simple", m.OffsetCommitRequest,
        lambda v, ctx: commit_req(v, ctx, ctx["group"], topic, 7),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("oc-simple", ctx))),
        doc="generation -1, no member: a simple commit to a new group", min_version=2)
    add("offset_commit_unknown_topic", m.OffsetCommitRequest,
        lambda v, ctx: commit_req(v, ctx, ctx["group"], "diff-no-such-topic", 7),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("oc-unknown", ctx))),
        doc="a topic that does not exist (v10: an unknown topic id)", min_version=2)
    add("offset_commit_illegal_generation", m.OffsetCommitRequest,
        lambda v, ctx: commit_req(v, ctx, ctx["group"], topic, 7, generation=99, member=ctx["member"]),
        joined("oc-gen"), doc="a member commits with generation 99: ILLEGAL_GENERATION", min_version=2)
    add("offset_commit_member", m.OffsetCommitRequest,
        lambda v, ctx: commit_req(v, ctx, ctx["group"], topic, 9, generation=ctx["generation"],
                                  member=ctx["member"]),
        joined("oc-member"), doc="the member of a Stable group commits with its generation", min_version=2)

    # OffsetFetch
    add("offset_fetch_committed", m.OffsetFetchRequest, lambda v, ctx: fetch_req(v, ctx, ctx["group"], topic),
        committed("of-committed"), doc="the partition committed at 5 in setup", min_version=1)
    add("offset_fetch_all_topics", m.OffsetFetchRequest, lambda v, ctx: fetch_req(v, ctx, ctx["group"], None),
        committed("of-all"), doc="topics null: every committed offset", min_version=2)
    add("offset_fetch_unknown_group", m.OffsetFetchRequest, lambda v, ctx: fetch_req(v, ctx, ctx["group"], topic),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("of-unknown", ctx))),
        doc="a group that never committed: offset -1", min_version=1)
    add("offset_fetch_unknown_topic", m.OffsetFetchRequest,
        lambda v, ctx: fetch_req(v, ctx, ctx["group"], "diff-no-such-topic"), committed("of-unknown-topic"),
        doc="a topic that does not exist (v10: an unknown topic id)", min_version=1)

    # DescribeGroups
    add("describe_groups_unknown", m.DescribeGroupsRequest,
        lambda v, ctx: m.DescribeGroupsRequest(groups=["diff-no-such-group"]),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-no-such-group", 0),
        doc="a group that does not exist (v6: GROUP_ID_NOT_FOUND)")
    add("describe_groups_stable", m.DescribeGroupsRequest,
        lambda v, ctx: m.DescribeGroupsRequest(groups=[ctx["group"]], include_authorized_operations=True),
        joined("dg-stable"), doc="a Stable group of one member, with authorized operations (v3+)")
    add("describe_groups_empty", m.DescribeGroupsRequest,
        lambda v, ctx: m.DescribeGroupsRequest(groups=[ctx["group"]]), committed("dg-empty"),
        doc="a group with committed offsets and no member: Empty")

    # ListGroups
    add("list_groups_filtered", m.ListGroupsRequest,
        lambda v, ctx: m.ListGroupsRequest(states_filter=["CompletingRebalance"], types_filter=["classic"]),
        with_topic, doc="a state no group of these cases is in (v4+ filters states, v5+ types)", min_version=4)

    # DeleteGroups
    add("delete_groups_unknown", m.DeleteGroupsRequest,
        lambda v, ctx: m.DeleteGroupsRequest(groups_names=["diff-no-such-group"]),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-no-such-group", 0), doc="GROUP_ID_NOT_FOUND")
    add("delete_groups_empty", m.DeleteGroupsRequest, lambda v, ctx: m.DeleteGroupsRequest(groups_names=[ctx["group"]]),
        committed("delg-empty"), doc="an Empty group with offsets: deleted")
    add("delete_groups_non_empty", m.DeleteGroupsRequest,
        lambda v, ctx: m.DeleteGroupsRequest(groups_names=[ctx["group"]]), joined("delg-stable"),
        doc="a Stable group: NON_EMPTY_GROUP")

    # OffsetDelete
    def offset_delete(ctx: Ctx, name: str) -> Any:
        return OD(group_id=ctx["group"], topics=[OD.OffsetDeleteRequestTopic(
            name=name, partitions=[OD.OffsetDeleteRequestPartition(partition_index=0)])])

    add("offset_delete_empty_group", m.OffsetDeleteRequest, lambda v, ctx: offset_delete(ctx, topic),
        committed("od-empty"), doc="the committed offset of an Empty group: deleted")
    add("offset_delete_unknown_group", m.OffsetDeleteRequest, lambda v, ctx: offset_delete(ctx, topic),
        lambda conn, ctx: (with_topic(conn, ctx), ctx.update(group=group_of("od-unknown", ctx))),
        doc="GROUP_ID_NOT_FOUND")
    add("offset_delete_subscribed", m.OffsetDeleteRequest, lambda v, ctx: offset_delete(ctx, topic),
        joined("od-stable"), doc="a Stable group (its subscription is opaque here): the partition's answer")
    add_consumer_cases(add, topic, with_topic)
    add_share_cases(add, topic, with_topic)
    add_streams_cases(add, topic, with_topic)


def add_consumer_cases(add: Callable[..., None], topic: str, with_topic: Callable[[WireConn, Ctx], None]) -> None:
    # KIP-848 consumer groups
    CGH = m.ConsumerGroupHeartbeatRequest

    def cgh(v: int, ctx: Ctx, *, epoch: int = 0, member: str | None = None, topics: list[str] | None = None) -> Any:
        mid = member if member is not None else ("" if v == 0 else ctx["member_uuid"])
        return CGH(group_id=ctx["group"], member_id=mid, member_epoch=epoch, rebalance_timeout_ms=30_000,
                   subscribed_topic_names=[topic] if topics is None else topics, server_assignor="uniform",
                   topic_partitions=[])

    def cg_setup(name: str, joined_first: bool = False) -> Callable[[WireConn, Ctx], None]:
        def setup(conn: WireConn, ctx: Ctx) -> None:
            with_topic(conn, ctx)
            ctx.update(group=group_of(name, ctx), member_uuid=str(uuid.UUID(int=0xD1FF + ctx["version"])))
            if joined_first:
                r = conn.request(CGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=0,
                                     rebalance_timeout_ms=30_000, subscribed_topic_names=[topic],
                                     server_assignor="uniform", topic_partitions=[]), 1)
                if r.error_code:
                    raise RuntimeError(f"setup: ConsumerGroupHeartbeat {ctx['group']}: {r}")
        return setup

    add("consumer_group_heartbeat_join", m.ConsumerGroupHeartbeatRequest, lambda v, ctx: cgh(v, ctx),
        cg_setup("cgh-join"), doc="a new member subscribes to a 1-partition topic (v1: the client names itself)")
    add("consumer_group_heartbeat_unknown_member", m.ConsumerGroupHeartbeatRequest,
        lambda v, ctx: cgh(v, ctx, epoch=5, member=str(uuid.UUID(int=0xBAD))), cg_setup("cgh-unknown"),
        doc="member epoch 5 of a member the group does not have: UNKNOWN_MEMBER_ID")
    add("consumer_group_heartbeat_fenced_epoch", m.ConsumerGroupHeartbeatRequest,
        lambda v, ctx: cgh(v, ctx, epoch=7, member=ctx["member_uuid"]), cg_setup("cgh-fenced", True),
        doc="a member heartbeating with epoch 7 while the group knows it at 2: FENCED_MEMBER_EPOCH")
    add("consumer_group_heartbeat_leave", m.ConsumerGroupHeartbeatRequest,
        lambda v, ctx: CGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=-1),
        cg_setup("cgh-leave", True), doc="the only member leaves (epoch -1)")
    add("consumer_group_heartbeat_no_subscription", m.ConsumerGroupHeartbeatRequest,
        lambda v, ctx: CGH(group_id=ctx["group"], member_id="" if v == 0 else ctx["member_uuid"], member_epoch=0,
                           rebalance_timeout_ms=30_000, subscribed_topic_names=None, topic_partitions=[]),
        cg_setup("cgh-nosub"), doc="a joining member without a subscription: INVALID_REQUEST")
    add("consumer_group_describe_unknown", m.ConsumerGroupDescribeRequest,
        lambda v, ctx: m.ConsumerGroupDescribeRequest(group_ids=["diff-no-such-group"]),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-no-such-group", 0), doc="GROUP_ID_NOT_FOUND")
    add("consumer_group_describe_member", m.ConsumerGroupDescribeRequest,
        lambda v, ctx: m.ConsumerGroupDescribeRequest(group_ids=[ctx["group"]]), cg_setup("cgd-one", True),
        doc="a consumer group of one member")
    add("describe_groups_consumer_group", m.DescribeGroupsRequest,
        lambda v, ctx: m.DescribeGroupsRequest(groups=[ctx["group"]]), cg_setup("dg-consumer", True),
        doc="DescribeGroups of a KIP-848 group (not a classic group)")


def add_share_cases(add: Callable[..., None], topic: str, with_topic: Callable[[WireConn, Ctx], None]) -> None:
    # share groups
    SGH = m.ShareGroupHeartbeatRequest

    def share_setup(name: str) -> Callable[[WireConn, Ctx], None]:
        def setup(conn: WireConn, ctx: Ctx) -> None:
            with_topic(conn, ctx)
            ctx.update(group=group_of(name, ctx), member_uuid=str(uuid.UUID(int=0x5A4E + ctx["version"])))
        return setup

    def share_member(name: str, leave: bool = False) -> Callable[[WireConn, Ctx], None]:
        """A share group of one member subscribed to the topic (left again when ``leave``: an Empty group)."""
        def setup(conn: WireConn, ctx: Ctx) -> None:
            share_setup(name)(conn, ctx)
            r = conn.request(SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=0,
                                 subscribed_topic_names=[topic]), 1)
            if r.error_code:
                raise RuntimeError(f"setup: ShareGroupHeartbeat {ctx['group']}: {r}")
            if leave:
                conn.request(SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=-1), 1)
        return setup

    add("share_group_heartbeat_join", m.ShareGroupHeartbeatRequest,
        lambda v, ctx: SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=0,
                           subscribed_topic_names=[topic]), share_setup("sgh-join"), min_version=1,
        doc="a new share group member subscribes to a 1-partition topic")
    add("share_group_heartbeat_fenced_epoch", m.ShareGroupHeartbeatRequest,
        lambda v, ctx: SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=9,
                           subscribed_topic_names=[topic]), share_member("sgh-fenced"), min_version=1,
        doc="a member heartbeating with an epoch the group never gave it: FENCED_MEMBER_EPOCH")
    add("share_group_heartbeat_unknown_member", m.ShareGroupHeartbeatRequest,
        lambda v, ctx: SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=3,
                           subscribed_topic_names=[topic]), share_setup("sgh-unknown"), min_version=1,
        doc="member epoch 3 of a member the group does not have")
    add("share_group_describe_unknown", m.ShareGroupDescribeRequest,
        lambda v, ctx: m.ShareGroupDescribeRequest(group_ids=["diff-no-such-group"]), with_topic, min_version=1,
        doc="GROUP_ID_NOT_FOUND")
    SO = m.DescribeShareGroupOffsetsRequest
    add("describe_share_group_offsets_unknown", m.DescribeShareGroupOffsetsRequest,
        lambda v, ctx: SO(groups=[SO.DescribeShareGroupOffsetsRequestGroup(group_id="diff-no-such-group", topics=[
            SO.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0])])]), with_topic,
        doc="a share group that does not exist")

    def topic_id(ctx: Ctx) -> uuid.UUID:
        return ctx.get("topic_ids", {}).get(topic, uuid.UUID(int=0x5EED))

    SF, SA = m.ShareFetchRequest, m.ShareAcknowledgeRequest

    def share_fetch(ctx: Ctx, epoch: int, member: str | None = None) -> Any:
        return SF(group_id=ctx["group"], member_id=member or ctx["member_uuid"], share_session_epoch=epoch,
                  max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, max_records=10, batch_size=10,
                  topics=[SF.FetchTopic(topic_id=topic_id(ctx), partitions=[SF.FetchPartition(partition_index=0)])],
                  forgotten_topics_data=[])

    add("share_fetch_session_not_found", m.ShareFetchRequest, lambda v, ctx: share_fetch(ctx, 3),
        share_member("sf-nosession"), min_version=1,
        doc="share session epoch 3 with no session open: SHARE_SESSION_NOT_FOUND")
    add("share_fetch_not_a_member", m.ShareFetchRequest,
        lambda v, ctx: share_fetch(ctx, 0, str(uuid.UUID(int=0xBAD))), share_member("sf-stranger"), min_version=1,
        doc="a session opened by a member id the share group does not have")
    add("share_acknowledge_session_not_found", m.ShareAcknowledgeRequest,
        lambda v, ctx: SA(group_id=ctx["group"], member_id=ctx["member_uuid"], share_session_epoch=2, topics=[
            SA.AcknowledgeTopic(topic_id=topic_id(ctx), partitions=[SA.AcknowledgePartition(
                partition_index=0, acknowledgement_batches=[SA.AcknowledgementBatch(
                    first_offset=0, last_offset=0, acknowledge_types=[1])])])]),
        share_member("sa-nosession"), min_version=1, doc="ShareAcknowledge without a share session")
    add("share_acknowledge_epoch_zero", m.ShareAcknowledgeRequest,
        lambda v, ctx: SA(group_id=ctx["group"], member_id=ctx["member_uuid"], share_session_epoch=0, topics=[]),
        share_member("sa-zero"), min_version=1, doc="ShareAcknowledge cannot open a session (epoch 0)")
    ASO, DSO = m.AlterShareGroupOffsetsRequest, m.DeleteShareGroupOffsetsRequest

    def alter_share(ctx: Ctx, group: str, partition: int = 0, name: str | None = None) -> Any:
        return ASO(group_id=group, topics=[ASO.AlterShareGroupOffsetsRequestTopic(
            topic_name=name or topic, partitions=[ASO.AlterShareGroupOffsetsRequestPartition(
                partition_index=partition, start_offset=0)])])

    def offsets_set(name: str) -> Callable[[WireConn, Ctx], None]:
        """An Empty share group whose share-partition state AlterShareGroupOffsets initialised (at once on
        both brokers; a member's first heartbeat initialises it asynchronously on Kafka)."""
        def setup(conn: WireConn, ctx: Ctx) -> None:
            with_topic(conn, ctx)
            ctx["group"] = group_of(name, ctx)
            r = conn.request(alter_share(ctx, ctx["group"]), 0)
            if r.error_code or any(p.error_code for t in r.responses for p in t.partitions):
                raise RuntimeError(f"setup: AlterShareGroupOffsets {ctx['group']}: {r}")
        return setup

    add("alter_share_group_offsets_new_group", m.AlterShareGroupOffsetsRequest,
        lambda v, ctx: alter_share(ctx, group_of("aso-new", ctx)), with_topic,
        doc="a group that does not exist yet: Kafka 4.x creates it, empty, with the offset")
    add("alter_share_group_offsets_invalid_group", m.AlterShareGroupOffsetsRequest,
        lambda v, ctx: alter_share(ctx, ""), with_topic, doc="an empty group id: INVALID_GROUP_ID")
    add("alter_share_group_offsets_empty_group", m.AlterShareGroupOffsetsRequest,
        lambda v, ctx: alter_share(ctx, ctx["group"]), share_member("aso-empty", leave=True),
        doc="the start offset of an Empty share group's partition")
    add("alter_share_group_offsets_active_group", m.AlterShareGroupOffsetsRequest,
        lambda v, ctx: alter_share(ctx, ctx["group"]), share_member("aso-active"),
        doc="a share group with a member: NON_EMPTY_GROUP")
    add("alter_share_group_offsets_unknown_topic", m.AlterShareGroupOffsetsRequest,
        lambda v, ctx: alter_share(ctx, ctx["group"], name="diff-no-such-topic"), share_member("aso-topic", True),
        doc="a topic that does not exist")
    add("delete_share_group_offsets_unknown_group", m.DeleteShareGroupOffsetsRequest,
        lambda v, ctx: DSO(group_id="diff-no-such-group", topics=[DSO.DeleteShareGroupOffsetsRequestTopic(
            topic_name=topic)]), with_topic, doc="GROUP_ID_NOT_FOUND")
    add("delete_share_group_offsets_empty_group", m.DeleteShareGroupOffsetsRequest,
        lambda v, ctx: DSO(group_id=ctx["group"], topics=[DSO.DeleteShareGroupOffsetsRequestTopic(
            topic_name=topic)]), offsets_set("dso-empty"),
        doc="an Empty share group's offsets (set by AlterShareGroupOffsets: initialised on both brokers)")
    other = topic_of("groups-other")

    def no_state(conn: WireConn, ctx: Ctx) -> None:
        create(conn, ctx, other, 1)
        share_member("dso-nostate", leave=True)(conn, ctx)

    add("delete_share_group_offsets_no_state", m.DeleteShareGroupOffsetsRequest,
        lambda v, ctx: DSO(group_id=ctx["group"], topics=[DSO.DeleteShareGroupOffsetsRequestTopic(
            topic_name=other)]), no_state,
        doc="a topic the Empty share group never consumed: no offset information to delete")

    # ReadShareGroupStateSummary: the share coordinator's read of the persisted state (what Kafka's persister
    # sends for DescribeShareGroupOffsets); both brokers have __share_group_state once an offset was set
    RSS = m.ReadShareGroupStateSummaryRequest

    def summary(ctx: Ctx, group: str, partitions: list[int]) -> Any:
        return RSS(group_id=group, topics=[RSS.ReadStateSummaryData(topic_id=topic_id(ctx), partitions=[
            RSS.PartitionData(partition=p, leader_epoch=0) for p in partitions])])

    add("read_share_group_state_summary", m.ReadShareGroupStateSummaryRequest,
        lambda v, ctx: summary(ctx, ctx["group"], [0]), offsets_set("rss-set"),
        doc="a share-partition whose state AlterShareGroupOffsets initialised at 0")
    add("read_share_group_state_summary_errors", m.ReadShareGroupStateSummaryRequest,
        lambda v, ctx: summary(ctx, ctx["group"], [5, -1]), offsets_set("rss-errors"),
        doc="an unknown partition (UNKNOWN_TOPIC_OR_PARTITION) and a negative one (INVALID_REQUEST)")
    add("read_share_group_state_summary_no_state", m.ReadShareGroupStateSummaryRequest,
        lambda v, ctx: summary(ctx, "diff-no-such-group", [0]), offsets_set("rss-nostate"),
        doc="a group without state: Kafka's uninitialised answer (start offset -1)")
    add("read_share_group_state_summary_empty_group_id", m.ReadShareGroupStateSummaryRequest,
        lambda v, ctx: summary(ctx, "", [0]), offsets_set("rss-emptyid"), doc="an empty group id: an empty answer")

    # Initialize/Read/Write/DeleteShareGroupState (83-86): the share coordinator's state RPCs, on a share-partition
    # of a group of their own ("<case group>-raw"; __share_group_state exists once an offset was set)
    SI, SR, SW, SD = (m.InitializeShareGroupStateRequest, m.ReadShareGroupStateRequest,
                      m.WriteShareGroupStateRequest, m.DeleteShareGroupStateRequest)

    def s_init(ctx: Ctx, state_epoch: int, start: int, partitions: tuple[int, ...] = (0,)) -> Any:
        return SI(group_id=ctx["group"], topics=[SI.InitializeStateData(topic_id=topic_id(ctx), partitions=[
            SI.PartitionData(partition=p, state_epoch=state_epoch, start_offset=start) for p in partitions])])

    def s_read(ctx: Ctx, leader_epoch: int = 0, partitions: tuple[int, ...] = (0,)) -> Any:
        return SR(group_id=ctx["group"], topics=[SR.ReadStateData(topic_id=topic_id(ctx), partitions=[
            SR.PartitionData(partition=p, leader_epoch=leader_epoch) for p in partitions])])

    def s_write(ctx: Ctx, state_epoch: int, leader_epoch: int = 0, start: int = -1,
                batches: tuple[tuple[int, int, int, int], ...] = (), partition: int = 0) -> Any:
        return SW(group_id=ctx["group"], topics=[SW.WriteStateData(topic_id=topic_id(ctx), partitions=[
            SW.PartitionData(partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch,
                             start_offset=start, delivery_complete_count=-1, state_batches=[
                                 SW.StateBatch(first_offset=a, last_offset=b, delivery_state=st, delivery_count=n)
                                 for a, b, st, n in batches])])])

    def s_delete(ctx: Ctx, partitions: tuple[int, ...] = (0,)) -> Any:
        return SD(group_id=ctx["group"], topics=[SD.DeleteStateData(topic_id=topic_id(ctx), partitions=[
            SD.PartitionData(partition=p) for p in partitions])])

    def raw_state(name: str, *steps: Callable[[Ctx], tuple[Any, int]]) -> Callable[[WireConn, Ctx], None]:
        """A group of its own, then ``steps`` (request, version) sent in order; each must succeed."""
        base = offsets_set(name)

        def setup(conn: WireConn, ctx: Ctx) -> None:
            base(conn, ctx)
            ctx["group"] = f"{ctx['group']}-raw"
            for step in steps:
                req, version = step(ctx)
                r = conn.request(req, version)
                codes = [p.error_code for t in r.results for p in t.partitions]
                if not codes or any(codes):
                    raise RuntimeError(f"setup: {type(req).__name__} {ctx['group']}: {r}")
        return setup

    def init_at(state_epoch: int, start: int) -> Callable[[Ctx], tuple[Any, int]]:
        return lambda ctx: (s_init(ctx, state_epoch, start), 0)

    add("initialize_share_group_state", m.InitializeShareGroupStateRequest, lambda v, ctx: s_init(ctx, 1, 4),
        raw_state("isgs-new"), doc="a share-partition without state: a snapshot at state epoch 1, start 4")
    add("initialize_share_group_state_errors", m.InitializeShareGroupStateRequest,
        lambda v, ctx: s_init(ctx, 0, 0, (5, -1)), raw_state("isgs-errors"),
        doc="an unknown partition (UNKNOWN_TOPIC_OR_PARTITION) and a negative one (INVALID_REQUEST)")
    add("initialize_share_group_state_fenced", m.InitializeShareGroupStateRequest, lambda v, ctx: s_init(ctx, 2, 0),
        raw_state("isgs-fenced", init_at(3, 0)), doc="a state epoch below the recorded one: FENCED_STATE_EPOCH")
    add("initialize_share_group_state_empty_group_id", m.InitializeShareGroupStateRequest,
        lambda v, ctx: SI(group_id="", topics=[SI.InitializeStateData(topic_id=topic_id(ctx), partitions=[
            SI.PartitionData(partition=0, state_epoch=0, start_offset=0)])]), raw_state("isgs-emptyid"),
        doc="an empty group id: an empty answer")
    add("read_share_group_state", m.ReadShareGroupStateRequest, lambda v, ctx: s_read(ctx),
        raw_state("rsgs", init_at(1, 2), lambda ctx: (s_write(ctx, 1, batches=((2, 4, 2, 1), (3, 6, 0, 2))), 1)),
        doc="after Initialize and a Write of overlapping batches (the higher delivery count wins)")
    add("read_share_group_state_uninitialized", m.ReadShareGroupStateRequest, lambda v, ctx: s_read(ctx),
        raw_state("rsgs-none"), doc="a share-partition without state: INVALID_REQUEST")
    add("read_share_group_state_new_leader_epoch", m.ReadShareGroupStateRequest, lambda v, ctx: s_read(ctx, 2),
        raw_state("rsgs-epoch", init_at(0, 0), lambda ctx: (s_read(ctx, 5), 0)),
        doc="a leader epoch below the one a read recorded: FENCED_LEADER_EPOCH")
    add("read_share_group_state_errors", m.ReadShareGroupStateRequest, lambda v, ctx: s_read(ctx, 0, (5, -1)),
        raw_state("rsgs-errors"), doc="an unknown partition and a negative one")
    add("write_share_group_state", m.WriteShareGroupStateRequest,
        lambda v, ctx: s_write(ctx, 1, start=3, batches=((3, 5, 2, 1),)), raw_state("wsgs", init_at(1, 0)),
        doc="state batches at the recorded state epoch")
    add("write_share_group_state_uninitialized", m.WriteShareGroupStateRequest, lambda v, ctx: s_write(ctx, 0),
        raw_state("wsgs-none"), doc="a write before Initialize: INVALID_REQUEST")
    add("write_share_group_state_fenced_state_epoch", m.WriteShareGroupStateRequest,
        lambda v, ctx: s_write(ctx, 1), raw_state("wsgs-se", init_at(2, 0)), doc="FENCED_STATE_EPOCH")
    add("write_share_group_state_fenced_leader_epoch", m.WriteShareGroupStateRequest,
        lambda v, ctx: s_write(ctx, 0, leader_epoch=1), raw_state("wsgs-le", init_at(0, 0),
                                                                  lambda ctx: (s_read(ctx, 4), 0)),
        doc="a leader epoch below the one a read recorded: FENCED_LEADER_EPOCH")
    add("write_share_group_state_negative_epoch", m.WriteShareGroupStateRequest,
        lambda v, ctx: s_write(ctx, 0, leader_epoch=-1), raw_state("wsgs-neg", init_at(0, 0)),
        doc="a negative leader epoch: INVALID_REQUEST")
    add("write_share_group_state_unknown_partition", m.WriteShareGroupStateRequest,
        lambda v, ctx: s_write(ctx, 0, partition=5), raw_state("wsgs-unknown"),
        doc="a partition the topic does not have (no state either: INVALID_REQUEST comes first)")
    add("delete_share_group_state", m.DeleteShareGroupStateRequest, lambda v, ctx: s_delete(ctx),
        raw_state("dsgs", init_at(0, 0)), doc="a share-partition with state: a tombstone")
    add("delete_share_group_state_no_state", m.DeleteShareGroupStateRequest, lambda v, ctx: s_delete(ctx, (0, 5, -1)),
        raw_state("dsgs-none"), doc="no state (nothing to do), an unknown partition and a negative one")

def add_streams_cases(add: Callable[..., None], topic: str, with_topic: Callable[[WireConn, Ctx], None]) -> None:
    # KIP-1071 streams groups: a one-subtopology topology reading ``topic`` (1 partition) with a changelog topic
    SGH, SGD = m.StreamsGroupHeartbeatRequest, m.StreamsGroupDescribeRequest

    def topology(group: str, source: str = topic) -> Any:
        info = SGH.TopicInfo(name=f"{group}-store-changelog", partitions=0, replication_factor=-1,
                             topic_configs=[SGH.KeyValue(key="cleanup.policy", value="compact")])
        return SGH.Topology(epoch=0, subtopologies=[SGH.Subtopology(
            subtopology_id="0", source_topics=[source], state_changelog_topics=[info])])

    def join(v: int, ctx: Ctx, *, source: str = topic, epoch: int = 0, member: str | None = None) -> Any:
        return SGH(group_id=ctx["group"], member_id=member or ctx["member_uuid"], member_epoch=epoch,
                   rebalance_timeout_ms=30_000, topology=topology(ctx["group"], source) if epoch == 0 else None,
                   process_id=ctx["member_uuid"], active_tasks=[] if epoch == 0 else None,
                   standby_tasks=[] if epoch == 0 else None, warmup_tasks=[] if epoch == 0 else None)

    def sg_setup(name: str, joined_first: bool = False) -> Callable[[WireConn, Ctx], None]:
        def setup(conn: WireConn, ctx: Ctx) -> None:
            with_topic(conn, ctx)
            ctx.update(group=group_of(name, ctx), member_uuid=str(uuid.UUID(int=0x5D1FF + ctx["version"])))
            if joined_first:
                r = conn.request(join(ctx["version"], ctx), min(ctx["version"], 1))
                if r.error_code:
                    raise RuntimeError(f"setup: StreamsGroupHeartbeat {ctx['group']}: {r}")
        return setup

    add("streams_group_heartbeat_missing_source", SGH,
        lambda v, ctx: join(v, ctx, source="diff-no-such-topic"), sg_setup("stgh-nosrc"),
        doc="a member joins with a topology whose source topic does not exist: status MISSING_SOURCE_TOPICS")
    add("streams_group_heartbeat_unknown_member", SGH,
        lambda v, ctx: join(v, ctx, epoch=5, member=str(uuid.UUID(int=0xBAD))), sg_setup("stgh-unknown", True),
        doc="member epoch 5 of a member the group does not have: UNKNOWN_MEMBER_ID")
    add("streams_group_heartbeat_fenced_epoch", SGH,
        lambda v, ctx: join(v, ctx, epoch=7), sg_setup("stgh-fenced", True),
        doc="a member heartbeating with epoch 7 while the group knows it at 1: FENCED_MEMBER_EPOCH")
    add("streams_group_heartbeat_leave", SGH,
        lambda v, ctx: SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=-1),
        sg_setup("stgh-leave", True), doc="the only member leaves (epoch -1)")
    add("streams_group_heartbeat_no_topology", SGH,
        lambda v, ctx: SGH(group_id=ctx["group"], member_id=ctx["member_uuid"], member_epoch=0,
                           rebalance_timeout_ms=30_000, process_id="p", active_tasks=[], standby_tasks=[],
                           warmup_tasks=[]),
        sg_setup("stgh-notopo"), doc="a joining member without a topology: INVALID_REQUEST")
    add("streams_group_heartbeat_no_member_id", SGH,
        lambda v, ctx: join(v, ctx, member=" "), sg_setup("stgh-nomember"),
        doc="a blank member id: INVALID_REQUEST")
    add("streams_group_describe_unknown", SGD,
        lambda v, ctx: SGD(group_ids=["diff-no-such-group"]),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-no-such-group", 0), doc="GROUP_ID_NOT_FOUND")
    add("streams_group_describe_member", SGD,
        lambda v, ctx: SGD(group_ids=[ctx["group"]]), sg_setup("stgd-one", True),
        doc="a streams group of one member, its changelog topic still missing (topology not ready)")
    add("join_group_streams_group", J, lambda v, ctx: join_req(ctx["group"], "" if v < 4 else "m-x"),
        sg_setup("stjg-one", True), doc="a classic JoinGroup to a streams group of one member")
    add("consumer_group_heartbeat_streams_group", m.ConsumerGroupHeartbeatRequest,
        lambda v, ctx: m.ConsumerGroupHeartbeatRequest(
            group_id=ctx["group"], member_id=str(uuid.UUID(int=0xC0FFEE)), member_epoch=0,
            rebalance_timeout_ms=30_000, subscribed_topic_names=[topic], topic_partitions=[]),
        sg_setup("stcg-one", True), min_version=1, doc="a consumer-protocol member joining a streams group")
    add("streams_group_heartbeat_consumer_group", SGH, lambda v, ctx: join(v, ctx, member=ctx["other"]),
        lambda conn, ctx: (sg_setup("stsc-one")(conn, ctx), ctx.update(other=str(uuid.UUID(int=0xFACE))),
                           conn.request(m.ConsumerGroupHeartbeatRequest(
                               group_id=ctx["group"], member_id=str(uuid.UUID(int=0xC0DE + ctx["version"])),
                               member_epoch=0, rebalance_timeout_ms=30_000, subscribed_topic_names=[topic],
                               topic_partitions=[]), 1)),
        doc="a streams member joining a consumer group of one member")
    add("list_groups_streams", m.ListGroupsRequest, lambda v, ctx: m.ListGroupsRequest(types_filter=["streams"]),
        sg_setup("stlg-one", True), min_version=5, doc="ListGroups of type streams")
    add("describe_groups_streams_group", m.DescribeGroupsRequest,
        lambda v, ctx: m.DescribeGroupsRequest(groups=[ctx["group"]]), sg_setup("stdg-one", True),
        doc="DescribeGroups of a streams group (not a classic group)")
    SGT = m.StreamsGroupTopologyDescriptionUpdateRequest
    add("streams_group_topology_description_update_no_plugin", SGT,
        lambda v, ctx: SGT(group_id=ctx["group"], member_id=ctx["member_uuid"], topology_epoch=0,
                           topology_description=SGT.TopologyDescription(subtopologies=[
                               SGT.TopologyDescriptionSubtopology(subtopology_id="0")])),
        sg_setup("stgt-one", True), doc="no topology description plugin configured (Kafka's default)")
