"""Hostile input: truncation, bit flips, random bytes and absurd lengths raise only DecodeError.

Every request type is fuzzed at every version hypothesis picks, starting from a valid encoding. Decoding may
succeed (a flipped bit inside an int is still a valid message) but must never raise IndexError, struct.error,
UnicodeDecodeError, MemoryError, RecursionError or anything else but `DecodeError`.
"""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import FetchResponse, MetadataRequest, ProduceRequest
from kafkalite_wire.primitives import read_compact_nullable_bytes, read_uvarint
from kafkalite_wire.spec import MessageSpec
from kafkalite_wire.tests.strategies import SpecStrategies, class_for, message_specs

REQUESTS = [m for m in message_specs() if m.type == "request"]
HOSTILE = [
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\xff\xff\xff\xfe",
    b"\xff\xff\xff\xff\x07",
    b"\x7f\xff",
]


def _decode_only_decode_error(cls: Any, data: bytes, version: int) -> None:
    with contextlib.suppress(DecodeError):
        cls.decode(data, version)


def _mutate(data: bytes, draw: Any) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "hostile", "insert", "random"]))
    if kind == "truncate" and data:
        return data[: draw(st.integers(0, len(data) - 1))]
    if kind == "flip" and data:
        b = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(b)
    if kind == "hostile":
        i = draw(st.integers(0, len(data)))
        h = draw(st.sampled_from(HOSTILE))
        return data[:i] + h + data[i + len(h) :]
    if kind == "insert":
        i = draw(st.integers(0, len(data)))
        return data[:i] + draw(st.binary(min_size=1, max_size=8)) + data[i:]
    return draw(st.binary(max_size=64))


@pytest.mark.parametrize("msg", REQUESTS, ids=[m.name for m in REQUESTS])
def test_mutated_requests_raise_only_decode_error(msg: MessageSpec) -> None:
    cls = class_for(msg)
    strat = SpecStrategies(msg)

    @settings(
        max_examples=12,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        v = data.draw(st.sampled_from(list(msg.versions)))
        obj = data.draw(strat.message(v, depth_limit=2))
        raw = obj.encode(v)
        bad = _mutate(raw, data.draw)
        _decode_only_decode_error(cls, bad, v)
        # and through the whole-frame path with a header
        frame = api.encode_request(RequestHeader(msg.api_key, v, 1, "fuzz"), obj)[4:]
        with contextlib.suppress(DecodeError, api.RequestError):
            api.parse_request(_mutate(frame, data.draw))

    check()


@pytest.mark.parametrize("msg", REQUESTS, ids=[m.name for m in REQUESTS])
def test_every_truncation_of_a_request(msg: MessageSpec) -> None:
    cls = class_for(msg)
    for v in (msg.min_version, msg.max_version):
        raw = cls().encode(v)
        for cut in range(len(raw)):
            with pytest.raises(DecodeError):
                cls.decode(raw[:cut], v)


def test_two_gib_length_inside_100_bytes() -> None:
    req = ProduceRequest(
        acks=1,
        timeout_ms=5,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"r" * 40)]
            )
        ],
    )
    raw = bytearray(req.encode(8))
    assert len(raw) < 100
    pos = raw.index(b"r" * 40) - 4
    raw[pos : pos + 4] = struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(DecodeError, match="exceeds remaining"):
        ProduceRequest.decode(raw, 8)
    # an array count of 2^31-1 is rejected before any allocation
    raw2 = bytearray(MetadataRequest(topics=[]).encode(4))
    raw2[0:4] = struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(DecodeError):
        MetadataRequest.decode(raw2, 4)
    # compact: a uvarint length of 2^32-1
    with pytest.raises(DecodeError):
        read_compact_nullable_bytes(memoryview(b"\xff\xff\xff\xff\x0f" + b"x" * 90), 0)


def test_overlong_varint_and_bad_utf8() -> None:
    with pytest.raises(DecodeError):
        read_uvarint(memoryview(b"\xff\xff\xff\xff\xff\x01"), 0)
    raw = bytearray(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ab")]).encode(4))
    raw[raw.index(b"ab")] = 0xFF
    with pytest.raises(DecodeError, match="UTF-8"):
        MetadataRequest.decode(raw, 4)


def test_null_in_non_nullable_fields_is_decode_error() -> None:
    # Metadata v4 topic name is a non-nullable STRING: length -1 must be rejected
    raw = bytearray(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="")]).encode(4))
    raw[4:6] = b"\xff\xff"
    with pytest.raises(DecodeError):
        MetadataRequest.decode(raw, 4)


@settings(max_examples=200, deadline=None, database=None)
@given(st.binary(max_size=200), st.sampled_from([0, 4, 11, 12, 16]))
def test_random_bytes_as_fetch_response(data: bytes, version: int) -> None:
    _decode_only_decode_error(FetchResponse, data, version)


@pytest.mark.parametrize("n", [0, 1, 8191, 8192, 8193, 3 * 8192 + 5])
@pytest.mark.parametrize("code,width", [("i", 4), ("q", 8), ("h", 2)])
def test_fixed_width_arrays_decode_across_chunks(n: int, code: str, width: int) -> None:
    """Long int arrays are unpacked in chunks (the GIL changes hands between them); every element, in order,
    and the position after the array come out as from one struct call, compact or not."""
    import struct

    from kafkalite_wire._arrays import FIXED_CHUNK, read_fixed_list
    from kafkalite_wire.primitives import uvarint

    assert FIXED_CHUNK == 8192
    values = [(i * 7919) % (1 << (8 * width - 1)) - (i % 3) * 5 for i in range(n)]
    payload = struct.pack(f">{n}{code}", *values) + b"tail"
    plain = struct.pack(">i", n) + payload
    out, end = read_fixed_list(memoryview(plain), 0, False, code, width)
    assert out == values and plain[end:] == b"tail"
    compact = uvarint(n + 1) + payload
    out, end = read_fixed_list(memoryview(compact), 0, True, code, width)
    assert out == values and compact[end:] == b"tail"
