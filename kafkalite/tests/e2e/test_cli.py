"""``python -m kafkalite serve`` as a process: ready line, graceful SIGTERM, crash (SIGKILL) and restart."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire import api
from kafkalite_wire.messages import FetchRequest, InitProducerIdRequest, MetadataRequest, ProduceRequest


def start(data_dir: Path, *extra: str) -> tuple[subprocess.Popen[str], str, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_") or k == "KAFKALITE_REFERENCE"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data_dir),
         *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("kafkalite ready on "):
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"no ready line, got {line!r}; stderr:\n{err}")
    host, port = line.strip().rsplit(" ", 1)[1].rsplit(":", 1)
    return proc, host, int(port)


def produce(c: RawClient, topic: str, batch: bytes, acks: int = -1) -> int:
    req = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    p = c.request(req, 9).responses[0].partition_responses[0]
    assert p.error_code == 0
    return p.base_offset


def fetch_all(c: RawClient, topic: str) -> tuple[int, bytes]:
    req = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 24, topics=[FetchRequest.FetchTopic(
        topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0,
                                                             partition_max_bytes=1 << 24)])])
    part = c.request(req, 11).responses[0].partitions[0]
    assert part.error_code == 0
    return part.high_watermark, bytes(part.records)


def test_ready_line_and_sigterm_writes_clean_shutdown_marker(tmp_path: Path) -> None:
    proc, host, port = start(tmp_path / "data")
    try:
        assert port > 0
        with RawClient(host, port) as c:
            c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="cli-t")]), 9)
            produce(c, "cli-t", encode_batch([b"x"]))
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    out, _err = proc.communicate(timeout=30)
    assert out == ""   # exactly one line on stdout (already read)
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "data" / "cli-t-0").is_dir()


def test_sigkill_mid_stream_then_restart_serves_every_acknowledged_batch_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc, host, port = start(data)
    batches = [encode_batch([f"r{i}-{j}".encode() for j in range(3)]) for i in range(3000)]
    acked: list[int] = []
    try:
        c = RawClient(host, port)
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="crash")]), 9)
        pid1 = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).producer_id

        def req(b: bytes) -> ProduceRequest:
            return ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
                name="crash", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b)])])

        def sender() -> None:   # pipelines requests; responses are read on the main thread
            try:
                for i, b in enumerate(batches):
                    c.send(req(b), 9, cid=i + 1000)
            except OSError:
                pass    # the broker was killed mid-stream

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        while True:
            frame = c.recv_frame()
            if frame is None:
                break
            cid, resp = api.parse_response(0, 9, frame)
            part = resp.responses[0].partition_responses[0]
            assert part.error_code == 0 and part.base_offset == 3 * len(acked)
            acked.append(cid - 1000)
            if len(acked) == 200:
                proc.send_signal(signal.SIGKILL)   # more requests are in flight right now
        t.join(30)
        c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert len(acked) >= 200 and acked == list(range(len(acked)))
    assert not (data / ".kafka_cleanshutdown").exists()

    proc, host, port = start(data)
    try:
        with RawClient(host, port) as c:
            hw, records = fetch_all(c, "crash")
            stored = _strip_leader_epochs(records, blank_offsets=True)
            assert hw == 3 * len(stored)
            # a prefix of what was sent: every acknowledged batch, once, in order (plus maybe in-flight ones)
            assert len(stored) >= len(acked)
            assert stored == _strip_leader_epochs(b"".join(batches[:len(stored)]), blank_offsets=True)
            pid2 = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1), 4).producer_id
            assert pid2 > pid1   # producer ids are never reused across restarts
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _strip_leader_epochs(data: bytes, blank_offsets: bool = False) -> list[bytes]:
    """Split into batches and blank the PartitionLeaderEpoch field (set by the broker, outside the CRC)
    and, if asked, the BaseOffset (assigned by the broker)."""
    out, pos = [], 0
    while pos < len(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big")
        b = bytearray(data[pos:pos + 12 + length])
        b[12:16] = b"\x00\x00\x00\x00"
        if blank_offsets:
            b[0:8] = bytes(8)
        out.append(bytes(b))
        pos += 12 + length
    return out


def test_port_in_use_is_a_clean_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "kafkalite", "serve", "--listen", f"127.0.0.1:{port}", "--data-dir",
             str(tmp_path / "d")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "cannot start" in proc.stderr and "Address already in use" in proc.stderr


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_distributions(flag: str) -> None:
    """``kafkalite --version`` prints the installed distribution's version (pyproject's) and exits 0."""
    import tomllib  # lazy: this test alone reads pyproject

    declared = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]["version"]
    p = subprocess.run([sys.executable, "-m", "kafkalite", flag], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, f"kafkalite {declared}\n", "")
    shown = subprocess.run([sys.executable, "-m", "kafkalite", "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--version" in shown.stdout
