"""Client quotas: Kafka's sampled rate and token bucket, the precedence of quota entities, and
DescribeClientQuotas / AlterClientQuotas / throttling through the wire (kafkalite.quotas)."""
from __future__ import annotations

from pathlib import Path

from kafkalite import Broker
from kafkalite.metadata.quotas import QuotaStore, entity_of
from kafkalite.quotas.rate import Rate, TokenBucket
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterClientQuotasRequest,
    CreateTopicsRequest,
    DescribeClientQuotasRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)

A = AlterClientQuotasRequest
D = DescribeClientQuotasRequest


def test_rate_is_kafkas_sampled_rate() -> None:
    r = Rate(samples=3, window_ms=1000)
    r.record(3000, now_ms=0)
    # one window old: the span is at least (samples - 1) windows = 2 s, so 3000 B over 2 s
    assert r.measure(0) == 1500
    assert r.throttle_ms(1000, 0) == 1000          # (1500 - 1000) / 1000 * 2000 ms
    assert r.throttle_ms(2000, 0) == 0
    r.record(3000, now_ms=2500)                      # a new window; 6000 B over 2.5 s
    assert r.measure(2500) == 2400
    assert r.measure(10_000) == 0                     # every window obsolete


def test_token_bucket_refills() -> None:
    b = TokenBucket(samples=2, window_ms=1000)       # burst: 2 s of quota
    assert b.record(10, bound=5, now_ms=0) == 0       # 10 tokens, all used
    assert b.record(5, bound=5, now_ms=0) == 1000     # 5 in debt at 5/s
    assert b.throttle_ms(5, 1000) == 0


def test_precedence_of_entities(tmp_path: Path) -> None:
    s = QuotaStore(tmp_path)
    s.apply([
        (entity_of([("client-id", None)]), [("producer_byte_rate", 1.0, False)]),
        (entity_of([("client-id", "c")]), [("producer_byte_rate", 2.0, False)]),
        (entity_of([("user", None)]), [("producer_byte_rate", 3.0, False)]),
        (entity_of([("user", "u"), ("client-id", "c")]), [("producer_byte_rate", 4.0, False)]),
    ])
    assert s.resolve("producer_byte_rate", "u", "c") == (4.0, ("u", "c"))
    assert s.resolve("producer_byte_rate", "u", "other") == (3.0, ("u", ""))      # default user beats client-id
    assert s.resolve("consumer_byte_rate", "u", "c") is None
    s.apply([(entity_of([("user", None)]), [("producer_byte_rate", 0.0, True)])])
    assert s.resolve("producer_byte_rate", "v", "c") == (2.0, ("", "c"))
    assert s.resolve("producer_byte_rate", "v", "x") == (1.0, ("", "x"))
    assert QuotaStore(tmp_path).entries == s.entries   # persisted


def _alter(c: RawClient, entity: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]],
           validate_only: bool = False) -> int:
    resp = c.request(A(entries=[A.EntryData(
        entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[A.OpData(key=k, value=v, remove=r) for k, v, r in ops])], validate_only=validate_only), 1)
    return resp.entries[0].error_code


def _describe(c: RawClient, comps: list[tuple[str, int, str | None]], strict: bool = False) -> dict:
    resp = c.request(D(components=[D.ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in comps],
                       strict=strict), 1)
    assert resp.error_code == 0, resp
    return {tuple((e.entity_type, e.entity_name) for e in x.entity): {v.key: v.value for v in x.values}
            for x in resp.entries}


