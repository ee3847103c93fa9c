"""Headers, framing and the whole-frame helpers in kafkalite_wire.api."""

from __future__ import annotations

import os
import struct

import pytest

from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError
from kafkalite_wire.framing import FrameBuffer, FrameTooLarge
from kafkalite_wire.headers import RequestHeader, request_header_version, response_header_version
from kafkalite_wire.messages import (
    REGISTRY,
    ApiVersionsRequest,
    ApiVersionsResponse,
    ControlledShutdownRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)


def test_header_version_rules() -> None:
    assert request_header_version(0, 8) == 1  # Produce v8: not flexible
    assert request_header_version(0, 9) == 2
    assert request_header_version(7, 0) == 0  # ControlledShutdown v0 uses request header v0
    assert request_header_version(7, 1) == 1
    assert request_header_version(9999, 0) == 1  # unknown api: read client_id so we can log it
    assert response_header_version(18, 3) == 0  # ApiVersions: always v0
    assert response_header_version(18, 0) == 0
    assert response_header_version(3, 9) == 1
    assert response_header_version(3, 8) == 0


def test_request_header_v2_client_id_is_not_compact() -> None:
    hdr = RequestHeader(3, 12, 0x01020304, "abc")
    raw = hdr.encode()
    assert raw == b"\x00\x03\x00\x0c\x01\x02\x03\x04" + b"\x00\x03abc" + b"\x00"
    back, pos = RequestHeader.decode_from(raw)
    assert pos == len(raw) and back.client_id == "abc" and back.header_version == 2
    null_id = RequestHeader(3, 12, 1, None).encode()
    assert null_id[8:10] == b"\xff\xff"


def test_request_header_v0_controlled_shutdown() -> None:
    frame = api.encode_request(RequestHeader(7, 0, 5, "ignored"), ControlledShutdownRequest(broker_id=3))
    assert frame[4:] == b"\x00\x07\x00\x00\x00\x00\x00\x05" + b"\x00\x00\x00\x03"
    hdr, body = api.parse_request(frame[4:])
    assert hdr.header_version == 0 and hdr.client_id is None and body.broker_id == 3


def test_request_roundtrip_through_framebuffer_byte_at_a_time() -> None:
    req = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="t")], allow_auto_topic_creation=False
    )
    frames = [api.encode_request(RequestHeader(3, v, v, "c"), req) for v in (1, 9, 12)]
    fb = FrameBuffer(1024)
    got = []
    for b in b"".join(frames):
        fb.receive_data(bytes([b]))
        while (f := fb.next_frame()) is not None:
            got.append(api.parse_request(f))
    assert [h.api_version for h, _ in got] == [1, 9, 12]
    assert all(body.topics[0].name == "t" for _, body in got)
    assert fb.buffered == 0


def test_framebuffer_checks_size_before_body() -> None:
    fb = FrameBuffer(max_frame_size=100)
    with pytest.raises(FrameTooLarge):
        fb.receive_data(struct.pack(">i", 101))  # nothing of the body has arrived yet
    fb = FrameBuffer(max_frame_size=100)
    with pytest.raises(FrameTooLarge):
        fb.receive_data(struct.pack(">i", -1))
    fb = FrameBuffer(max_frame_size=100)
    fb.receive_data(struct.pack(">i", 2) + b"ab" + struct.pack(">i", 1 << 30))
    with pytest.raises(DecodeError):  # FrameTooLarge is a DecodeError
        fb.next_frame()
    # frames stay valid after more data arrives
    fb = FrameBuffer()
    fb.receive_data(struct.pack(">i", 3) + b"abc" + struct.pack(">i", 1))
    f = fb.next_frame()
    fb.receive_data(b"z")
    assert f is not None and bytes(f) == b"abc"
    assert fb.next_frame() == b"z"


def test_unknown_key_and_unsupported_version_carry_header() -> None:
    raw = RequestHeader(4242, 0, 77, "c").encode()
    with pytest.raises(api.UnknownApiKey) as e:
        api.parse_request(raw)
    assert e.value.header.correlation_id == 77
    raw = RequestHeader(18, 99, 78, "c").encode(2) + b"\x00garbage"
    with pytest.raises(api.UnsupportedVersion) as e2:
        api.parse_request(raw)
    assert e2.value.header.correlation_id == 78 and e2.value.header.api_key == 18
    assert not isinstance(e2.value, DecodeError)


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    hdr = RequestHeader(18, 3, 9, "c")
    resp = ApiVersionsResponse(
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=0, min_version=3, max_version=9)]
    )
    data = api.join_chunks(api.encode_response(hdr, resp))
    assert struct.unpack(">ii", data[:8]) == (len(data) - 4, 9)
    assert data[8:10] == b"\x00\x00"  # error code right after the correlation id: no header tag byte
    cid, body = api.parse_response(18, 3, data[4:])
    assert cid == 9 and body == resp
    # unsupported version answered with a v0 body
    data0 = api.join_chunks(api.encode_response(RequestHeader(18, 99, 1), resp, version=0))
    assert api.parse_response(18, 0, data0[4:])[1].api_keys == resp.api_keys


