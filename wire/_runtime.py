"""Entry points shared by the generated message modules (`wire/messages/_gen_*.py`).

Generated code dispatches on the version through per-message tables ``{version: function}``; several versions
share one function when their wire layout is identical. These helpers own the error policy: whatever goes wrong
while decoding (short input, bad lengths, invalid UTF-8, ...) surfaces as `DecodeError`, and encoding problems
(null in a non-nullable field, out-of-range integer) as `EncodeError`.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kafkalite_wire.errors import DecodeError, EncodeError
from kafkalite_wire.primitives import Chunk, as_memoryview

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


class _Fresh:
    """Type of `FRESH`: the default of generated `__init__` parameters whose default is a new list/dict/struct."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<fresh>"


FRESH = _Fresh()
"""Sentinel default: generated `__init__`s build a fresh mutable default when a parameter is left at it (what
`dataclasses.field(default_factory=...)` did), so explicit `None` still means None."""


class ApiInfo:
    """One Kafka API as generated from its JSON specs (immutable).

    `flexible_min` is the first flexible (KIP-482: compact types + tagged fields) version, or None if the API has
    none. `latest_version_unstable` mirrors the spec flag (the newest version is not final in Kafka 3.9).
    `request_class` / `response_class` are resolved on first access: the registry itself imports no message
    module (`module` is the dotted name of the generated module holding both classes).
    """

    __slots__ = (
        "_classes",
        "flexible_min",
        "key",
        "latest_version_unstable",
        "max_version",
        "min_version",
        "module",
        "name",
        "request_name",
        "response_name",
    )
    key: int
    name: str
    min_version: int
    max_version: int
    flexible_min: int | None
    module: str
    request_name: str
    response_name: str
    latest_version_unstable: bool
    _classes: tuple[type, type] | None

    def __init__(
        self,
        key: int,
        name: str,
        min_version: int,
        max_version: int,
        flexible_min: int | None,
        module: str,
        request_name: str,
        response_name: str,
        latest_version_unstable: bool = False,
    ) -> None:
        init = object.__setattr__
        init(self, "key", key)
        init(self, "name", name)
        init(self, "min_version", min_version)
        init(self, "max_version", max_version)
        init(self, "flexible_min", flexible_min)
        init(self, "module", module)
        init(self, "request_name", request_name)
        init(self, "response_name", response_name)
        init(self, "latest_version_unstable", latest_version_unstable)
        init(self, "_classes", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ApiInfo is immutable (cannot set {name!r})")

    def _load(self) -> tuple[type, type]:
        classes = self._classes
        if classes is None:
            __import__(self.module)  # the C import path (visible to -X importtime), unlike importlib
            mod = sys.modules[self.module]
            classes = (getattr(mod, self.request_name), getattr(mod, self.response_name))
            object.__setattr__(self, "_classes", classes)
        return classes

    @property
    def request_class(self) -> type:
        """The request class (imports its generated module on first access)."""
        return self._load()[0]

    @property
    def response_class(self) -> type:
        """The response class (imports its generated module on first access)."""
        return self._load()[1]

    def _fields(self) -> tuple[object, ...]:
        return (
            self.key,
            self.name,
            self.min_version,
            self.max_version,
            self.flexible_min,
            self.module,
            self.request_name,
            self.response_name,
            self.latest_version_unstable,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not ApiInfo:
            return NotImplemented
        assert isinstance(other, ApiInfo)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"ApiInfo(key={self.key}, name={self.name!r}, min_version={self.min_version}, "
            f"max_version={self.max_version}, flexible_min={self.flexible_min}, module={self.module!r}, "
            f"latest_version_unstable={self.latest_version_unstable})"
        )

    def is_flexible(self, version: int) -> bool:
        return self.flexible_min is not None and version >= self.flexible_min