def test_alter_and_describe_client_quotas(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient("127.0.0.1", b.port) as c:
        assert _alter(c, [("user", "alice")], [("no_such_key", 1, False)]) == ErrorCode.INVALID_REQUEST
        assert _alter(c, [("user", "alice")], [("producer_byte_rate", 1.5, False)]) == ErrorCode.INVALID_REQUEST
        assert _alter(c, [("user", "a"), ("user", "b")], [("producer_byte_rate", 1, False)]) == \
            ErrorCode.INVALID_REQUEST
        assert _alter(c, [("user", "alice")], [("producer_byte_rate", 1000, False)], validate_only=True) == 0
        assert _describe(c, []) == {}
        assert _alter(c, [("user", "alice")], [("producer_byte_rate", 1000, False)]) == 0
        assert _alter(c, [("user", None), ("client-id", "app")], [("request_percentage", 50, False)]) == 0
        assert _alter(c, [("client-id", None)], [("consumer_byte_rate", 2000, False)]) == 0
        assert _describe(c, [("user", 0, "alice")]) == {(("user", "alice"),): {"producer_byte_rate": 1000.0}}
        assert set(_describe(c, [("user", 2, None)])) == {(("user", "alice"),), (("client-id", "app"), ("user", None))}
        assert set(_describe(c, [("user", 2, None)], strict=True)) == {(("user", "alice"),)}
        assert set(_describe(c, [("client-id", 1, None)])) == {(("client-id", None),)}
        assert len(_describe(c, [])) == 3
    with Broker(data_dir=tmp_path) as b, RawClient("127.0.0.1", b.port) as c:   # persisted
        assert len(_describe(c, [])) == 3
        assert _alter(c, [("user", "alice")], [("producer_byte_rate", 0, True)]) == 0
        assert len(_describe(c, [])) == 2


def test_produce_over_quota_is_throttled_and_muted(tmp_path: Path) -> None:
    """A produce over the quota is answered with throttle_time_ms, and the connection reads nothing more until
    it has passed: a request pipelined behind it is not handled yet when another connection looks, and is
    answered afterwards."""
    with Broker(data_dir=tmp_path, overrides={"quota.window.num": "2", "kafkalite.shutdown.drain.ms": "100"}) as b, \
            RawClient("127.0.0.1", b.port) as c, RawClient("127.0.0.1", b.port) as other:
        assert _alter(c, [("client-id", "raw")], [("producer_byte_rate", 1000, False)]) == 0
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="q")],
                                  allow_auto_topic_creation=True), 9)
        batch = encode_batch([Rec(b"x" * 5000)], base_timestamp=0)
        req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="q", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
        c.send(req, 9)
        c.send(req, 9)                                 # pipelined behind the one that breaks the quota
        _cid, first = c.recv(0, 9)
        assert first.responses[0].partition_responses[0].error_code == 0
        assert first.throttle_time_ms >= 3000          # 5 KB against 1 KB/s over a 1 s span: ~4 s
        lo = other.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="q", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
        assert lo.topics[0].partitions[0].offset == 1   # the second produce has not been read yet
        _cid, second = c.recv(0, 9)                    # muted, not closed: answered once the throttle ends
        assert second.responses[0].partition_responses[0].base_offset == 1


def test_controller_mutation_rate_refuses_strict_creations(tmp_path: Path) -> None:
    """CreateTopics v7 (strict): a topic is refused THROTTLING_QUOTA_EXCEEDED once the partition mutations
    have emptied the bucket (2 windows x 1 s x 1 partition/s = 2 tokens; the first topic overdraws it)."""
    C = CreateTopicsRequest
    with Broker(data_dir=tmp_path, overrides={"quota.window.num": "2", "kafkalite.shutdown.drain.ms": "100"}) as b, \
            RawClient("127.0.0.1", b.port) as c:
        assert _alter(c, [("client-id", "raw")], [("controller_mutation_rate", 1, False)]) == 0
        resp = c.request(C(topics=[C.CreatableTopic(name=n, num_partitions=3, replication_factor=1)
                                   for n in ("m1", "m2")], timeout_ms=5000), 7)
        assert [(t.name, t.error_code) for t in resp.topics] == [
            ("m1", 0), ("m2", ErrorCode.THROTTLING_QUOTA_EXCEEDED)]
        assert resp.throttle_time_ms > 0
