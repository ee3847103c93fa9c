"""The Prometheus endpoint (kafkalite.metrics) against one embedded broker: real clients produce and consume,
and the exposition, parsed with prometheus_client's own parser, moves by exactly what was sent."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.pipes import PipeLines
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.support.tools_helpers import need_confluent
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import FetchRequest, MetadataRequest, ProduceRequest


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(overrides={"kafkalite.metrics.listen": "127.0.0.1:0"}) as b:
        yield b


def _get(broker: Broker, path: str, method: str = "GET") -> tuple[int, str, str]:
    addr = broker.metrics_address
    assert addr is not None
    req = urllib.request.Request(f"http://{addr[0]}:{addr[1]}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def scrape(broker: Broker) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the exposition: (sample name, labels) -> value, through prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    status, ctype, text = _get(broker, "/metrics")
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def val(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: object) -> float:
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())), 0.0)


def _log_bytes(broker: Broker, topic: str, partitions: int) -> int:
    return sum(os.path.getsize(p) for i in range(partitions)
               for p in (broker.data_dir / f"{topic}-{i}").glob("*.log"))


@pytest.mark.clients
@pytest.mark.requires("confluent_kafka")
def test_produce_consume_move_the_counters_by_exactly_what_was_sent(broker: Broker) -> None:
    ck = need_confluent()
    from confluent_kafka.admin import AdminClient, NewTopic

    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("m1", 2, 1)])["m1"].result(timeout=30)
    before = scrape(broker)
    n = 1000
    p = ck.Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 5,
                     "compression.type": "lz4"})
    for i in range(n):
        p.produce("m1", value=b"value-%d" % i, key=b"k%d" % (i % 7), partition=i % 2)
    assert p.flush(30) == 0
    after = scrape(broker)
    stored = _log_bytes(broker, "m1", 2)
    assert val(after, "kafka_server_brokertopicmetrics_messagesin_total", topic="m1") == n
    assert val(after, "kafka_server_brokertopicmetrics_messagesin_total") - \
        val(before, "kafka_server_brokertopicmetrics_messagesin_total") == n
    # batches are stored as sent: bytes in == the segment files' size
    assert val(after, "kafka_server_brokertopicmetrics_bytesin_total", topic="m1") == stored
    assert sum(val(after, "kafka_log_log_size", topic="m1", partition=i) for i in range(2)) == stored
    assert val(after, "kafka_log_log_numlogsegments", topic="m1", partition=0) == 1
    assert val(after, "kafka_log_log_logendoffset", topic="m1", partition=1) == n // 2
    produces = val(after, "kafka_server_brokertopicmetrics_totalproducerequests_total", topic="m1")
    assert produces >= 1 and val(after, "kafka_server_brokertopicmetrics_failedproducerequests_total",
                                 topic="m1") == 0
    produce_reqs = sum(v for (name, labels), v in after.items()
                       if name == "kafka_network_requestmetrics_requests_total" and ("request", "Produce") in labels)
    assert produce_reqs == produces   # one topic per request here
    assert val(after, "kafka_network_requestmetrics_totaltimems_count", request="Produce") == produce_reqs
    assert val(after, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= produces

    # a consumer reads everything once: bytes out == what is stored
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": "m-group", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    c.subscribe(["m1"])
    got = 0
    deadline = time.monotonic() + 60
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
    assert got == n
    c.commit(offsets=[ck.TopicPartition("m1", 0, 100), ck.TopicPartition("m1", 1, n // 2)], asynchronous=False)
    s = scrape(broker)
    assert val(s, "kafka_server_brokertopicmetrics_bytesout_total", topic="m1") == stored
    assert val(s, "kafka_consumergroup_current_offset", consumergroup="m-group", topic="m1", partition=0) == 100
    assert val(s, "kafka_consumergroup_lag", consumergroup="m-group", topic="m1", partition=0) == n // 2 - 100
    assert val(s, "kafka_consumergroup_lag", consumergroup="m-group", topic="m1", partition=1) == 0
    assert val(s, "kafka_consumergroup_members", consumergroup="m-group") == 1
    assert val(s, "kafka_consumergroup_state", consumergroup="m-group", state="Stable") == 1
    c.close()
    s = scrape(broker)
    assert val(s, "kafka_consumergroup_state", consumergroup="m-group", state="Empty") == 1
    assert val(s, "kafka_consumergroup_members", consumergroup="m-group") == 0


def test_errors_purgatory_and_connections(broker: Broker) -> None:
    host, port = broker.host, broker.port
    with RawClient(host, port) as c:
        c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="m2")]), 9)
    before = scrape(broker)
    # a produce to a partition that does not exist: one UNKNOWN_TOPIC_OR_PARTITION, nothing counted in
    with RawClient(host, port) as c:
        req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="m2", partition_data=[ProduceRequest.PartitionProduceData(index=99, records=encode_batch([b"x"])),
                                       ProduceRequest.PartitionProduceData(index=0, records=encode_batch([b"y", b"z"]))])])
        parts = c.request(req, 9).responses[0].partition_responses
        assert [p.error_code for p in parts] == [3, 0]
    s = scrape(broker)
    err = "kafka_network_requestmetrics_errors_total"
    assert val(s, err, request="Produce", error="UNKNOWN_TOPIC_OR_PARTITION") - \
        val(before, err, request="Produce", error="UNKNOWN_TOPIC_OR_PARTITION") == 1
    assert val(s, "kafka_server_brokertopicmetrics_messagesin_total", topic="m2") == 2
    assert val(s, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic="m2") == 1
    assert val(s, "kafka_server_brokertopicmetrics_bytesin_total", topic="m2") == len(encode_batch([b"y", b"z"]))

    # a long-polling fetch is in the Fetch purgatory until data arrives
    conns = [RawClient(host, port) for _ in range(3)]
    try:
        for rc in conns:
            rc.request(MetadataRequest(topics=[]), 9)
        base = val(before, "kafka_server_socketservermetrics_connection_count", listener="PLAINTEXT")
        s = scrape(broker)
        assert val(s, "kafka_server_socketservermetrics_connection_count", listener="PLAINTEXT") == base + 3
        poll = FetchRequest(max_wait_ms=30_000, min_bytes=1, max_bytes=1 << 20, topics=[FetchRequest.FetchTopic(
            topic="m2", partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=2,
                                                                 partition_max_bytes=1 << 20)])])
        def parked() -> float:
            return val(scrape(broker), "kafka_server_delayedoperationpurgatory_purgatorysize",
                       delayedOperation="Fetch")

        deadline = time.monotonic() + 30
        while parked() != 0:   # the first test's consumer may have left a long poll behind: let it end
            assert time.monotonic() < deadline, "a fetch stayed parked"
            time.sleep(0.05)
        answer: list[object] = []
        t = threading.Thread(target=lambda: answer.append(conns[0].request(poll, 11)), daemon=True)
        t.start()
        while parked() != 1:
            assert time.monotonic() < deadline, "the fetch never parked"
            time.sleep(0.05)
        assert not answer
        req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
            name="m2", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=encode_batch([b"w"]))])])
        conns[1].request(req, 9)
        t.join(30)
        assert answer and parked() == 0
    finally:
        for rc in conns:
            rc.close()
    s = scrape(broker)
    assert val(s, "process_resident_memory_bytes") > 1 << 20 and val(s, "process_open_fds") > 3
    fetches = val(s, "kafka_network_requestmetrics_totaltimems_bucket", request="Fetch", le="+Inf")
    assert fetches >= 1 and val(s, "kafka_network_requestmetrics_totaltimems_count", request="FetchConsumer") == fetches
    assert val(s, "kafka_network_requestmetrics_requests_total", request="FetchConsumer", version=11) == \
        val(s, "kafka_network_requestmetrics_requests_total", request="Fetch", version=11) >= 1


def test_faults_are_counted(broker: Broker) -> None:
    """A fault injected and fired shows in the exposition (rules set, fired, errors injected, rules in force)."""
    from kafkalite_wire.messages import FindCoordinatorRequest

    before = scrape(broker)
    rule = broker.faults.inject("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=2)
    try:
        assert val(scrape(broker), "kafkalite_faults_active_rules") == 1
        with RawClient(broker.host, broker.port) as c:
            assert c.request(FindCoordinatorRequest(key="g", key_type=0), 2).error_code == 15
        s = scrape(broker)
        assert val(s, "kafkalite_faults_active_rules") == 1       # one of its two left
        for kind, n in (("rules_set", 1), ("fired", 1), ("errors_injected", 1)):
            assert val(s, "kafkalite_faults_total", kind=kind) - val(before, "kafkalite_faults_total", kind=kind) == n
    finally:
        broker.faults.clear()
    assert rule and val(scrape(broker), "kafkalite_faults_active_rules") == 0


def test_health_and_http_edges(broker: Broker) -> None:
    assert _get(broker, "/health")[:3:2] == (200, "ok\n")
    assert _get(broker, "/health", "HEAD")[0] == 200
    assert _get(broker, "/nope")[0] == 404
    assert _get(broker, "/metrics", "POST")[0] == 405
    addr = broker.metrics_address
    assert addr is not None
    with socket.create_connection(addr, timeout=30) as s:    # garbage: 400, and the endpoint lives on
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    assert _get(broker, "/health")[0] == 200


@pytest.mark.e2e
def test_metrics_are_off_by_default_and_refuse_a_bad_address(tmp_path: Path) -> None:
    from kafkalite.errors import ConfigError

    with Broker() as b:
        assert b.metrics_address is None
    with pytest.raises(ConfigError, match="kafkalite.metrics.listen"):
        Broker(overrides={"kafkalite.metrics.listen": "nowhere"})
    # its port taken: the broker does not start, with the one-line cause (like a taken listener port)
    from kafkalite.embedded import BrokerStartError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(BrokerStartError, match=f"cannot listen for metrics on 127.0.0.1:{port}: Address "
                                                   "already in use"):
            Broker(overrides={"kafkalite.metrics.listen": f"127.0.0.1:{port}"}).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    p = subprocess.run([sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                        str(tmp_path / "d"), "--metrics", "127.0.0.1:99999"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 2 and "kafkalite.metrics.listen" in p.stderr


@pytest.mark.e2e
def test_serve_prints_where_metrics_are(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir",
                             str(tmp_path / "d"), "--metrics", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = PipeLines(proc.stdout, "stdout"), PipeLines(proc.stderr, "stderr")  # bounded reads, drained
        assert out.readline().startswith("kafkalite ready on 127.0.0.1:"), err.text()
        line = err.wait_for(lambda ln: "metrics at" in ln or "Traceback" in ln)
        url = line.split("metrics at ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        with urllib.request.urlopen(url.replace("/metrics", "/health"), timeout=30) as resp:
            assert resp.read() == b"ok\n"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_health_says_draining_once_shutdown_has_begun(monkeypatch: pytest.MonkeyPatch) -> None:
    """GET /health answers 503 "draining" once the broker drains (the purgatory's flag, as the console shows it)."""
    from kafkalite.server import serve as server

    states: list[Any] = []
    open_state = server.open_state

    def keep(*args: Any, **kwargs: Any) -> Any:
        states.append(open_state(*args, **kwargs))
        return states[-1]

    monkeypatch.setattr(server, "open_state", keep)
    with Broker(overrides={"kafkalite.metrics.listen": "127.0.0.1:0"}) as b:
        assert _get(b, "/health")[::2] == (200, "ok\n")
        states[0].purgatory.begin_drain()
        assert _get(b, "/health")[::2] == (503, "draining\n")
