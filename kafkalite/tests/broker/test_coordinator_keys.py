"""Group ids and transactional ids too long for a coordinator record key (over 32,767 UTF-8 bytes) get a clear
error code from every API that names one, nothing is written, and nothing is logged as a failure.

Kafka's request parser refuses such strings outright; flexible versions can carry them, so each request below
uses a flexible version. Before the check, InitProducerId answered COORDINATOR_NOT_AVAILABLE with a
traceback (fuzz seed 2, frame 668) and the group APIs reached the record encoder."""
from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from kafkalite.coordinator.common import keys
from kafkalite.tests.broker.test_protocol import metadata
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)

Raw = Callable[[], RawClient]
LONG = "k" * 32768
LONG_UTF8 = "é" * 16384          # 16,384 characters, 32,768 UTF-8 bytes
INVALID_GROUP_ID, INVALID_REQUEST = int(ErrorCode.INVALID_GROUP_ID), int(ErrorCode.INVALID_REQUEST)


def test_storable_counts_utf8_bytes() -> None:
    assert keys.storable("g" * 32767) and keys.storable("é" * 16383 + "g")
    assert not keys.storable(LONG) and not keys.storable(LONG_UTF8)
    assert keys.group_id_error("") == INVALID_GROUP_ID and keys.group_id_error("", allow_empty=True) is None
    assert keys.txn_id_error(LONG) == INVALID_REQUEST and keys.txn_id_error("t") is None


def _join(c: RawClient, g: str) -> int:
    p = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    return int(c.request(JoinGroupRequest(group_id=g, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                          member_id="", protocol_type="consumer", protocols=[p]), 6).error_code)


def _commit(c: RawClient, g: str) -> int:
    part = OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
    req = OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=-1, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="keys-t", partitions=[part])])
    return int(c.request(req, 8).topics[0].partitions[0].error_code)


def _txn_commit(c: RawClient, g: str, tid: str = "keys-tx") -> int:
    part = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)
    req = TxnOffsetCommitRequest(transactional_id=tid, group_id=g, producer_id=1, producer_epoch=0, topics=[
        TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="keys-t", partitions=[part])])
    return int(c.request(req, 3).topics[0].partitions[0].error_code)


def _add_partitions(c: RawClient, tid: str) -> int:
    t = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name="keys-t", partitions=[0])
    r = c.request(AddPartitionsToTxnRequest(v3_and_below_transactional_id=tid, v3_and_below_producer_id=1,
                                            v3_and_below_producer_epoch=0, v3_and_below_topics=[t]), 3)
    return int(r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)


GROUP_APIS: dict[str, Callable[[RawClient, str], int]] = {
    "JoinGroup": _join,
    "SyncGroup": lambda c, g: int(c.request(SyncGroupRequest(group_id=g, generation_id=1, member_id="m",
                                                             assignments=[]), 4).error_code),
    "Heartbeat": lambda c, g: int(c.request(HeartbeatRequest(group_id=g, generation_id=1, member_id="m"),
                                            4).error_code),
    "LeaveGroup": lambda c, g: int(c.request(LeaveGroupRequest(group_id=g, members=[
        LeaveGroupRequest.MemberIdentity(member_id="m")]), 4).error_code),
    "OffsetCommit": _commit,
    "OffsetFetch": lambda c, g: int(c.request(OffsetFetchRequest(group_id=g, topics=None), 6).error_code),
    "DescribeGroups": lambda c, g: int(c.request(DescribeGroupsRequest(groups=[g]), 5).groups[0].error_code),
    "DeleteGroups": lambda c, g: int(c.request(DeleteGroupsRequest(groups_names=[g]), 2).results[0].error_code),
    "TxnOffsetCommit": _txn_commit,
    "AddOffsetsToTxn": lambda c, g: int(c.request(AddOffsetsToTxnRequest(
        transactional_id="keys-tx", producer_id=1, producer_epoch=0, group_id=g), 3).error_code),
    "FindCoordinator": lambda c, g: int(c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[g]),
                                                  4).coordinators[0].error_code),
}

TXN_APIS: dict[str, Callable[[RawClient, str], int]] = {
    "InitProducerId": lambda c, t: int(c.request(InitProducerIdRequest(transactional_id=t,
                                                                       transaction_timeout_ms=10_000), 2).error_code),
    "AddPartitionsToTxn": _add_partitions,
    "AddOffsetsToTxn": lambda c, t: int(c.request(AddOffsetsToTxnRequest(
        transactional_id=t, producer_id=1, producer_epoch=0, group_id="keys-g"), 3).error_code),
    "EndTxn": lambda c, t: int(c.request(EndTxnRequest(transactional_id=t, producer_id=1, producer_epoch=0,
                                                       committed=True), 3).error_code),
    "TxnOffsetCommit": lambda c, t: _txn_commit(c, "keys-g", t),
    "FindCoordinator": lambda c, t: int(c.request(FindCoordinatorRequest(key=t, key_type=1), 3).error_code),
}


def _failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.parametrize("key", [LONG, LONG_UTF8], ids=["ascii", "utf8"])
@pytest.mark.parametrize("api", sorted(GROUP_APIS))
def test_long_group_id_is_invalid_group_id(raw: Raw, caplog: pytest.LogCaptureFixture, api: str, key: str) -> None:
    c = raw()
    metadata(c, "keys-t")
    with caplog.at_level(logging.INFO, logger="kafkalite"):
        assert GROUP_APIS[api](c, key) == INVALID_GROUP_ID
    assert _failures(caplog) == []
    assert c.request(DescribeGroupsRequest(groups=["keys-other"]), 5).groups[0].error_code == 0   # still open


@pytest.mark.parametrize("api", sorted(TXN_APIS))
def test_long_transactional_id_is_invalid_request(raw: Raw, caplog: pytest.LogCaptureFixture, api: str) -> None:
    c = raw()
    metadata(c, "keys-t")
    with caplog.at_level(logging.INFO, logger="kafkalite"):
        assert TXN_APIS[api](c, LONG) == INVALID_REQUEST
    assert _failures(caplog) == []
    # the longest storable id works end to end
    r = c.request(InitProducerIdRequest(transactional_id="t" * 32767, transaction_timeout_ms=10_000), 2)
    assert r.error_code == ErrorCode.NONE and r.producer_id >= 0


def test_longest_storable_group_id_joins(raw: Raw) -> None:
    c = raw()
    assert _join(c, "g" * 32767) in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED)
