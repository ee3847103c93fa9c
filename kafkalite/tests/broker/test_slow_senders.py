"""Slow senders do not starve well-behaved clients (issue 29).

Hundreds of connections misbehave in the two ways that pinned the request-memory pool before: announcing
100 MB frames and then sending (next to) nothing, and sending all but the last bytes of 256 KiB frames until
the pool is full. Meanwhile one well-behaved client sends small requests (Metadata) and 1 MB produces; their
latencies are printed (run with ``-s``). The bounds asserted are generous, to catch a hang, not to time.
"""
from __future__ import annotations

import socket
import statistics
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import MetadataRequest, ProduceRequest

MB = 1024 * 1024
HANG = 30.0   # seconds: a well-behaved request slower than this is a hang, not a latency


def _frame_head(size: int) -> bytes:
    """The start of a Produce v9 frame announcing ``size`` bytes (api key 0, version 9, correlation id 1)."""
    return struct.pack(">ihhi", size, 0, 9, 1)


def _open(host: str, port: int, n: int, payload: bytes) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=20)
        s.sendall(payload)
        out.append(s)
    return out


def _latencies(b: Broker, rounds: int) -> tuple[list[float], list[float]]:
    small, big = [], []
    req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="no-such-topic", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"x" * MB)])])
    with RawClient(b.host, b.port, timeout=HANG) as c:
        for _ in range(rounds):
            t0 = time.perf_counter()
            assert c.request(MetadataRequest(topics=[]), 12).brokers
            small.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r = c.request(req, 9)
            big.append(time.perf_counter() - t0)
            assert r.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return small, big


def _report(label: str, small: list[float], big: list[float]) -> str:
    def ms(xs: list[float]) -> str:
        return f"median {statistics.median(xs) * 1000:.1f} ms, max {max(xs) * 1000:.1f} ms"
    return f"{label}: Metadata {ms(small)}; 1 MB Produce {ms(big)}"


@pytest.fixture
def figures(capsys: pytest.CaptureFixture[str]) -> Iterator[list[str]]:
    lines: list[str] = []
    yield lines
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def test_announced_big_frames_trickled_hold_nothing(tmp_path: Path, figures: list[str]) -> None:
    """300 connections announce 100 MB Produce frames and send 1 KiB of them: they hold what they sent."""
    with Broker(data_dir=tmp_path / "d", overrides={"queued.max.request.bytes": str(32 * MB)}) as b:
        figures.append(_report("baseline", *_latencies(b, 10)))
        slow = _open(b.host, b.port, 300, _frame_head(100 * MB - 4) + bytes(1024))
        try:
            small, big = _latencies(b, 20)
            figures.append(_report("300 x announced 100 MB, 1 KiB sent", small, big))
            assert max(small + big) < HANG
        finally:
            for s in slow:
                s.close()


def test_a_pool_full_of_stalled_half_requests_makes_way(tmp_path: Path, figures: list[str]) -> None:
    """200 connections each send 255 KiB of a 256 KiB frame and stop, filling a 32 MB pool; the stalled ones
    are closed once others wait (kafkalite.request.stall.ms), and the well-behaved client goes on."""
    size = 256 * 1024
    overrides = {"queued.max.request.bytes": str(32 * MB), "kafkalite.request.stall.ms": "1000",
                 "kafkalite.request.body.timeout.ms": "60000"}
    with Broker(data_dir=tmp_path / "d", overrides=overrides) as b:
        slow = _open(b.host, b.port, 200, _frame_head(size - 4) + bytes(size - 1024 - 8))
        try:
            time.sleep(0.5)
            small, big = _latencies(b, 20)
            figures.append(_report("200 x 255 KiB of 256 KiB sent, then stalled (32 MB pool)", small, big))
            assert max(small + big) < HANG
            closed = 0
            for s in slow:
                s.settimeout(0.01)
                try:
                    closed += s.recv(1) == b""
                except (TimeoutError, BlockingIOError):
                    pass
                except ConnectionResetError:
                    closed += 1
            figures.append(f"  stalled connections closed to make way: {closed} of {len(slow)}")
            assert closed > 0
        finally:
            for s in slow:
                s.close()
