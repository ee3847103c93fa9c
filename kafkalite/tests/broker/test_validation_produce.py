"""Produce over the wire with every class of malformed batch: Kafka's error code (v8+ record errors too), the
log end offset does not move, and the connection stays usable; valid batches of every codec still append."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite.tests.broker.test_protocol import metadata, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.support.validation_corpus import NOW, TEN_YEARS_MS, cases, raw_batch, record, valid
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import CreateTopicsRequest, ListOffsetsRequest

CASES = cases()


def log_end(c: RawClient, topic: str) -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    p = c.request(req, 7).topics[0].partitions[0]
    assert p.error_code == 0
    return int(p.offset)


def create(c: RawClient, name: str, configs: dict[str, str]) -> None:
    C = CreateTopicsRequest
    resp = c.request(C(topics=[C.CreatableTopic(name=name, num_partitions=1, replication_factor=1, configs=[
        C.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])], timeout_ms=10000), 5)
    assert resp.topics[0].error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)


def produce(c: RawClient, topic: str, batch: bytes, version: int = 9, transactional_id: str | None = None):  # type: ignore[no-untyped-def]
    req = produce_req(topic, batch)
    req.transactional_id = transactional_id
    return c.request(req, version).responses[0].partition_responses[0]


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_batch_appends_nothing(raw: Callable[[], RawClient], name: str) -> None:
    batch, code, text = CASES[name]
    c = raw()
    metadata(c, "bad-batches")
    assert produce(c, "bad-batches", valid(2)).error_code == 0
    before = log_end(c, "bad-batches")
    p = produce(c, "bad-batches", batch)
    assert p.error_code == code, (name, p)
    assert text in (p.error_message or "") + " ".join(e.batch_index_error_message or "" for e in p.record_errors)
    assert log_end(c, "bad-batches") == before      # nothing appended
    assert produce(c, "bad-batches", valid(2)).error_code == 0   # same connection, still served
    assert log_end(c, "bad-batches") == before + 2


def test_per_record_timestamp_with_record_errors(raw: Callable[[], RawClient]) -> None:
    c = raw()
    create(c, "ts-after-1h", {"message.timestamp.after.max.ms": "3600000"})
    create(c, "ts-default", {})   # Kafka 4.x's default message.timestamp.after.max.ms is an hour (KIP-1030)
    batch = raw_batch(record(0) + record(1, ts_delta=TEN_YEARS_MS), count=2, max_ts=NOW)
    for topic in ("ts-after-1h", "ts-default"):
        before = log_end(c, topic)
        p = produce(c, topic, batch)
        assert p.error_code == ErrorCode.INVALID_TIMESTAMP
        assert [e.batch_index for e in p.record_errors] == [1]
        assert "is out of range" in p.record_errors[0].batch_index_error_message
        assert log_end(c, topic) == before
        assert produce(c, topic, valid(3)).error_code == 0


def test_compacted_topic_refuses_null_keys_with_a_record_error(raw: Callable[[], RawClient]) -> None:
    c = raw()
    create(c, "compacted-keys", {"cleanup.policy": "compact"})
    p = produce(c, "compacted-keys", encode_batch([Rec(b"a", key=b"k"), Rec(b"b", key=None)], compression=4))
    assert p.error_code == ErrorCode.INVALID_RECORD and [e.batch_index for e in p.record_errors] == [1]
    assert log_end(c, "compacted-keys") == 0


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_valid_batches_of_every_codec_append(raw: Callable[[], RawClient], codec: int) -> None:
    c = raw()
    metadata(c, f"codec-{codec}")
    for n in (1, 40):
        before = log_end(c, f"codec-{codec}")
        assert produce(c, f"codec-{codec}", valid(n, compression=codec)).error_code == 0
        assert log_end(c, f"codec-{codec}") == before + n


def test_large_compressed_batch_is_validated_off_the_event_loop(raw: Callable[[], RawClient]) -> None:
    import os

    c = raw()
    create(c, "big-lz4", {"max.message.bytes": str(4 << 20)})
    recs = [Rec(os.urandom(40) + bytes(60), key=b"%d" % i, timestamp=NOW) for i in range(20000)]
    batch = encode_batch(recs, base_timestamp=NOW, compression=3)
    assert len(batch) > 128 * 1024                      # above the worker-thread threshold
    assert produce(c, "big-lz4", batch).error_code == 0
    assert log_end(c, "big-lz4") == 20000


def test_decompression_bomb_is_refused_over_the_wire(raw: Callable[[], RawClient]) -> None:
    from kafkalite_storage.tests.test_bounded_records import zstd_bomb

    c = raw()
    metadata(c, "bombs")
    bomb = zstd_bomb(128 << 20)          # ~a few KB claiming 128 MiB; the default bound is 64 MiB
    assert len(bomb) < 50_000
    p = produce(c, "bombs", bomb)
    assert p.error_code == ErrorCode.MESSAGE_TOO_LARGE and "inflates to more than" in p.error_message
    assert log_end(c, "bombs") == 0
    assert produce(c, "bombs", valid(2, compression=4)).error_code == 0


def test_compacted_topic_batch_is_walked_once_by_the_validator(raw: Callable[[], RawClient],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The validator already refuses keyless records on compacted topics (off the loop for large compressed
    batches); storage's own walk for keys inflated the batch a second time, on the event loop (a 64 KB gzip
    bomb to a compacted topic held it ~200 ms in kafkalite_storage.batch.require_keys)."""
    import kafkalite_storage.log

    walks: list[int] = []
    real = kafkalite_storage.log.require_keys
    monkeypatch.setattr(kafkalite_storage.log, "require_keys", lambda mv: (walks.append(len(mv)), real(mv))[1])
    c = raw()
    create(c, "compacted-once", {"cleanup.policy": "compact"})
    assert produce(c, "compacted-once", encode_batch([Rec(b"a", key=b"k"), Rec(b"b", key=b"j")],
                                                     compression=1)).error_code == 0
    p = produce(c, "compacted-once", encode_batch([Rec(b"a", key=None)], compression=1))
    assert p.error_code == ErrorCode.INVALID_RECORD
    assert log_end(c, "compacted-once") == 2
    assert walks == []


