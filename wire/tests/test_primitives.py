"""Primitive encodings: varints, strings, bytes, the Reader/Writer, and error typing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite_wire.errors import DecodeError, EncodeError, ErrorCode
from kafkalite_wire.primitives import (
    Reader,
    Writer,
    read_compact_nullable_string,
    read_compact_string,
    read_nullable_bytes,
    read_uvarint,
    read_uvarlong,
    read_varint,
    read_varlong,
    uvarint,
    varint,
    write_compact_nullable_string,
    write_nullable_bytes,
    write_records,
    write_string,
)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_uvarint_roundtrip(n: int) -> None:
    data = uvarint(n)
    assert read_uvarint(memoryview(data + b"junk"), 0) == (n, len(data))
    assert len(data) == max(1, (n.bit_length() + 6) // 7)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1))
def test_zigzag_varlong_roundtrip(n: int) -> None:
    data = varint(n)
    assert read_varlong(memoryview(data), 0) == (n, len(data))
    assert read_uvarlong(memoryview(data), 0)[0] == (n << 1) ^ (n >> 63)


def test_known_varint_bytes() -> None:
    assert uvarint(0) == b"\x00" and uvarint(127) == b"\x7f" and uvarint(128) == b"\x80\x01"
    assert uvarint(300) == b"\xac\x02"
    assert varint(-1) == b"\x01" and varint(1) == b"\x02" and varint(-64) == b"\x7f"
    assert read_varint(memoryview(b"\x03"), 0) == (-2, 1)
    with pytest.raises(EncodeError):
        uvarint(-1)
    with pytest.raises(DecodeError):
        read_uvarint(memoryview(b"\x80\x80"), 0)


def test_strings_and_bytes() -> None:
    out = bytearray()
    write_compact_nullable_string(out, None)
    write_compact_nullable_string(out, "hé")
    write_string(out, "")
    mv = memoryview(bytes(out))
    v1, p = read_compact_nullable_string(mv, 0)
    v2, p = read_compact_nullable_string(mv, p)
    assert (v1, v2) == (None, "hé") and bytes(mv[p:]) == b"\x00\x00"
    with pytest.raises(DecodeError):
        read_compact_string(memoryview(b"\x00"), 0)  # null where non-nullable
    with pytest.raises(EncodeError):
        write_string(bytearray(), "x" * 40000)
    out = bytearray()
    write_nullable_bytes(out, None)
    assert read_nullable_bytes(memoryview(bytes(out)), 0) == (None, 4)
    with pytest.raises(DecodeError):
        read_nullable_bytes(memoryview(b"\xff\xff\xff\xfe"), 0)  # -2 is not null, it is garbage


def test_write_records_chunks() -> None:
    out = bytearray(b"head")
    chunks: list[object] = []
    big = b"x" * 10000
    write_records(out, chunks, [b"ab", big, (5, 0, 7)], compact=False, nullable=True)  # type: ignore[arg-type]
    assert chunks == [b"head" + (2 + 10000 + 7).to_bytes(4, "big") + b"ab", big, (5, 0, 7)]
    assert out == b""
    out = bytearray()
    write_records(out, None, None, compact=True, nullable=True)
    assert out == b"\x00"
    with pytest.raises(EncodeError):
        write_records(bytearray(), None, None, compact=True, nullable=False)


def test_reader_writer_and_short_input() -> None:
    w = Writer()
    w.int8(-1)
    w.int16(2)
    w.int32(-3)
    w.int64(4)
    w.uvarint(300)
    w.varint(-5)
    w.nullable_string(None)
    w.string("s")
    w.tagged_fields({3: b"abc"})
    r = Reader(w.getvalue())
    assert (r.int8(), r.int16(), r.int32(), r.int64(), r.uvarint(), r.varint()) == (-1, 2, -3, 4, 300, -5)
    assert (r.nullable_string(), r.string(), r.tagged_fields()) == (None, "s", {3: b"abc"})
    assert r.remaining == 0
    for method in (r.int8, r.int16, r.int32, r.int64, r.uvarint, r.nullable_string, r.string):
        with pytest.raises(DecodeError):
            method()


def test_error_codes() -> None:
    assert ErrorCode.NONE == 0 and ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.UNSUPPORTED_VERSION == 35 and ErrorCode.COORDINATOR_LOAD_IN_PROGRESS == 14
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable and ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.retriable
    assert not ErrorCode.TOPIC_ALREADY_EXISTS.retriable and not ErrorCode.ILLEGAL_GENERATION.retriable
    assert sorted(int(e) for e in ErrorCode) == list(range(-1, 137))   # Kafka 4.4: to CONTROLLER_ID_NOT_REGISTERED
    assert (
        ErrorCode.from_code(3) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and ErrorCode.from_code(9999) == 9999
    )
