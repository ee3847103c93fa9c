"""Connection.send_chunks: in-memory chunks and file regions arrive in order, byte for byte, on both paths
(small regions pread + one sendmsg; large regions corked sendfile), and a region past the end of its file
closes the connection instead of sending a short response."""
from __future__ import annotations

import os
import socket as _stdsocket
from pathlib import Path
from typing import Any

import pytest
import trio

from kafkalite.errors import ConnectionClosed
from kafkalite.server import connection
from kafkalite.server.connection import Connection


async def _tcp_pair() -> tuple[Any, Any]:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    a = trio.socket.socket()
    await a.connect(listener.getsockname())
    b, _ = await listener.accept()
    listener.close()
    a.setsockopt(_stdsocket.IPPROTO_TCP, _stdsocket.TCP_NODELAY, 1)
    return a, b


async def _send_and_receive(chunks: list[Any], corked_after: list[int] | None = None) -> bytes:
    a, b = await _tcp_pair()
    conn = Connection.__new__(Connection)
    raw = _stdsocket.socket(fileno=a.detach())   # the connection drives a plain non-blocking socket
    raw.setblocking(False)
    a = raw
    conn.sock = a
    received = bytearray()

    async def receiver() -> None:
        while True:
            data = await b.recv(65536)
            if not data:
                return
            received.extend(data)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(receiver)
        try:
            await conn.send_chunks(chunks)
            if corked_after is not None and connection._CORK is not None:
                corked_after.append(a.getsockopt(_stdsocket.IPPROTO_TCP, connection._CORK))
        finally:
            trio.lowlevel.notify_closing(a)
            a.close()
    b.close()
    return bytes(received)


@pytest.fixture
def segment(tmp_path: Path) -> Any:
    data = os.urandom(300_000)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, data
    os.close(fd)


async def test_small_regions_are_sent_inline(segment: Any) -> None:
    fd, data = segment
    chunks = [b"head", (fd, 10, 100), memoryview(b"mid"), b"", (fd, 5000, 2000), bytearray(b"tail")]
    assert connection.SMALL_REGION_BYTES >= 100 + 2000
    got = await _send_and_receive(chunks)
    assert got == b"head" + data[10:110] + b"mid" + data[5000:7000] + b"tail"


async def test_large_regions_are_sent_with_sendfile(segment: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fd, data = segment
    calls: list[tuple[int, int]] = []
    real_sendfile = os.sendfile

    def spy(out: int, in_fd: int, offset: int, count: int) -> int:
        calls.append((offset, count))
        return real_sendfile(out, in_fd, offset, count)

    monkeypatch.setattr(connection.os, "sendfile", spy)
    big = connection.SMALL_REGION_BYTES + 1
    chunks = [b"head", (fd, 7, 50), (fd, 1000, big), b"tail"]
    corked: list[int] = []
    got = await _send_and_receive(chunks, corked)
    assert got == b"head" + data[7:57] + data[1000:1000 + big] + b"tail"
    assert calls and calls[0][0] == 7   # every region of the response went through sendfile
    assert all(c == 0 for c in corked)   # TCP_CORK is off again once the response is out


async def test_region_past_end_of_file_closes_connection(segment: Any) -> None:
    fd, data = segment
    for length in (100, connection.SMALL_REGION_BYTES + 1):   # pread path, then the sendfile path
        closed = []
        try:
            await _send_and_receive([b"head", (fd, len(data) - 10, length)])
        except* ConnectionClosed as group:
            closed.extend(group.exceptions)
        assert len(closed) == 1 and "ended early" in str(closed[0])