def _two_topic_produce(good_topic: str, bad_topic: str, bad_batch: bytes):  # type: ignore[no-untyped-def]
    req = produce_req(good_topic, valid(2))
    req.topic_data.append(produce_req(bad_topic, bad_batch).topic_data[0])
    return req


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_id_fails_a_produce_before_v7_as_a_whole(raw: Callable[[], RawClient], codec: int) -> None:
    """Kafka's ProduceRequest.validateRecords (v3-v6) calls CompressionType.forId on the first batch; its
    IllegalArgumentException is no ApiException, so KafkaApis answers every partition of the request
    UNKNOWN_SERVER_ERROR (no message) and appends nothing, not even the good partition's batch."""
    c = raw()
    for t in ("codec-ok", "codec-bad"):
        metadata(c, t)
    before = log_end(c, "codec-ok")
    bad = raw_batch(record(0) + record(1), count=2, attrs=codec)
    resp = c.request(_two_topic_produce("codec-ok", "codec-bad", bad), 6)
    got = {(t.name, p.index): (p.error_code, p.error_message, p.base_offset)
           for t in resp.responses for p in t.partition_responses}
    assert got == {("codec-ok", 0): (-1, None, -1), ("codec-bad", 0): (-1, None, -1)}
    assert log_end(c, "codec-ok") == before and log_end(c, "codec-bad") == 0
    # from v7 on only the partition with the unknown codec fails (in the log layer, after the CRC check)
    resp = c.request(_two_topic_produce("codec-ok", "codec-bad", bad), 7)
    got = {t.name: p.error_code for t in resp.responses for p in t.partition_responses}
    assert got == {"codec-ok": 0, "codec-bad": ErrorCode.UNKNOWN_SERVER_ERROR}
    assert log_end(c, "codec-ok") == before + 2 and log_end(c, "codec-bad") == 0
    # a wrong CRC is found first from v7 on: CORRUPT_MESSAGE
    corrupt = bad[:-1] + bytes([bad[-1] ^ 1])
    assert produce(c, "codec-bad", corrupt, version=9).error_code == ErrorCode.CORRUPT_MESSAGE
    assert log_end(c, "codec-bad") == 0
