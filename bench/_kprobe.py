"""A tiny raw-socket Kafka readiness probe: ApiVersions v0, then one Metadata request.

It is deliberately independent of our own ``wire`` package (it is used to time peers too) and of client
libraries (librdkafka's reconnect backoff would blur a start-to-ready figure by up to a second).

Framing: every request is ``int32 size`` + request header v1 (``int16 api_key, int16 api_version,
int32 correlation_id, nullable string client_id``) + body. ApiVersions v0 has an empty body and its
response (header v0: just the correlation id) is ``int16 error_code`` + ``[int16 api_key, int16 min,
int16 max]``. Metadata v1..v8 are non-flexible; their body is ``topics`` (int32 array length, -1 = all
topics), plus ``allow_auto_topic_creation`` (bool) from v4, plus two authorized-operations bools at v8.
Kafka 4 dropped Metadata v0-v3, so the version is picked from what ApiVersions advertises.
"""

from __future__ import annotations

import socket
import struct

_CLIENT_ID = b"kafkalite-bench"


def _request(api_key: int, version: int, corr: int, body: bytes) -> bytes:
    head = struct.pack(">hhih", api_key, version, corr, len(_CLIENT_ID)) + _CLIENT_ID
    payload = head + body
    return struct.pack(">i", len(payload)) + payload


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return bytes(buf)


def _roundtrip(sock: socket.socket, api_key: int, version: int, corr: int, body: bytes) -> bytes:
    sock.sendall(_request(api_key, version, corr, body))
    (size,) = struct.unpack(">i", _read_exact(sock, 4))
    frame = _read_exact(sock, size)
    (got,) = struct.unpack(">i", frame[:4])
    if got != corr:
        raise ConnectionError(f"correlation id {got} != {corr}")
    return frame[4:]


def metadata_ok(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when the broker answers ApiVersions and then a Metadata request on one connection."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            body = _roundtrip(sock, 18, 0, 1, b"")
            (err,) = struct.unpack(">h", body[:2])
            if err != 0:
                return False
            (count,) = struct.unpack(">i", body[2:6])
            meta_range = None
            for i in range(count):
                key, lo, hi = struct.unpack(">hhh", body[6 + 6 * i : 12 + 6 * i])
                if key == 3:
                    meta_range = (lo, hi)
            if meta_range is None:
                return False
            version = min(meta_range[1], 8)
            if version < max(meta_range[0], 1):
                return False
            mbody = struct.pack(">i", -1)
            if version >= 4:
                mbody += b"\x00"
            if version >= 8:
                mbody += b"\x00\x00"
            resp = _roundtrip(sock, 3, version, 2, mbody)
            return len(resp) > 4
    except (OSError, ConnectionError, struct.error):
        return False
