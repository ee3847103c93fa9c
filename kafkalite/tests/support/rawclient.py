"""A blocking, byte-level Kafka client for broker tests: send any frame, read responses in order."""
from __future__ import annotations

import socket
import struct
from typing import Any

from kafkalite_wire import api
from kafkalite_wire.headers import RequestHeader
from kafkalite_wire.messages import REGISTRY


class RawClient:
    def __init__(self, host: str, port: int, timeout: float = 20.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._cid = 0
        self._buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next_cid(self) -> int:
        self._cid += 1
        return self._cid

    def frame(self, body: Any, version: int, cid: int | None = None, client_id: str | None = "raw") -> bytes:
        key = next(k for k, info in REGISTRY.items() if info.request_class is type(body))
        cid = self.next_cid() if cid is None else cid
        return api.encode_request(RequestHeader(key, version, cid, client_id), body)

    def send(self, body: Any, version: int, cid: int | None = None) -> int:
        cid = self.next_cid() if cid is None else cid
        self.sock.sendall(self.frame(body, version, cid))
        return cid

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes | None:
        """One response frame without its size prefix; None if the broker closed the connection."""
        while True:
            if len(self._buf) >= 4:
                (size,) = struct.unpack(">i", self._buf[:4])
                if len(self._buf) >= 4 + size:
                    frame = bytes(self._buf[4:4 + size])
                    del self._buf[:4 + size]
                    return frame
            try:
                data = self.sock.recv(1 << 16)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self._buf += data

    def recv(self, api_key: int, version: int) -> tuple[int, Any]:
        frame = self.recv_frame()
        assert frame is not None, "connection closed by broker"
        return api.parse_response(api_key, version, frame)

    def request(self, body: Any, version: int) -> Any:
        key = next(k for k, info in REGISTRY.items() if info.request_class is type(body))
        cid = self.send(body, version)
        got_cid, resp = self.recv(key, version)
        assert got_cid == cid
        return resp

    def is_closed_by_peer(self) -> bool:
        """True once the broker has closed this connection (reads until EOF; responses are discarded)."""
        try:
            while True:
                data = self.sock.recv(1 << 16)
                if not data:
                    return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
