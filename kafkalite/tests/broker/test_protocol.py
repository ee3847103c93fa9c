"""Raw wire-level behaviour of the broker: ApiVersions rules, framing errors, ordering, acks, error codes."""
from __future__ import annotations

import struct
import threading
import uuid
from collections.abc import Callable

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire import api
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)

Connect = Callable[[], RawClient]


def metadata(c: RawClient, *names: str, version: int = 12, auto: bool = True, again: bool = True) -> object:
    """Metadata for ``names``; with ``again`` asked a second time when the first answer auto-created one (the
    creating request answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka's does: clients ask again)."""
    topics = [MetadataRequest.MetadataRequestTopic(name=n) for n in names]
    resp = c.request(MetadataRequest(topics=topics, allow_auto_topic_creation=auto), version)
    if again and (auto or version < 4) and any(
            t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for t in resp.topics):
        resp = c.request(MetadataRequest(topics=topics, allow_auto_topic_creation=auto), version)
    return resp


def produce_req(topic: str, batch: bytes | None, acks: int = -1, partition: int = 0) -> ProduceRequest:
    return ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)])])


def fetch_req(topic: str, offset: int, *, wait_ms: int = 0, min_bytes: int = 1, topic_id: uuid.UUID | None = None,
              partition: int = 0) -> FetchRequest:
    return FetchRequest(max_wait_ms=wait_ms, min_bytes=min_bytes, max_bytes=1 << 20, topics=[
        FetchRequest.FetchTopic(topic=topic, topic_id=topic_id or uuid.UUID(int=0), partitions=[
            FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])])


def part_error(resp: object) -> int:
    return resp.responses[0].partition_responses[0].error_code  # type: ignore[attr-defined]


# -- ApiVersions ---------------------------------------------------------------------------------------
def test_api_versions_every_version_lists_produce_and_fetch(raw: Connect) -> None:
    c = raw()
    for v in range(6):
        resp = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), v)
        assert resp.error_code == 0
        keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        # the default profile: Kafka 4.4's maxima (Produce listed from v0 as there), 3.9's minima
        assert keys[0] == (0, 13) and keys[1] == (4, 18) and keys[18] == (0, 5)
        assert keys[3] == (0, 13) and keys[22] == (0, 5) and keys[23] == (0, 4) and keys[60] == (0, 2)


def test_api_versions_v3_uses_response_header_v0_and_omits_default_tags(raw: Connect) -> None:
    c = raw()
    cid = c.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    frame = c.recv_frame()
    assert frame is not None
    assert struct.unpack(">i", frame[:4])[0] == cid
    # header v0: the error code follows the correlation id directly (no tagged-field byte)
    assert frame[4:6] == b"\x00\x00"
    _, body = api.parse_response(18, 3, frame)
    assert frame[6] == len(body.api_keys) + 1   # compact array length
    # api keys (7 bytes each: key, min, max, empty tags), throttle_time_ms, then the tagged fields: the
    # features of Kafka 3.9 (tags 0-2, kafkalite.metadata.features); ZkMigrationReady (tag 3) at its default is left out
    pos = 7 + len(body.api_keys) * 7
    assert frame[pos:pos + 4] == b"\x00\x00\x00\x00"
    assert frame[pos + 4] == 3 and frame[pos + 5] == 0          # three tags, the first is tag 0
    assert body.finalized_features_epoch == 0 and body.zk_migration_ready is False


def test_api_versions_unknown_version_gets_v0_body_with_error_35(raw: Connect) -> None:
    c = raw()
    # v7 does not exist: a flexible (v2) request header then an empty tagged section, as a future client sends
    hdr = RequestHeader(18, 7, 77, "future-client").encode(2)
    payload = hdr + b"\x00"
    c.send_raw(struct.pack(">i", len(payload)) + payload)
    frame = c.recv_frame()
    assert frame is not None
    cid, body = api.parse_response(18, 0, frame)
    assert cid == 77 and body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert {k.api_key for k in body.api_keys} >= {0, 1, 2, 3, 18}
    # and the connection stays usable
    assert c.request(ApiVersionsRequest(), 0).error_code == 0


