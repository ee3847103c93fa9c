"""Array and tagged-section helpers used by the generated codecs (kept out of the generated code to keep it small).

ARRAY = int32 count (-1 = null); COMPACT_ARRAY = uvarint count+1 (0 = null). A count larger than the bytes left
is rejected before anything is allocated (every element takes at least one byte -- Kafka applies the same rule).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kafkalite_wire.errors import DecodeError, EncodeError
from kafkalite_wire.primitives import I32, Chunk, read_unknown_tag, read_uvarint, uvarint

T = TypeVar("T")

_i32 = I32.unpack_from
_p32 = I32.pack


def _count(buf: memoryview, pos: int, compact: bool) -> tuple[int, int]:
    if compact:
        b = buf[pos]
        if b < 0x80:
            n = b - 1
            pos += 1
        else:
            n, pos = read_uvarint(buf, pos)
            n -= 1
    else:
        n = _i32(buf, pos)[0]
        pos += 4
        if n < -1:
            raise DecodeError(f"negative array length {n}")
    if n > len(buf) - pos:
        raise DecodeError(f"array length {n} exceeds remaining {len(buf) - pos} bytes")
    return n, pos


def read_array(
    buf: memoryview, pos: int, compact: bool, elem: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T], int]:
    n, pos = _count(buf, pos, compact)
    if n < 0:
        raise DecodeError("null in a non-nullable array")
    out: list[T] = []
    append = out.append
    for _ in range(n):
        x, pos = elem(buf, pos)
        append(x)
    return out, pos


def read_nullable_array(
    buf: memoryview, pos: int, compact: bool, elem: Callable[[memoryview, int], tuple[T, int]]
) -> tuple[list[T] | None, int]:
    n, pos = _count(buf, pos, compact)
    if n < 0:
        return None, pos
    out: list[T] = []
    append = out.append
    for _ in range(n):
        x, pos = elem(buf, pos)
        append(x)
    return out, pos


#: elements unpacked per struct call by :func:`read_fixed_list`
FIXED_CHUNK = 8192


def read_fixed_list(buf: memoryview, pos: int, compact: bool, code: str, width: int) -> tuple[list[Any], int]:
    """Array of a fixed-width primitive (int32, int64, ...), unpacked in one struct call."""
    n, pos = _count(buf, pos, compact)
    if n < 0:
        raise DecodeError("null in a non-nullable array")
    if n == 0:
        return [], pos
    end = pos + n * width
    if end > len(buf):
        raise DecodeError(f"array of {n} x {width} bytes exceeds remaining {len(buf) - pos}")
    if n <= FIXED_CHUNK:
        return list(struct.unpack_from(f">{n}{code}", buf, pos)), end
    # One struct call for a million elements makes a million int objects holding the GIL throughout (~0.1 s):
    # a decoder in a worker thread then stalls the event loop. In chunks, the GIL changes hands between them.
    out: list[Any] = []
    step = FIXED_CHUNK * width
    for at in range(pos, end, step):
        k = min(FIXED_CHUNK, (end - at) // width)
        out += struct.unpack_from(f">{k}{code}", buf, at)
    return out, end


def read_nullable_fixed_list(
    buf: memoryview, pos: int, compact: bool, code: str, width: int
) -> tuple[list[Any] | None, int]:
    n, after = _count(buf, pos, compact)
    if n < 0:
        return None, after
    return read_fixed_list(buf, pos, compact, code, width)


def read_tags(buf: memoryview, pos: int) -> tuple[dict[int, bytes], int]:
    """A tagged-field section of a struct without known tagged fields: everything is kept as unknown."""
    n = buf[pos]
    if n == 0:
        return {}, pos + 1
    n, pos = read_uvarint(buf, pos)
    out: dict[int, bytes] = {}
    for _ in range(n):
        tag, start, end = read_unknown_tag(buf, pos)
        out[tag] = bytes(buf[start:end])
        pos = end
    return out, pos


def _write_count(out: bytearray, v: Sequence[object] | None, compact: bool, nullable: bool) -> None:
    if v is None:
        if not nullable:
            raise EncodeError("null in a non-nullable array")
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
    elif compact:
        n = len(v) + 1
        if n < 0x80:
            out.append(n)
        else:
            out += uvarint(n)
    else:
        out += _p32(len(v))


def write_array(
    out: bytearray,
    ch: list[Chunk] | None,
    v: Sequence[T] | None,
    compact: bool,
    nullable: bool,
    elem: Callable[[bytearray, list[Chunk] | None, T], None],
) -> None:
    _write_count(out, v, compact, nullable)
    if v:
        for x in v:
            elem(out, ch, x)


def write_plain_array(
    out: bytearray, v: Sequence[T] | None, compact: bool, nullable: bool, elem: Callable[[bytearray, T], None]
) -> None:
    _write_count(out, v, compact, nullable)
    if v:
        for x in v:
            elem(out, x)


def write_fixed_list(
    out: bytearray, v: Sequence[Any] | None, compact: bool, nullable: bool, code: str
) -> None:
    _write_count(out, v, compact, nullable)
    if v:
        out += struct.pack(f">{len(v)}{code}", *v)


def write_uuid(out: bytearray, u: uuid.UUID) -> None:
    out += u.bytes
