"""Entry points shared by the generated message modules (`wire/messages/_gen_*.py`).

Generated code dispatches on the version through per-message tables ``{version: function}``; several versions
share one function when their wire layout is identical. These helpers own the error policy: whatever goes wrong
while decoding (short input, bad lengths, invalid UTF-8, ...) surfaces as `DecodeError`, and encoding problems
(null in a non-nullable field, out-of-range integer) as `EncodeError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from wire.errors import DecodeError, EncodeError
from wire.primitives import Chunk, as_memoryview

T = TypeVar("T")

EncodeFn = Callable[[bytearray, "list[Chunk] | None", Any], None]

_DECODE_ERRORS = (
    struct.error,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    MemoryError,
    RecursionError,
    KeyError,
)


def decode(
    buf: bytes | bytearray | memoryview,
    version: int,
    table: Mapping[int, Callable[[memoryview, int], tuple[T, int]]],
    name: str,
    pos: int = 0,
) -> tuple[T, int]:
    """Decode one message at `pos`; returns (message, position after it)."""
    fn = table.get(version)
    if fn is None:
        raise DecodeError(f"{name} has no version {version}")
    try:
        mv = as_memoryview(buf)
        return fn(mv, pos)
    except DecodeError:
        raise
    except _DECODE_ERRORS as e:
        raise DecodeError(f"malformed {name} v{version}: {type(e).__name__}: {e}") from None


def _encoder(table: Mapping[int, EncodeFn], version: int, name: str) -> EncodeFn:
    fn = table.get(version)
    if fn is None:
        raise EncodeError(f"{name} has no version {version}")
    return fn


def encode(obj: object, version: int, table: Mapping[int, EncodeFn]) -> bytes:
    """Encode to one bytes object (file regions in records fields are read with os.pread)."""
    fn = _encoder(table, version, type(obj).__name__)
    out = bytearray()
    try:
        fn(out, None, obj)
    except EncodeError:
        raise
    except (struct.error, AttributeError, TypeError, OverflowError) as e:
        raise EncodeError(f"cannot encode {type(obj).__name__} v{version}: {e}") from e
    return bytes(out)


def encode_chunks(obj: object, version: int, table: Mapping[int, EncodeFn]) -> list[Chunk]:
    """Encode to a list of chunks; large records payloads and file regions stay separate (zero copy)."""
    fn = _encoder(table, version, type(obj).__name__)
    out = bytearray()
    chunks: list[Chunk] = []
    try:
        fn(out, chunks, obj)
    except EncodeError:
        raise
    except (struct.error, AttributeError, TypeError, OverflowError) as e:
        raise EncodeError(f"cannot encode {type(obj).__name__} v{version}: {e}") from e
    if out:
        chunks.append(out)
    return chunks


@dataclass(frozen=True, slots=True)
class ApiInfo:
    """One Kafka API as generated from its JSON specs.

    `flexible_min` is the first flexible (KIP-482: compact types + tagged fields) version, or None if the API has
    none. `latest_version_unstable` mirrors the spec flag (the newest version is not final in Kafka 3.9).
    """

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_min: int | None
    request_class: type
    response_class: type
    latest_version_unstable: bool = False

    def is_flexible(self, version: int) -> bool:
        return self.flexible_min is not None and version >= self.flexible_min