def test_api_versions_v3_bad_software_name_is_invalid_request(raw: Connect) -> None:
    c = raw()
    resp = c.request(ApiVersionsRequest(client_software_name="bad name!", client_software_version="1.0"), 3)
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    resp = c.request(ApiVersionsRequest(client_software_name="ok-name", client_software_version="-x"), 3)
    assert resp.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(("release", "expected"), [
    ("2.8", {0: (3, 9), 1: (4, 12), 2: (0, 6), 3: (0, 11), 18: (0, 3), 22: (0, 4), 60: (0, 0)}),
    ("3.6", {0: (3, 9), 1: (4, 15), 2: (0, 8), 3: (0, 12), 18: (0, 3), 22: (0, 4), 60: (0, 0)}),
    ("3.9", {0: (3, 11), 1: (4, 17), 2: (0, 9), 3: (0, 12), 18: (0, 4), 22: (0, 5), 60: (0, 1)}),
])
def test_emulate_kafka_caps_advertised_versions(release: str, expected: dict[int, tuple[int, int]]) -> None:
    with Broker(emulate_kafka=release) as b, RawClient(b.host, b.port) as c:
        resp: ApiVersionsResponse = c.request(ApiVersionsRequest(), 0)
        keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        assert {k: keys[k] for k in expected} == expected
        # a request above the emulated cap but within what we implement is still served
        assert c.request(MetadataRequest(topics=[]), 12).brokers


# -- framing and bad input -------------------------------------------------------------------------------
def test_unknown_api_key_closes_only_that_connection(raw: Connect) -> None:
    bad, good = raw(), raw()
    payload = struct.pack(">hhih", 999, 0, 5, -1)
    bad.send_raw(struct.pack(">i", len(payload)) + payload)
    assert bad.is_closed_by_peer()
    assert good.request(ApiVersionsRequest(), 0).error_code == 0


def test_unsupported_version_of_other_api_closes_connection(raw: Connect) -> None:
    c = raw()
    # Produce v2 is in the codec's range but below what we serve (v3+)
    payload = RequestHeader(0, 2, 9, "x").encode(1) + b"\x00\x01\x00\x00\x13\x88\x00\x00\x00\x00"
    c.send_raw(struct.pack(">i", len(payload)) + payload)
    assert c.is_closed_by_peer()


def test_oversize_frame_closes_only_that_connection() -> None:
    with Broker(overrides={"socket.request.max.bytes": "1000"}) as b:
        bad, good = RawClient(b.host, b.port), RawClient(b.host, b.port)
        bad.send_raw(struct.pack(">i", 5000) + b"\x00" * 100)
        assert bad.is_closed_by_peer()
        assert good.request(ApiVersionsRequest(), 0).error_code == 0
        bad.close()
        good.close()


def test_garbage_closes_connection(raw: Connect) -> None:
    http = raw()
    http.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert http.is_closed_by_peer()
    truncated = raw()   # a Metadata v1 header whose body is cut short
    payload = RequestHeader(3, 1, 1, "x").encode(1) + b"\x00\x00\x00\x05\x00"
    truncated.send_raw(struct.pack(">i", len(payload)) + payload)
    assert truncated.is_closed_by_peer()
    assert raw().request(ApiVersionsRequest(), 0).error_code == 0


def test_handler_exception_is_answered_and_keeps_the_connection(raw: Connect, monkeypatch) -> None:
    """Kafka answers a request its handler failed on with UNKNOWN_SERVER_ERROR (kafkalite.handlers.error_response);
    the connection and the server go on."""
    from kafkalite.handlers import registry

    spec = registry.HANDLERS[60]

    async def boom(ctx, req):  # type: ignore[no-untyped-def]
        raise RuntimeError("handler bug")

    monkeypatch.setitem(registry.HANDLERS, 60, registry.HandlerSpec(
        spec.api_key, spec.name, spec.min_version, spec.max_version, spec.request_class, boom))
    from kafkalite_wire.messages import DescribeClusterRequest

    c = raw()
    assert c.request(DescribeClusterRequest(), 0).error_code == -1
    assert c.request(ApiVersionsRequest(), 0).error_code == 0


# -- ordering and acks ------------------------------------------------------------------------------------
def test_pipelined_requests_are_answered_in_order(raw: Connect) -> None:
    c = raw()
    metadata(c, "pipelined")
    bodies = [(ApiVersionsRequest(), 0, 18), (MetadataRequest(topics=None), 9, 3),
              (fetch_req("pipelined", 0, wait_ms=200, min_bytes=1), 11, 1),
              (ApiVersionsRequest(), 2, 18), (MetadataRequest(topics=[]), 4, 3)]
    frames = b"".join(c.frame(body, v, cid=100 + i) for i, (body, v, _) in enumerate(bodies))
    c.send_raw(frames)
    for i, (_, v, key) in enumerate(bodies):
        cid, _resp = c.recv(key, v)
        assert cid == 100 + i


def test_acks_zero_gets_no_response(raw: Connect) -> None:
    c = raw()
    metadata(c, "acks0")
    c.send(produce_req("acks0", encode_batch([b"a", b"b"]), acks=0), 9, cid=500)
    c.send(ApiVersionsRequest(), 0, cid=501)
    got_cid, _ = c.recv(18, 0)
    assert got_cid == 501   # the first response is the ApiVersions one: nothing was sent for the produce
    resp = c.request(fetch_req("acks0", 0), 11)
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0 and part.high_watermark == 2


