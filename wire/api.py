"""Whole-frame helpers: request/response header + body, for the broker and for tests and tools.

Broker side:

    hdr, body = parse_request(frame)          # frame: one frame *without* its 4-byte size (FrameBuffer output)
    chunks = encode_response(hdr, response)   # [size prefix + response header + ..., body chunks...]

`parse_request` raises `UnknownApiKey` / `UnsupportedVersion` (both carry the decoded `.header`, so the broker
can still answer with the right correlation id -- e.g. ApiVersions at an unknown version gets a v0 body with
UNSUPPORTED_VERSION) or `DecodeError` for malformed input. The two are *not* DecodeErrors.

`encode_response` returns chunks (bytes, memoryview, or file regions `(fd, offset, length)` from records fields);
the connection writes them in order, using `os.sendfile` for regions. Response header: v0 for ApiVersions, v1 for
flexible versions, v0 otherwise.

Client side (tests/tools): `encode_request(hdr, body) -> bytes` (with size prefix) and
`parse_response(api_key, version, frame) -> (correlation_id, body)` (frame without the size prefix).
"""

from __future__ import annotations

from typing import Any, Protocol

from kafkalite_wire.errors import DecodeError
from kafkalite_wire.headers import (
    RequestHeader,
    ResponseHeader,
    request_header_version,
    response_header_version,
)
from kafkalite_wire.messages import REGISTRY, ApiInfo
from kafkalite_wire.primitives import Chunk, chunk_len, read_region


class Message(Protocol):
    def encode(self, version: int) -> bytes: ...

    def encode_chunks(self, version: int) -> list[Chunk]: ...


class RequestError(Exception):
    """A request whose header decoded but which we cannot serve; `.header` is the decoded header."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message)
        self.header = header


class UnknownApiKey(RequestError):
    pass


class UnsupportedVersion(RequestError):
    """The api key is known but the version is outside the codec's range (`.info` has the range)."""

    def __init__(self, header: RequestHeader, info: ApiInfo) -> None:
        super().__init__(
            header,
            f"{info.name} v{header.api_version} unsupported (have {info.min_version}-{info.max_version})",
        )
        self.info = info


def parse_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Any]:
    """Decode header and body of one request frame (no size prefix)."""
    hdr, pos = RequestHeader.decode_from(frame)
    info = REGISTRY.get(hdr.api_key)
    if info is None:
        raise UnknownApiKey(hdr, f"unknown api key {hdr.api_key}")
    if not info.min_version <= hdr.api_version <= info.max_version:
        raise UnsupportedVersion(hdr, info)
    body, _ = info.request_class.decode_from(frame, hdr.api_version, pos)  # type: ignore[attr-defined]
    return hdr, body


def encode_response(hdr: RequestHeader, body: Message, version: int | None = None) -> list[Chunk]:
    """Size prefix + response header + body as chunks. `version` overrides hdr.api_version (ApiVersions
    answering an unsupported version with a v0 body)."""
    v = hdr.api_version if version is None else version
    head = ResponseHeader(hdr.correlation_id, response_header_version(hdr.api_key, v)).encode()
    chunks = body.encode_chunks(v)
    size = len(head) + sum(chunk_len(c) for c in chunks)
    first = bytearray(size.to_bytes(4, "big", signed=True))
    first += head
    if chunks and not isinstance(chunks[0], tuple):
        first += chunks[0]
        return [first, *chunks[1:]]
    return [first, *chunks]


def join_chunks(chunks: list[Chunk]) -> bytes:
    """Concatenate chunks into bytes, reading file regions (tests/tools)."""
    out = bytearray()
    for c in chunks:
        out += read_region(c) if isinstance(c, tuple) else c
    return bytes(out)


def encode_request(hdr: RequestHeader, body: Message) -> bytes:
    """A whole request frame including the 4-byte size prefix (header version from the api/version)."""
    data = hdr.encode(request_header_version(hdr.api_key, hdr.api_version)) + body.encode(hdr.api_version)
    return len(data).to_bytes(4, "big", signed=True) + data


def parse_response(api_key: int, version: int, frame: bytes | bytearray | memoryview) -> tuple[int, Any]:
    """Decode a response frame (no size prefix): returns (correlation_id, body)."""
    info = REGISTRY.get(api_key)
    if info is None:
        raise DecodeError(f"unknown api key {api_key}")
    rh, pos = ResponseHeader.decode_from(frame, response_header_version(api_key, version))
    body, _ = info.response_class.decode_from(frame, version, pos)  # type: ignore[attr-defined]
    return rh.correlation_id, body
