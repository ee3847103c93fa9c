"""Regression tests for what the protocol fuzzer found (kafkalite/tests/fuzz): each request used to close the
connection with a traceback; now it gets Kafka's answer and the connection stays usable."""
from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from kafkalite.tests.broker.test_protocol import metadata
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    ApiVersionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

Raw = Callable[[], RawClient]


def _still_open(c: RawClient) -> None:
    req = ApiVersionsRequest(client_software_name="fuzz-regression", client_software_version="1")
    assert c.request(req, 3).error_code == ErrorCode.NONE


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_null_topic_name_before_v12_is_invalid_request(raw: Raw, version: int) -> None:
    """Kafka: 'Topic name can not be null for version N' -> every topic INVALID_REQUEST, a null name as ""."""
    c = raw()
    metadata(c, "md-null")
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None),
                                  MetadataRequest.MetadataRequestTopic(name="md-null")])
    resp = c.request(req, version)
    assert [(t.name, t.error_code) for t in resp.topics] == [("", ErrorCode.INVALID_REQUEST),
                                                             ("md-null", ErrorCode.INVALID_REQUEST)]
    _still_open(c)


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_topic_id_before_v12_is_invalid_request(raw: Raw, version: int) -> None:
    c = raw()
    tid = uuid.uuid4()
    resp = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="x", topic_id=tid)]),
                     version)
    assert [(t.name, t.topic_id, t.error_code) for t in resp.topics] == [("x", tid, ErrorCode.INVALID_REQUEST)]
    _still_open(c)


def test_metadata_null_topic_name_at_v12_still_means_topic_id(raw: Raw) -> None:
    c = raw()
    tid = uuid.uuid4()
    resp = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=tid)]), 12)
    assert [(t.topic_id, t.error_code) for t in resp.topics] == [(tid, ErrorCode.UNKNOWN_TOPIC_ID)]


def _commit(c: RawClient, version: int, group: str, **kw: int) -> int:
    part = OffsetCommitRequest.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=42, commit_timestamp=kw.pop("commit_timestamp", -1))
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="oc-range", partitions=[part])], **kw)
    return int(c.request(req, version).topics[0].partitions[0].error_code)


@pytest.mark.parametrize(("version", "kw"), [
    (1, {"commit_timestamp": 2**63 - 1}),          # commit timestamp + offsets.retention overflows int64
    (2, {"retention_time_ms": 2**63 - 1}),         # now + retention overflows int64
    (4, {"retention_time_ms": 2**63 - 2}),
])
def test_offset_commit_expiry_past_int64_is_accepted(raw: Raw, version: int, kw: dict[str, int]) -> None:
    c = raw()
    metadata(c, "oc-range")
    group = f"oc-range-{version}"
    assert _commit(c, version, group, **kw) == ErrorCode.NONE
    fetched = c.request(OffsetFetchRequest(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="oc-range", partition_indexes=[0])]), 3)
    assert fetched.topics[0].partitions[0].committed_offset == 42


def test_offset_commit_group_id_too_long_to_store(raw: Raw) -> None:
    c = raw()
    metadata(c, "oc-range")
    assert _commit(c, 8, "g" * 32768) == ErrorCode.INVALID_GROUP_ID
    _still_open(c)
    assert _commit(c, 8, "g" * 32767) == ErrorCode.NONE    # the longest id a record key can hold


def test_request_of_many_entries_is_answered_whole(raw: Raw) -> None:
    """A ~1.6 MB Metadata request naming 100,000 topics (decoded and encoded in a worker thread, being over
    connection.OFFLOAD_BYTES) gets one answer per topic, and the connection goes on."""
    c = raw()
    names = [f"absent-{i:06d}" for i in range(100_000)]
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                          allow_auto_topic_creation=False)
    resp = c.request(req, 12)
    assert [t.name for t in resp.topics] == names
    assert {t.error_code for t in resp.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    _still_open(c)
