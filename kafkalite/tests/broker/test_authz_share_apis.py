"""The authorizer on the share-group APIs (KIP-932), over the wire: an anonymous PLAINTEXT client is refused
as Kafka's KafkaApis refuses it, then works once ``User:admin`` (a super user on a SASL listener) grants it
ACLs through CreateAcls; topics it may not read or describe stay out of reach per partition."""
from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kafkalite import Broker
from kafkalite.authz.acl import Op
from kafkalite.tests.support import saslclient as sc
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterShareGroupOffsetsRequest,
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'
GAF, TAF = ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED
FR, AR = ShareFetchRequest, ShareAcknowledgeRequest
SO, AO, DO = DescribeShareGroupOffsetsRequest, AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest


@pytest.fixture(scope="module")
def clients() -> Iterator[tuple[RawClient, RawClient, dict[str, uuid.UUID]]]:
    with Broker(overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }) as b, RawClient(*b.addresses[0]) as anon, RawClient(*b.addresses[1], timeout=10) as admin:
        sc.api_versions(admin)
        assert sc.login_plain(admin, "admin", "admin-secret").error_code == 0
        made = admin.request(CreateTopicsRequest(timeout_ms=5000, topics=[CreateTopicsRequest.CreatableTopic(
            name=n, num_partitions=1, replication_factor=1) for n in ("s", "x")]), 7)
        yield anon, admin, {t.name: t.topic_id for t in made.topics}


def _grant(admin: RawClient, rtype: int, name: str, op: Op) -> None:
    r = admin.request(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
        resource_type=rtype, resource_name=name, resource_pattern_type=3, principal="User:ANONYMOUS", host="*",
        operation=int(op), permission_type=3)]), 3)
    assert r.results[0].error_code == 0


def _hb(c: RawClient, group: str, member: str, epoch: int, topics: list[str] | None = None):  # type: ignore[no-untyped-def]
    return c.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                                subscribed_topic_names=topics), 1)


def _fetch(c: RawClient, epoch: int, ids: list[uuid.UUID], acks: bool = False):  # type: ignore[no-untyped-def]
    batches = [FR.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])] if acks else []
    return c.request(FR(group_id="sg", member_id="m", share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
                        max_bytes=1 << 20, max_records=100, batch_size=100, topics=[
                            FR.FetchTopic(topic_id=t, partitions=[FR.FetchPartition(
                                partition_index=0, acknowledgement_batches=batches)]) for t in ids]), 1)


def _ack(c: RawClient, epoch: int, tid: uuid.UUID):  # type: ignore[no-untyped-def]
    return c.request(AR(group_id="sg", member_id="m", share_session_epoch=epoch, topics=[AR.AcknowledgeTopic(
        topic_id=tid, partitions=[AR.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            AR.AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[1])])])]), 1)


def _offsets(c: RawClient, topics: list[str] | None):  # type: ignore[no-untyped-def]
    ts = None if topics is None else [SO.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=[0])
                                      for t in topics]
    return c.request(SO(groups=[SO.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=ts)]), 1).groups[0]


def _alter(c: RawClient):  # type: ignore[no-untyped-def]
    return c.request(AO(group_id="sg", topics=[AO.AlterShareGroupOffsetsRequestTopic(
        topic_name=t, partitions=[AO.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=0)])
        for t in ("s", "x")]), 0)


def _delete(c: RawClient):  # type: ignore[no-untyped-def]
    return c.request(DO(group_id="sg", topics=[DO.DeleteShareGroupOffsetsRequestTopic(topic_name=t)
                                               for t in ("s", "x")]), 0)


def test_share_apis_need_kafkas_acls(clients: tuple[RawClient, RawClient, dict[str, uuid.UUID]]) -> None:
    anon, admin, ids = clients
    assert _hb(admin, "hx", "am", 0, ["x"]).error_code == 0          # admin's group, assigned x
    # nothing granted: every API refused at the group
    assert _hb(anon, "sg", "m", 0, ["s"]).error_code == GAF
    d = anon.request(ShareGroupDescribeRequest(group_ids=["sg"], include_authorized_operations=True), 1)
    assert d.groups[0].error_code == GAF
    assert (_fetch(anon, 0, [ids["s"]]).error_code, _ack(anon, 1, ids["s"]).error_code) == (GAF, GAF)
    assert _offsets(anon, None).error_code == GAF
    assert (_alter(anon).error_code, _alter(anon).error_message) == (GAF, "Group authorization failed.")
    assert _delete(anon).error_code == GAF
    # READ on the group and on topic s
    _grant(admin, 3, "sg", Op.READ)
    _grant(admin, 2, "s", Op.READ)
    assert _hb(anon, "sg", "m", 0, ["s", "x"]).error_code == TAF      # x is not describable
    hb = _hb(anon, "sg", "m", 0, ["s"])
    assert hb.error_code == 0 and hb.member_epoch >= 1
    d = anon.request(ShareGroupDescribeRequest(group_ids=["sg", "hx"], include_authorized_operations=True), 1)
    assert (d.groups[0].error_code, d.groups[0].authorized_operations) == (0, (1 << Op.READ) | (1 << Op.DESCRIBE))
    assert d.groups[1].error_code == GAF
    # a session over s and x: x's partition is refused, s's served; acknowledgements on x refused too
    r = _fetch(anon, 0, [ids["s"], ids["x"]])
    assert r.error_code == 0
    assert {t.topic_id: t.partitions[0].error_code for t in r.responses} == {ids["x"]: TAF}   # s has no records
    r = _fetch(anon, 1, [ids["x"]], acks=True)
    assert {t.topic_id: (t.partitions[0].error_code, t.partitions[0].acknowledge_error_code)
            for t in r.responses} == {ids["x"]: (TAF, TAF)}
    assert {t.topic_id: t.partitions[0].error_code for t in _ack(anon, 2, ids["x"]).responses} == {ids["x"]: TAF}
    assert _ack(anon, 3, ids["s"]).responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    # describing admin's group: its member is assigned x, which this principal may not describe
    _grant(admin, 3, "hx", Op.DESCRIBE)
    hx = anon.request(ShareGroupDescribeRequest(group_ids=["hx"]), 1).groups[0]
    assert (hx.error_code, hx.members) == (TAF, [])
    # offsets: x hidden or refused per partition
    g = _offsets(anon, ["s", "x"])
    assert {t.topic_name: t.partitions[0].error_code for t in g.topics} == {"s": 0, "x": TAF}
    assert {t.topic_name for t in _offsets(anon, None).topics} <= {"s"}
    assert _hb(anon, "sg", "m", -1).error_code == 0
    a = _alter(anon)
    assert a.error_code == 0 and {t.topic_name: t.partitions[0].error_code for t in a.responses} == {"s": 0, "x": TAF}
    assert _delete(anon).error_code == GAF                               # DELETE on the group is needed
    _grant(admin, 3, "sg", Op.DELETE)
    assert {t.topic_name: t.error_code for t in _delete(anon).responses} == {"s": 0, "x": TAF}