def test_tagged_defaults_are_omitted() -> None:
    # FinalizedFeaturesEpoch=-1 / ZkMigrationReady=false must not be written (librdkafka 2.0.2 mis-skips them)
    body = ApiVersionsResponse().encode(3)
    assert body == b"\x00\x00" + b"\x01" + b"\x00\x00\x00\x00" + b"\x00"
    with_epoch = ApiVersionsResponse(finalized_features_epoch=5).encode(3)
    assert with_epoch.endswith(b"\x01\x01\x08" + struct.pack(">q", 5))


def test_unknown_tagged_fields_preserved() -> None:
    resp = MetadataResponse(cluster_id="c", controller_id=1, unknown_tagged_fields={7: b"xyz", 99: b""})
    raw = resp.encode(12)
    back = MetadataResponse.decode(raw, 12)
    assert back.unknown_tagged_fields == {7: b"xyz", 99: b""}
    assert back.encode(12) == raw


def test_records_chunks_and_file_regions(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "seg")
    with open(path, "wb") as fh:
        fh.write(b"0123456789" * 1000)
    fd = os.open(path, os.O_RDONLY)
    try:
        part = FetchResponse.PartitionData(
            partition_index=0, records=[b"head", (fd, 10, 5000), memoryview(b"t")]
        )
        resp = FetchResponse(responses=[FetchResponse.FetchableTopicResponse(topic="t", partitions=[part])])
        chunks = api.encode_response(RequestHeader(1, 11, 3), resp)
        assert (fd, 10, 5000) in chunks  # the region is passed through for sendfile, not read
        data = api.join_chunks(chunks)
        _cid, back = api.parse_response(1, 11, data[4:])
        rec = back.responses[0].partitions[0].records
        assert bytes(rec) == b"head" + (b"0123456789" * 1000)[10:5010] + b"t"
        assert resp.encode(11) == data[8:]  # encode() reads regions with pread
    finally:
        os.close(fd)


def test_records_decode_is_zero_copy() -> None:
    batch = b"\x00" * 100_000
    req = ProduceRequest(
        acks=1,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    raw = bytearray(req.encode(9))
    back = ProduceRequest.decode(raw, 9)
    rec = back.topic_data[0].partition_data[0].records
    assert isinstance(rec, memoryview) and rec.obj is raw


def test_registry_shape() -> None:
    info = REGISTRY[18]
    assert info.name == "ApiVersions" and info.request_class is ApiVersionsRequest
    assert info.flexible_min == 3 and info.is_flexible(3) and not info.is_flexible(2)
    assert REGISTRY[0].min_version == 0 and REGISTRY[0].max_version >= 11


def test_trailing_bytes_are_ignored_like_kafka() -> None:
    """Kafka's RequestContext.parseRequest does not check for leftover bytes; neither do we, but
    decode_from reports where the message ended."""
    req = MetadataRequest(topics=None, allow_auto_topic_creation=True)
    frame = api.encode_request(RequestHeader(3, 9, 1, "c"), req)[4:] + b"\xde\xad"
    _hdr, body = api.parse_request(frame)
    assert body == req
    raw = req.encode(9)
    obj, end = MetadataRequest.decode_from(raw + b"junk", 9)
    assert obj == req and end == len(raw)


def test_tag_of_a_field_from_other_versions_is_kept_as_unknown() -> None:
    """FetchResponse tag 0 at top level is NodeEndpoints, valid from v16. Kafka's Java codec rejects it at
    v12-v15; we are lenient and keep it as an unknown tagged field (written back unchanged)."""
    raw = bytearray(FetchResponse().encode(15))
    assert raw[-1] == 0
    raw[-1:] = b"\x01\x00\x02\xab\xcd"
    back = FetchResponse.decode(raw, 15)
    assert back.unknown_tagged_fields == {0: b"\xab\xcd"} and back.node_endpoints == []
    assert back.encode(15) == raw


def test_framebuffer_zero_copy_handoff_and_interleaving() -> None:
    fb = FrameBuffer()
    body = bytes(range(256)) * 40
    fb.receive_data(struct.pack(">i", len(body)) + body[:100])
    assert fb.next_frame() is None
    fb.receive_data(body[100:])
    f1 = fb.next_frame()
    assert f1 is not None and f1 == body and fb.buffered == 0
    # more data after a handed-over frame never touches it
    fb.receive_data(struct.pack(">i", 2) + b"xy" + struct.pack(">i", 1) + b"z" + struct.pack(">i", 3) + b"ab")
    f2, f3 = fb.next_frame(), fb.next_frame()
    assert fb.next_frame() is None
    fb.receive_data(b"c")
    f4 = fb.next_frame()
    assert (f2, f3, f4) == (b"xy", b"z", b"abc") and f1 == body
    for _ in range(50):  # compaction with frames outstanding
        fb.receive_data(struct.pack(">i", 1) + b"q" + struct.pack(">i", 1))
        assert fb.next_frame() == b"q"
        fb.receive_data(b"r")
        assert fb.next_frame() == b"r"
    assert (f2, f3, f4) == (b"xy", b"z", b"abc")
