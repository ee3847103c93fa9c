"""Issue #12 item 5: only the broker creates, resizes or deletes ``__consumer_offsets`` / ``__transaction_state``;
a data dir whose ``__consumer_offsets`` has another partition count than the config still works."""
from __future__ import annotations

import time
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import commit, create_topic
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    OffsetFetchRequest,
)

GROUPS = [f"g{i}" for i in range(20)]   # spread over many of the 50 partitions


def _create(c: RawClient, name: str, partitions: int, validate_only: bool = False) -> tuple[int, str | None]:
    r = c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=5000,
        validate_only=validate_only), 5)
    return r.topics[0].error_code, r.topics[0].error_message


def _partitions(c: RawClient, name: str) -> int:
    r = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                                  allow_auto_topic_creation=False), 9)
    assert r.topics[0].error_code == 0 and r.topics[0].is_internal
    return len(r.topics[0].partitions)


def _fetch(c: RawClient, group: str) -> dict[int, int]:
    deadline = time.monotonic() + 30
    while True:   # right after a start the coordinator may still be loading __consumer_offsets
        r = c.request(OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopic(
            name="t", partition_indexes=[0, 1])]), 5)
        if r.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert r.error_code == 0
    return {p.partition_index: p.committed_offset for p in r.topics[0].partitions}


def test_clients_cannot_create_internal_topics_and_commits_work_across_a_restart(tmp_path: Path) -> None:
    """The issue's case: CreateTopics __consumer_offsets with 1 partition, then OffsetCommits."""
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        for name in ("__consumer_offsets", "__transaction_state"):
            for validate_only in (True, False):
                code, msg = _create(c, name, 1, validate_only)
                assert code == ErrorCode.INVALID_REQUEST and msg and "prohibited" in msg
        create_topic(c, "t")
        for i, g in enumerate(GROUPS):
            assert commit(c, g, 2, "t", {0: i, 1: 100 + i}) == {0: 0, 1: 0}
        assert _partitions(c, "__consumer_offsets") == 50
        code, _ = _create(c, "__consumer_offsets", 1)
        assert code == ErrorCode.TOPIC_ALREADY_EXISTS
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        for i, g in enumerate(GROUPS):
            assert _fetch(c, g) == {0: i, 1: 100 + i}
            assert commit(c, g, 2, "t", {0: 1000 + i}) == {0: 0}


def test_internal_topics_cannot_be_resized_or_deleted(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        c.request(FindCoordinatorRequest(key="some-group", key_type=0), 1)       # the broker creates it
        assert _partitions(c, "__consumer_offsets") == 50
        for validate_only in (True, False):
            r = c.request(CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
                name="__consumer_offsets", count=60, assignments=None)], timeout_ms=5000,
                validate_only=validate_only), 3)
            assert r.results[0].error_code == ErrorCode.INVALID_REQUEST
        assert _partitions(c, "__consumer_offsets") == 50
        r = c.request(DeleteTopicsRequest(topic_names=["__consumer_offsets"], timeout_ms=5000), 5)
        assert r.responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        meta = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
            name="__consumer_offsets")]), 12)
        by_id = c.request(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(
            name=None, topic_id=meta.topics[0].topic_id)], timeout_ms=5000), 6)
        assert by_id.responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert _partitions(c, "__consumer_offsets") == 50


def test_existing_offsets_topic_with_another_partition_count_is_used_as_it_is(tmp_path: Path) -> None:
    """A data dir whose __consumer_offsets has 1 partition (as the old bug left it) under the default config of
    50: groups hash onto the 1 partition that exists, as Kafka hashes onto the existing topic's count."""
    with Broker(data_dir=tmp_path, overrides={"offsets.topic.num.partitions": "1"}) as b, \
            RawClient(b.host, b.port) as c:
        create_topic(c, "t")
        for i, g in enumerate(GROUPS):
            assert commit(c, g, 2, "t", {0: i}) == {0: 0}
        assert _partitions(c, "__consumer_offsets") == 1
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert _partitions(c, "__consumer_offsets") == 1
        for i, g in enumerate(GROUPS):
            assert _fetch(c, g)[0] == i
            assert commit(c, g, 2, "t", {1: 50 + i}) == {1: 0}
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        for i, g in enumerate(GROUPS):
            assert _fetch(c, g) == {0: i, 1: 50 + i}
