"""One blocking connection that sends frames built by ``kafkalite_wire`` and decodes the answers into trees.

A tree is what a response looks like with the codec's classes taken away: a message becomes a dict of its
fields (in declaration order, ``unknown_tagged_fields`` left out when empty), lists stay lists, UUIDs become
their string, records (memoryviews) become bytes. Trees compare with ``==`` and print readably.
"""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

from kafkalite_wire import api
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import REGISTRY

MAX_FRAME = 64 << 20
CLOSED = {"closed": "the broker closed the connection without a response"}


def api_key_of(body: Any) -> int:
    return int(type(body).API_KEY)


def to_tree(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return [to_tree(x) for x in obj]
    if isinstance(obj, (memoryview, bytearray)):
        return bytes(obj)
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if isinstance(obj, dict):
        return {k: to_tree(v) for k, v in obj.items()}
    slots = getattr(type(obj), "__slots__", None)
    if slots and hasattr(type(obj), "__match_args__"):
        out = {}
        for name in slots:
            v = getattr(obj, name)
            if name == "unknown_tagged_fields" and not v:
                continue
            out[name] = to_tree(v)
        return out
    return obj


class WireConn:
    """Requests answered in order on one socket (a fresh connection per case keeps cases independent)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0, client_id: str = "differential") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._cid = 0
        self._buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv_frame(self) -> bytes | None:
        while True:
            if len(self._buf) >= 4:
                (size,) = struct.unpack(">i", self._buf[:4])
                if size < 0 or size > MAX_FRAME:
                    raise RuntimeError(f"response frame of {size} bytes")
                if len(self._buf) >= 4 + size:
                    frame = bytes(self._buf[4:4 + size])
                    del self._buf[:4 + size]
                    return frame
            try:
                data = self.sock.recv(1 << 16)
            except (ConnectionResetError, BrokenPipeError):
                return None
            if not data:
                return None
            self._buf += data

    def request(self, body: Any, version: int) -> Any:
        """The decoded response object, or None when the broker closed the connection instead."""
        key = api_key_of(body)
        self._cid += 1
        frame = api.encode_request(RequestHeader(key, version, self._cid, self.client_id), body)
        try:
            self.sock.sendall(frame)
        except (ConnectionResetError, BrokenPipeError):
            return None
        got = self._recv_frame()
        if got is None:
            return None
        cid, resp = api.parse_response(key, version, got)
        if cid != self._cid:
            raise RuntimeError(f"correlation id {cid} for request {self._cid}")
        return resp

    def tree(self, body: Any, version: int) -> Any:
        resp = self.request(body, version)
        return dict(CLOSED) if resp is None else to_tree(resp)


def name_of(key: int) -> str:
    info = REGISTRY.get(key)
    return info.name if info else str(key)
