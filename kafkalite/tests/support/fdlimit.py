"""Driving a broker process started under a low RLIMIT_NOFILE with many partitions (tests and bench).

The broker runs as `python -m kafkalite serve` with RLIMIT_NOFILE set (soft = hard) in the child before exec,
as `prlimit --nofile=N` would; its log goes to a file (thousands of partitions log thousands of lines, a pipe
would fill up and block it). Requests are built with the raw client, many partitions per request.
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.batch import iter_batches
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import CreateTopicsRequest, FetchRequest, MetadataRequest, ProduceRequest

CT = CreateTopicsRequest


class LimitedBroker:
    def __init__(self, data_dir: Path, nofile: int, log_path: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.nofile = nofile
        self.log_path = log_path
        self.extra = extra
        self.proc: subprocess.Popen[str] | None = None
        self.host = "127.0.0.1"
        self.port = 0

    def start(self, timeout: float = 120.0) -> float:
        """Start and wait for the ready line; returns seconds from spawn to ready."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_") or k == "KAFKALITE_REFERENCE"}
        nofile = self.nofile

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        log = open(self.log_path, "a")  # noqa: SIM115 - handed to the child, closed below
        t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                 str(self.data_dir), *self.extra],
                stdout=subprocess.PIPE, stderr=log, text=True, env=env, preexec_fn=limit)
        finally:
            log.close()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        took = time.perf_counter() - t0
        if not line.startswith("kafkalite ready on "):
            self.proc.kill()
            self.proc.wait(timeout)
            raise RuntimeError(f"broker did not start: {line!r}\n{self.log_path.read_text()[-3000:]}")
        self.host, port = line.strip().rsplit(" ", 1)[1].rsplit(":", 1)
        self.port = int(port)
        return took

    def client(self, timeout: float = 120.0) -> RawClient:
        return RawClient(self.host, self.port, timeout=timeout)

    def stop(self, timeout: float = 120.0) -> int:
        """SIGTERM (clean shutdown) and wait; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def open_fds(self) -> int:
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_kb(self, peak: bool = False) -> int:
        assert self.proc is not None
        key = "VmHWM:" if peak else "VmRSS:"
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
        return 0


def _chunks(items: list[Any], n: int) -> Iterator[list[Any]]:
    for i in range(0, len(items), n):
        yield items[i:i + n]


def _create_batches(topics: dict[str, int], per_request: int) -> Iterator[list[str]]:
    """At most `per_request` topics a request, and within Kafka's 10,000 metadata records per admin request
    (a topic record plus one per partition: kafkalite.handlers.limits)."""
    batch: list[str] = []
    records = 0
    for name, partitions in topics.items():
        if batch and (len(batch) == per_request or records + 1 + partitions > 10_000):
            yield batch
            batch, records = [], 0
        batch.append(name)
        records += 1 + partitions
    if batch:
        yield batch


def create_topics(c: RawClient, topics: dict[str, int], per_request: int = 10) -> dict[str, Any]:
    """CreateTopics (v7), up to `per_request` topics a request; name -> result."""
    out: dict[str, Any] = {}
    for names in _create_batches(topics, per_request):
        req = CT(timeout_ms=600_000, topics=[
            CT.CreatableTopic(name=n, num_partitions=topics[n], replication_factor=1, assignments=[], configs=[])
            for n in names])
        for t in c.request(req, 7).topics:
            out[t.name] = t
    return out


def metadata_all(c: RawClient) -> Any:
    return c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12)


def produce_all(c: RawClient, topics: dict[str, int], value: bytes = b"v", per_request: int = 2000) -> dict[int, int]:
    """One record to every partition (acks=all); error code -> number of partitions."""
    batch = encode_batch([value])
    parts = [(t, p) for t, n in topics.items() for p in range(n)]
    codes: dict[int, int] = {}
    for chunk in _chunks(parts, per_request):
        by_topic: dict[str, list[int]] = {}
        for t, p in chunk:
            by_topic.setdefault(t, []).append(p)
        req = ProduceRequest(acks=-1, timeout_ms=60_000, topic_data=[ProduceRequest.TopicProduceData(
            name=t, partition_data=[ProduceRequest.PartitionProduceData(index=p, records=batch) for p in ps])
            for t, ps in by_topic.items()])
        for tr in c.request(req, 9).responses:
            for pr in tr.partition_responses:
                codes[pr.error_code] = codes.get(pr.error_code, 0) + 1
    return codes


def fetch_all(c: RawClient, topics: dict[str, int], per_request: int = 2000) -> dict[tuple[str, int], int]:
    """Fetch every partition from offset 0; (topic, partition) -> records returned (-error code on error)."""
    parts = [(t, p) for t, n in topics.items() for p in range(n)]
    out: dict[tuple[str, int], int] = {}
    for chunk in _chunks(parts, per_request):
        by_topic: dict[str, list[int]] = {}
        for t, p in chunk:
            by_topic.setdefault(t, []).append(p)
        req = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 30, topics=[
            FetchRequest.FetchTopic(topic=t, topic_id=uuid.UUID(int=0), partitions=[
                FetchRequest.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
                for p in ps]) for t, ps in by_topic.items()])
        for tr in c.request(req, 11).responses:
            for pr in tr.partitions:
                if pr.error_code:
                    out[(tr.topic, pr.partition_index)] = -pr.error_code
                    continue
                data = bytes(pr.records or b"")
                out[(tr.topic, pr.partition_index)] = sum(h.records_count for _pos, h in iter_batches(data))
    return out