def test_acks_zero_failure_closes_connection(raw: Connect) -> None:
    c = raw()
    c.send(produce_req("no-such-topic-acks0", encode_batch([b"a"]), acks=0), 9)
    assert c.is_closed_by_peer()


def test_invalid_acks(raw: Connect) -> None:
    c = raw()
    metadata(c, "badacks")
    assert part_error(c.request(produce_req("badacks", encode_batch([b"x"]), acks=2), 9)) == \
        ErrorCode.INVALID_REQUIRED_ACKS


# -- produce validation --------------------------------------------------------------------------------------
def test_corrupt_batch_is_corrupt_message(raw: Connect) -> None:
    c = raw()
    metadata(c, "corrupt")
    batch = bytearray(encode_batch([b"hello world"]))
    batch[-3] ^= 0xFF
    assert part_error(c.request(produce_req("corrupt", bytes(batch)), 9)) == ErrorCode.CORRUPT_MESSAGE
    assert c.request(fetch_req("corrupt", 0), 11).responses[0].partitions[0].high_watermark == 0


def test_two_batches_in_one_partition_is_invalid_record(raw: Connect) -> None:
    c = raw()
    metadata(c, "twobatches")
    two = encode_batch([b"a"]) + encode_batch([b"b"])
    assert part_error(c.request(produce_req("twobatches", two), 9)) == ErrorCode.INVALID_RECORD


def test_unknown_topic_and_partition(raw: Connect) -> None:
    c = raw()
    assert part_error(c.request(produce_req("never-created", encode_batch([b"x"])), 9)) == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    metadata(c, "onepart")
    assert part_error(c.request(produce_req("onepart", encode_batch([b"x"]), partition=7), 9)) == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    resp = c.request(fetch_req("never-created", 0), 11)
    assert resp.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    resp = c.request(fetch_req("", 0, topic_id=uuid.uuid4()), 13)
    assert resp.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


# -- metadata --------------------------------------------------------------------------------------------------
def test_metadata_autocreate_ids_and_errors(raw: Connect) -> None:
    c = raw()
    resp = metadata(c, "auto-created", "bad name!", version=12, again=False)
    by_name = {t.name: t for t in resp.topics}
    # the creating request is answered UNKNOWN_TOPIC_OR_PARTITION, as a KRaft Kafka 4.4 answers it while its
    # controller creates the topic; the next request finds the topic
    t = by_name["auto-created"]
    assert (t.error_code, t.topic_id, t.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, uuid.UUID(int=0), [])
    assert by_name["bad name!"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    for v in (1, 3):   # before v4 every request may create (no AllowAutoTopicCreation field): the same answer
        assert metadata(c, f"auto-created-v{v}", version=v, again=False).topics[0].error_code == \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert metadata(c, f"auto-created-v{v}", version=v, again=False).topics[0].error_code == 0
    resp = metadata(c, "auto-created", version=12)
    t = resp.topics[0]
    assert t.error_code == 0 and t.topic_id != uuid.UUID(int=0) and len(t.partitions) == 1
    assert t.partitions[0].leader_id == resp.brokers[0].node_id
    resp = metadata(c, "not-auto", version=12, auto=False)
    assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # by id (v10+)
    resp = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=t.topic_id)]),
                     12)
    assert resp.topics[0].name == "auto-created"
    # the same topic id is served by Fetch v13+
    resp = c.request(fetch_req("", 0, topic_id=t.topic_id), 13)
    assert resp.responses[0].partitions[0].error_code == 0


# -- fetch ----------------------------------------------------------------------------------------------------
def test_fetch_empty_records_are_zero_length_not_null(raw: Connect) -> None:
    c = raw()
    tid = metadata(c, "empty-fetch").topics[0].topic_id
    for v in (11, 12, 16):
        part = c.request(fetch_req("empty-fetch", 0, topic_id=tid), v).responses[0].partitions[0]
        assert part.error_code == 0 and part.records is not None and len(part.records) == 0


def test_fetch_out_of_range(raw: Connect) -> None:
    c = raw()
    metadata(c, "oor")
    c.request(produce_req("oor", encode_batch([b"1", b"2", b"3"])), 9)
    part = c.request(fetch_req("oor", 10), 12).responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, part.aborted_transactions) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1, None)
    part = c.request(fetch_req("oor", 1), 12).responses[0].partitions[0]
    # an offset inside a batch returns the whole batch (base offset 0, three records)
    assert part.error_code == 0 and len(part.records) == len(encode_batch([b"1", b"2", b"3"]))
    assert struct.unpack(">q", bytes(part.records[:8]))[0] == 0


