"""One admin request creates at most 10,000 metadata records' worth, as Kafka's controller allows
(kafkalite.handlers.limits): beyond it the whole request answers POLICY_VIOLATION at once and creates nothing,
instead of making partitions for as long as the client asked (2^31-1 ran in a worker thread for ever)."""
from __future__ import annotations

import os
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.handlers.limits import EXCESSIVE_BATCH_MESSAGE
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import CreatePartitionsRequest, CreateTopicsRequest, MetadataRequest

CT = CreateTopicsRequest


def _create(c: RawClient, topics: dict[str, int], validate_only: bool = False) -> dict[str, tuple[int, str | None]]:
    r = c.request(CT(timeout_ms=5000, validate_only=validate_only, topics=[
        CT.CreatableTopic(name=n, num_partitions=p, replication_factor=1) for n, p in topics.items()]), 5)
    return {t.name: (t.error_code, t.error_message) for t in r.topics}


def _topics(c: RawClient) -> dict[str, int]:
    r = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9)
    return {t.name: len(t.partitions) for t in r.topics}


def _dirs(data: Path) -> set[str]:
    return {d for d in os.listdir(data) if os.path.isdir(data / d)}


def test_create_topics_over_the_record_bound_fails_whole(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        before = _dirs(tmp_path)
        for topics in ({"huge": 2**31 - 1}, {"ok": 3, "big": 9_999}, {"a": 5_000, "b": 4_999}):
            for validate_only in (True, False):
                res = _create(c, topics, validate_only)
                assert res == dict.fromkeys(topics, (ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE))
        assert _dirs(tmp_path) == before
        assert not {"huge", "ok", "big", "a", "b"} & set(_topics(c))
        # the names were not left reserved: a request within the bound creates them (a: 1 + 2, b: 1 + 3 records)
        assert _create(c, {"a": 2, "b": 3}) == {"a": (0, None), "b": (0, None)}
        # exactly at the bound passes validation (1 topic record + 9,999 partition records)
        assert _create(c, {"edge": 9_999}, validate_only=True) == {"edge": (0, None)}
        # a topic that fails its own checks adds no records, as in Kafka
        res = _create(c, {"a": 9_999, "c": 1})
        assert res["a"][0] == ErrorCode.TOPIC_ALREADY_EXISTS and res["c"] == (0, None)


def test_create_partitions_over_the_bound_fails_whole(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert _create(c, {"p": 1, "q": 1}) == {"p": (0, None), "q": (0, None)}
        CP = CreatePartitionsRequest
        for counts in ({"p": 2**31 - 1}, {"p": 5_001, "q": 5_002}):   # 5,000 + 5,001 new
            r = c.request(CP(timeout_ms=5000, validate_only=False, topics=[
                CP.CreatePartitionsTopic(name=n, count=k, assignments=None) for n, k in counts.items()]), 3)
            assert {t.name: (t.error_code, t.error_message) for t in r.results} == dict.fromkeys(counts, (ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE))
        assert _topics(c) == {"p": 1, "q": 1}
        r = c.request(CP(timeout_ms=5000, validate_only=False, topics=[CP.CreatePartitionsTopic(name="p", count=4, assignments=None)]), 3)
        assert r.results[0].error_code == 0 and _topics(c)["p"] == 4
