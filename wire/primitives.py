"""Kafka protocol primitive types: readers over a memoryview, writers into a bytearray.

Wire encodings (all big-endian):

* int8/int16/int32/int64, uint16/uint32, float64 (IEEE 754), bool (one byte, non-zero = true), uuid (16 bytes).
* Classic ("non-flexible") versions: STRING = int16 length + UTF-8 (length -1 = null for NULLABLE_STRING),
  BYTES/RECORDS = int32 length + bytes (-1 = null), ARRAY = int32 count (-1 = null).
* Flexible versions (KIP-482): COMPACT_* types carry an *unsigned varint* of `length + 1` (0 = null), and every
  struct ends with a tagged-field section: uvarint count, then per field uvarint tag, uvarint size, payload.
* varint/varlong (record internals) use zig-zag; uvarint is plain LEB128.

Decoding functions take `(buf, pos)` and return `(value, new_pos)`; `buf` is a `memoryview` of unsigned bytes.
Any short or malformed input raises `kafkalite_wire.errors.DecodeError`: lengths are checked against the remaining input
*before* anything is allocated, so a hostile 2 GiB length inside a 100-byte frame costs nothing.
`bytes`/records payloads are returned as memoryview slices of the input (zero copy).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any

from kafkalite_wire.errors import DecodeError, EncodeError

#: One piece of an encoded frame: bytes, a memoryview, or a file region ``(fd, offset, length)`` that the
#: connection sends with ``os.sendfile``; ``fd`` may also be a file handle that opens on demand (an object
#: with ``pread(n, offset)`` and a ``pinned()`` context giving the descriptor while it is used).
FileRegion = tuple[int, int, int]
Chunk = bytes | bytearray | memoryview | FileRegion
#: What a records field accepts on encode (and a bytes-like / None on decode).
RecordsValue = None | bytes | bytearray | memoryview | list[Chunk]

ZERO_UUID = uuid.UUID(int=0)

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
U16 = struct.Struct(">H")
U32 = struct.Struct(">I")
F64 = struct.Struct(">d")

_i16 = I16.unpack_from
_i32 = I32.unpack_from
_p16 = I16.pack
_p32 = I32.pack

#: Records/bytes payloads at least this large are emitted as their own chunk instead of being copied.
CHUNK_THRESHOLD = 4096


# ----------------------------------------------------------------------------------------------- varints
def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint of at most 5 bytes (uint32 range)."""
    try:
        b = buf[pos]
    except IndexError:
        raise DecodeError("truncated varint") from None
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if shift > 28:
            raise DecodeError("varint too long")
        try:
            b = buf[pos]
        except IndexError:
            raise DecodeError("truncated varint") from None
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def read_uvarlong(buf: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint of at most 10 bytes (uint64 range)."""
    value = 0
    shift = 0
    while True:
        if shift > 63:
            raise DecodeError("varlong too long")
        try:
            b = buf[pos]
        except IndexError:
            raise DecodeError("truncated varlong") from None
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """Zig-zag signed varint (int32)."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def read_varlong(buf: memoryview, pos: int) -> tuple[int, int]:
    """Zig-zag signed varlong (int64)."""
    v, pos = read_uvarlong(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


_UVARINT_1 = [bytes((i,)) for i in range(128)]


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (1-byte fast path for values < 128)."""
    if 0 <= value < 128:
        return _UVARINT_1[value]
    if value < 0:
        raise EncodeError(f"negative unsigned varint {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """Encode a zig-zag signed varint/varlong."""
    return uvarint((value << 1) ^ (value >> 63))


# ----------------------------------------------------------------------------------------------- lengths
def read_array_len(buf: memoryview, pos: int) -> tuple[int, int]:
    """int32 array count; -1 = null. A count larger than the remaining bytes is rejected."""
    n = _i32(buf, pos)[0]
    pos += 4
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} exceeds remaining {len(buf) - pos} bytes")
    if n < -1:
        raise DecodeError(f"negative array length {n}")
    return n, pos


def read_compact_array_len(buf: memoryview, pos: int) -> tuple[int, int]:
    """uvarint count+1; returns -1 for null."""
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} exceeds remaining {len(buf) - pos} bytes")
    return n, pos


def _span(buf: memoryview, pos: int, n: int) -> int:
    end = pos + n
    if end > len(buf):
        raise DecodeError(f"length {n} exceeds remaining {len(buf) - pos} bytes")
    return end


# ----------------------------------------------------------------------------------------------- strings
def _utf8(buf: memoryview, pos: int, end: int) -> str:
    try:
        return str(buf[pos:end], "utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"invalid UTF-8 in string: {e}") from None


def read_string(buf: memoryview, pos: int) -> tuple[str, int]:
    n = _i16(buf, pos)[0]
    pos += 2
    if n < 0:
        raise DecodeError("null in a non-nullable string")
    end = _span(buf, pos, n)
    return _utf8(buf, pos, end), end


def read_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    n = _i16(buf, pos)[0]
    pos += 2
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative string length {n}")
        return None, pos
    end = _span(buf, pos, n)
    return _utf8(buf, pos, end), end


def read_compact_string(buf: memoryview, pos: int) -> tuple[str, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("null in a non-nullable compact string")
    end = _span(buf, pos, n - 1)
    return _utf8(buf, pos, end), end


def read_compact_nullable_string(buf: memoryview, pos: int) -> tuple[str | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _span(buf, pos, n - 1)
    return _utf8(buf, pos, end), end


# ----------------------------------------------------------------------------------------------- bytes
def read_bytes(buf: memoryview, pos: int) -> tuple[memoryview, int]:
    n = _i32(buf, pos)[0]
    pos += 4
    if n < 0:
        raise DecodeError("null in non-nullable bytes")
    end = _span(buf, pos, n)
    return buf[pos:end], end


def read_nullable_bytes(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    n = _i32(buf, pos)[0]
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative bytes length {n}")
        return None, pos
    end = _span(buf, pos, n)
    return buf[pos:end], end


def read_compact_bytes(buf: memoryview, pos: int) -> tuple[memoryview, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("null in non-nullable compact bytes")
    end = _span(buf, pos, n - 1)
    return buf[pos:end], end


def read_compact_nullable_bytes(buf: memoryview, pos: int) -> tuple[memoryview | None, int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = _span(buf, pos, n - 1)
    return buf[pos:end], end


def read_uuid(buf: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    end = _span(buf, pos, 16)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def read_unknown_tag(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """Read a tag header: returns (tag, payload_start, payload_end)."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    return tag, pos, _span(buf, pos, size)


def read_fixed_array(buf: memoryview, pos: int, n: int, code: str, width: int) -> tuple[list[Any], int]:
    """`n` fixed-width integers in one struct call (arrays of primitives)."""
    end = _span(buf, pos, n * width)
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), end


# ----------------------------------------------------------------------------------------------- writers
def _enc_str(s: str, limit: int) -> bytes:
    b = s.encode("utf-8")
    if len(b) > limit:
        raise EncodeError(f"string of {len(b)} bytes too long")
    return b


def write_string(out: bytearray, s: str | None) -> None:
    if s is None:
        raise EncodeError("null in a non-nullable string")
    b = _enc_str(s, 0x7FFF)
    out += _p16(len(b))
    out += b


def write_nullable_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += b"\xff\xff"
        return
    b = _enc_str(s, 0x7FFF)
    out += _p16(len(b))
    out += b


def write_compact_string(out: bytearray, s: str | None) -> None:
    if s is None:
        raise EncodeError("null in a non-nullable compact string")
    b = _enc_str(s, 0x7FFFFFFE)
    out += uvarint(len(b) + 1)
    out += b


def write_compact_nullable_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out.append(0)
        return
    b = _enc_str(s, 0x7FFFFFFE)
    out += uvarint(len(b) + 1)
    out += b


def write_bytes(out: bytearray, b: bytes | bytearray | memoryview | None) -> None:
    if b is None:
        raise EncodeError("null in non-nullable bytes")
    out += _p32(len(b))
    out += b


def write_nullable_bytes(out: bytearray, b: bytes | bytearray | memoryview | None) -> None:
    if b is None:
        out += b"\xff\xff\xff\xff"
        return
    out += _p32(len(b))
    out += b


def write_compact_bytes(out: bytearray, b: bytes | bytearray | memoryview | None) -> None:
    if b is None:
        raise EncodeError("null in non-nullable compact bytes")
    out += uvarint(len(b) + 1)
    out += b


def write_compact_nullable_bytes(out: bytearray, b: bytes | bytearray | memoryview | None) -> None:
    if b is None:
        out.append(0)
        return
    out += uvarint(len(b) + 1)
    out += b


def write_array_len(out: bytearray, v: Sequence[object] | None, nullable: bool) -> None:
    if v is None:
        if not nullable:
            raise EncodeError("null in a non-nullable array")
        out += b"\xff\xff\xff\xff"
    else:
        out += _p32(len(v))


def write_compact_array_len(out: bytearray, v: Sequence[object] | None, nullable: bool) -> None:
    if v is None:
        if not nullable:
            raise EncodeError("null in a non-nullable array")
        out.append(0)
    else:
        out += uvarint(len(v) + 1)


def chunk_len(c: Chunk) -> int:
    """Length in bytes of one chunk (a file region's third element)."""
    if isinstance(c, tuple):
        return c[2]
    return len(c)


def records_len(value: RecordsValue) -> int:
    if value is None:
        return -1
    if isinstance(value, list):
        return sum(chunk_len(c) for c in value)
    return len(value)


def write_records(
    out: bytearray, chunks: list[Chunk] | None, value: RecordsValue, compact: bool, nullable: bool
) -> None:
    """Write a records field: length prefix, then the payload.

    Small payloads are copied into `out`; large ones and file regions are appended to `chunks` as separate
    pieces (after flushing `out`), so a Fetch response never copies log data. With `chunks=None` (nested
    tagged payloads, `bytes` encodes) file regions are read with `os.pread`.
    """
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable records field")
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
        return
    n = records_len(value)
    if compact:
        out += uvarint(n + 1)
    else:
        out += _p32(n)
    pieces: Sequence[Chunk] = value if isinstance(value, list) else (value,)
    for c in pieces:
        if isinstance(c, tuple):
            if chunks is None:
                out += read_region(c)
                continue
        elif chunks is None or len(c) < CHUNK_THRESHOLD:
            out += c
            continue
        if out:
            chunks.append(bytes(out))
            out.clear()
        chunks.append(c)


def read_region(region: FileRegion) -> bytes:
    """Materialise a file region `(fd, offset, length)` (used when a caller wants plain bytes)."""
    import os

    fd, offset, length = region
    # a storage file handle that opens on demand reads itself (pinned while it reads); wire stays storage-free
    data = os.pread(fd, length, offset) if isinstance(fd, int) else fd.pread(length, offset)
    if len(data) != length:
        raise EncodeError(f"file region {region} is short: got {len(data)} bytes")
    return data


def write_tagged(
    out: bytearray, known: list[tuple[int, bytes | bytearray]], unknown: dict[int, bytes]
) -> None:
    """Write a tagged-field section: known fields (already encoded) merged with unknown ones, by tag."""
    if unknown:
        items = sorted([*known, *unknown.items()], key=lambda t: t[0])
    else:
        items = known
    out += uvarint(len(items))
    for tag, payload in items:
        out += uvarint(tag)
        out += uvarint(len(payload))
        out += payload


def as_memoryview(buf: bytes | bytearray | memoryview) -> memoryview:
    """A 1-D unsigned-byte memoryview over `buf` (no copy)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


# ----------------------------------------------------------------------------------------------- classes
class Reader:
    """A cursor over a memoryview for hand-written decoders (headers). Raises DecodeError on short input."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = as_memoryview(buf)
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _fixed(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.buf):
            raise DecodeError(f"need {s.size} bytes, have {self.remaining}")
        v = s.unpack_from(self.buf, self.pos)[0]
        self.pos += s.size
        return int(v)

    def int8(self) -> int:
        return self._fixed(I8)

    def int16(self) -> int:
        return self._fixed(I16)

    def int32(self) -> int:
        return self._fixed(I32)

    def int64(self) -> int:
        return self._fixed(I64)

    def uvarint(self) -> int:
        v, self.pos = read_uvarint(self.buf, self.pos)
        return v

    def varint(self) -> int:
        v, self.pos = read_varint(self.buf, self.pos)
        return v

    def varlong(self) -> int:
        v, self.pos = read_varlong(self.buf, self.pos)
        return v

    def nullable_string(self) -> str | None:
        try:
            v, self.pos = read_nullable_string(self.buf, self.pos)
        except struct.error as e:
            raise DecodeError(str(e)) from None
        return v

    def string(self) -> str:
        try:
            v, self.pos = read_string(self.buf, self.pos)
        except struct.error as e:
            raise DecodeError(str(e)) from None
        return v

    def compact_nullable_string(self) -> str | None:
        try:
            v, self.pos = read_compact_nullable_string(self.buf, self.pos)
        except struct.error as e:
            raise DecodeError(str(e)) from None
        return v

    def raw(self, n: int) -> memoryview:
        end = _span(self.buf, self.pos, n)
        v = self.buf[self.pos : end]
        self.pos = end
        return v

    def tagged_fields(self) -> dict[int, bytes]:
        """Read a tagged-field section, returning every field as raw bytes."""
        out: dict[int, bytes] = {}
        n = self.uvarint()
        for _ in range(n):
            tag, start, end = read_unknown_tag(self.buf, self.pos)
            out[tag] = bytes(self.buf[start:end])
            self.pos = end
        return out


class Writer:
    """An append-only byte sink for hand-written encoders."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> None:
        self.buf += I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += I64.pack(v)

    def uvarint(self, v: int) -> None:
        self.buf += uvarint(v)

    def varint(self, v: int) -> None:
        self.buf += varint(v)

    def nullable_string(self, s: str | None) -> None:
        write_nullable_string(self.buf, s)

    def string(self, s: str) -> None:
        write_string(self.buf, s)

    def tagged_fields(self, fields: dict[int, bytes]) -> None:
        write_tagged(self.buf, [], fields) if fields else self.buf.append(0)

    def getvalue(self) -> bytes:
        return bytes(self.buf)