def test_fetch_long_poll_is_woken_by_produce(raw: Connect) -> None:
    waiter, producer = raw(), raw()
    metadata(producer, "longpoll")
    cid = waiter.send(fetch_req("longpoll", 0, wait_ms=60000, min_bytes=1), 12)
    result: dict[str, object] = {}

    def read() -> None:
        result["resp"] = waiter.recv(1, 12)

    t = threading.Thread(target=read)
    t.start()
    producer.request(produce_req("longpoll", encode_batch([b"wake"])), 9)
    t.join(30)
    assert not t.is_alive()
    got_cid, resp = result["resp"]  # type: ignore[misc]
    assert got_cid == cid
    part = resp.responses[0].partitions[0]
    assert part.high_watermark == 1 and len(part.records) > 0


def test_fetch_returns_at_least_one_batch_beyond_max_bytes(raw: Connect) -> None:
    c = raw()
    metadata(c, "bigbatch")
    big = encode_batch([b"x" * 5000])
    c.request(produce_req("bigbatch", big), 9)
    req = fetch_req("bigbatch", 0)
    req.max_bytes = 100
    req.topics[0].partitions[0].partition_max_bytes = 100
    part = c.request(req, 12).responses[0].partitions[0]
    assert len(part.records) == len(big)


# -- list offsets ------------------------------------------------------------------------------------------------
def test_list_offsets_special_and_timestamps(raw: Connect) -> None:
    c = raw()
    metadata(c, "lo")
    c.request(produce_req("lo", encode_batch([b"a", b"b"], base_timestamp=1000)), 9)
    c.request(produce_req("lo", encode_batch([b"c"], base_timestamp=5000)), 9)
    c.request(produce_req("lo", encode_batch([b"d"], base_timestamp=3000)), 9)

    def lo(ts: int, v: int = 7) -> tuple[int, int]:
        req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="lo", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts)])])
        p = c.request(req, v).topics[0].partitions[0]
        assert p.error_code == 0
        return p.offset, p.timestamp

    assert lo(-1)[0] == 4
    assert lo(-2)[0] == 0
    assert lo(-3) == (2, 5000)
    assert lo(2000) == (2, 5000)
    assert lo(0)[0] == 0
    assert lo(9999) == (-1, -1)
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name="lo", partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-1,
                                                                       max_num_offsets=1)])])
    assert c.request(req, 0).topics[0].partitions[0].old_style_offsets == [4]



def test_clients_cannot_produce_to_internal_topics(raw: Connect) -> None:
    c = raw()
    metadata(c, "plain")   # make sure the broker is up; then ask for the offsets topic via FindCoordinator's path
    from kafkalite.handlers.registry import HANDLERS

    assert 10 in HANDLERS   # FindCoordinator is served (its module loads on first use)
    from kafkalite_wire.messages import FindCoordinatorRequest

    c.request(FindCoordinatorRequest(key="g-internal", key_type=0), 1)
    resp = c.request(produce_req("__consumer_offsets", encode_batch([b"x"])), 9)
    assert part_error(resp) == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_produce_many_partitions_and_topics_in_one_request(raw: Connect) -> None:
    c = raw()
    for name in ("multi-a", "multi-b"):
        c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=3, replication_factor=1)], timeout_ms=5000), 4)
    P = ProduceRequest
    req = P(acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=name, partition_data=[
            P.PartitionProduceData(index=i, records=encode_batch([f"{name}-{i}-{j}".encode() for j in range(i + 1)]))
            for i in (0, 1, 2, 5)])
        for name in ("multi-a", "multi-b")])
    resp = c.request(req, 9)
    for t in resp.responses:
        got = {p.index: (p.error_code, p.base_offset) for p in t.partition_responses}
        assert got == {0: (0, 0), 1: (0, 0), 2: (0, 0), 5: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    resp = c.request(req, 9)   # again: offsets continue per partition
    for t in resp.responses:
        got = {p.index: p.base_offset for p in t.partition_responses if p.error_code == 0}
        assert got == {0: 1, 1: 2, 2: 3}


def test_idempotent_sequences_dedupe_and_errors(raw: Connect) -> None:
    from kafkalite_wire.messages import InitProducerIdRequest

    c = raw()
    metadata(c, "idem")
    pid = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).producer_id

    def send(seq: int, n: int = 2, epoch: int = 0) -> tuple[int, int]:
        batch = encode_batch([b"v"] * n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
        p = c.request(produce_req("idem", batch), 9).responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    assert send(0) == (0, 0)
    assert send(2) == (0, 2)
    assert send(0) == (0, 0)          # a retry of an acknowledged batch: same offset, nothing appended
    assert send(9)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    hw = c.request(fetch_req("idem", 0), 12).responses[0].partitions[0].high_watermark
    assert hw == 4
