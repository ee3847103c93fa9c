"""Request and response headers (RequestHeader.json / ResponseHeader.json, hand-written).

Request header versions:
* v0: api_key int16, api_version int16, correlation_id int32 -- only ControlledShutdown v0 uses it.
* v1: v0 + client_id NULLABLE_STRING (int16 length, -1 = null) -- every non-flexible request version.
* v2: v1 + tagged fields. client_id stays a *non-compact* nullable string (its spec has
  `"flexibleVersions": "none"`) -- every flexible request version (KIP-482).

Response header versions:
* v0: correlation_id int32.   * v1: v0 + tagged fields -- flexible response versions,
  EXCEPT ApiVersions (key 18): its response always uses header v0, so that a client that sent a too-new version
  can still parse the broker's answer (KIP-511).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite_wire.errors import DecodeError
from kafkalite_wire.messages import REGISTRY
from kafkalite_wire.primitives import Reader, Writer

API_VERSIONS_KEY = 18
CONTROLLED_SHUTDOWN_KEY = 7


_FLEXIBLE: dict[tuple[int, int], bool] = {}   # memo for known api keys at versions 0..63 (bounded)


def _flexible(api_key: int, api_version: int) -> bool:
    key = (api_key, api_version)
    known = _FLEXIBLE.get(key)
    if known is not None:
        return known
    info = REGISTRY.get(api_key)
    flexible = info is not None and info.is_flexible(api_version)
    if info is not None and 0 <= api_version < 64:
        _FLEXIBLE[key] = flexible
    return flexible


def request_header_version(api_key: int, api_version: int) -> int:
    """Header version a request of (api_key, api_version) carries (unknown keys are read as v1)."""
    if api_key == CONTROLLED_SHUTDOWN_KEY and api_version == 0:
        return 0
    return 2 if _flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Header version of the response to (api_key, api_version); ApiVersions is always v0."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if _flexible(api_key, api_version) else 0


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int = 1
    unknown_tagged_fields: dict[int, bytes] = field(default_factory=dict)

    @classmethod
    def decode_from(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[RequestHeader, int]:
        """Decode a request header at `pos`; the header version follows from api key/version."""
        r = Reader(buf, pos)
        api_key = r.int16()
        api_version = r.int16()
        correlation_id = r.int32()
        hv = request_header_version(api_key, api_version)
        hdr = cls(api_key, api_version, correlation_id, None, hv)
        if hv >= 1:
            hdr.client_id = r.nullable_string()
        if hv >= 2:
            hdr.unknown_tagged_fields = r.tagged_fields()
        return hdr, r.pos

    def encode(self, header_version: int | None = None) -> bytes:
        hv = (
            request_header_version(self.api_key, self.api_version)
            if header_version is None
            else header_version
        )
        w = Writer()
        w.int16(self.api_key)
        w.int16(self.api_version)
        w.int32(self.correlation_id)
        if hv >= 1:
            w.nullable_string(self.client_id)
        if hv >= 2:
            w.tagged_fields(self.unknown_tagged_fields)
        return w.getvalue()


@dataclass(slots=True)
class ResponseHeader:
    correlation_id: int
    header_version: int = 0
    unknown_tagged_fields: dict[int, bytes] = field(default_factory=dict)

    @classmethod
    def decode_from(
        cls, buf: bytes | bytearray | memoryview, header_version: int, pos: int = 0
    ) -> tuple[ResponseHeader, int]:
        r = Reader(buf, pos)
        hdr = cls(r.int32(), header_version)
        if header_version >= 1:
            hdr.unknown_tagged_fields = r.tagged_fields()
        elif header_version != 0:
            raise DecodeError(f"bad response header version {header_version}")
        return hdr, r.pos

    def encode(self) -> bytes:
        w = Writer()
        w.int32(self.correlation_id)
        if self.header_version >= 1:
            w.tagged_fields(self.unknown_tagged_fields)
        return w.getvalue()


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    if header_version == 0:
        return correlation_id.to_bytes(4, "big", signed=True)
    return correlation_id.to_bytes(4, "big", signed=True) + b"\x00"
