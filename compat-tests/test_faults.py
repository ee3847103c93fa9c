"""Faults on command (issue #17) with real clients: each client reacts to an injected error, delay, pause or
dropped connection the way Kafka's protocol says it should.

The broker runs as users run it, ``kafkalite serve --control 127.0.0.1:0`` (it logs the bound address), and the faults are set over the
HTTP control API, as a test suite in another language would set them.

- A retriable error on Produce (NOT_LEADER_OR_FOLLOWER, refused or after the append: a lost acknowledgement)
  -> each idempotent producer retries; every record is in the log exactly once.
- A fatal error (TOPIC_AUTHORIZATION_FAILED) -> each client reports it to the application; nothing appended.
- COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR on FindCoordinator, JoinGroup and OffsetCommit -> the group
  still forms (the broker reports it Stable) and the commit lands.
- A Produce delayed beyond request.timeout.ms -> the client times out, retries, and nothing is duplicated.
- A paused broker -> the client's request times out; after resume it recovers and delivers.
- Dropped connections -> clients reconnect and carry on.
"""
from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest
from harness.broker import BrokerProcess
from harness.clients import Client, clients_with
from harness.clients.base import ClientError
from harness.records import Rec
from harness.topics import create_topic
from test_groups_support import ALL_CLIENTS, committed, group_consume, produce

from kafkalite.tests.support.requires import require

KAFKALITE_ONLY = "fault injection through kafkalite's control port (--control)"

require("confluent_kafka")   # a loud skip, or a failure under CI=true
import confluent_kafka as ck  # noqa: E402

# Port 0: the broker binds a free port itself and logs "control API on URL" (a port picked here and bound
# later, after collection, by the broker could meanwhile be taken by any other process on a busy CI machine).
KAFKALITE_ARGS = ["--control", "127.0.0.1:0"]
_CONTROL_RE = re.compile(r"control API on (http://\S+?)/?\s")
_control_url: list[str] = []   # the module broker's, found in its log by _clear_faults


def control(path: str, body: dict[str, Any] | None = None) -> Any:
    assert _control_url, "the control API's address is not known yet (the broker fixture runs first)"
    req = urllib.request.Request(f"{_control_url[-1]}{path}", method="GET" if body is None else "POST",
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"control API {path}: {exc.code} {exc.read()!r}") from None


def counters() -> dict[str, int]:
    return dict(control("/v1/faults")["brokers"][0]["counters"])


@pytest.fixture(autouse=True)
def _clear_faults(broker: BrokerProcess) -> Any:
    deadline = time.monotonic() + 60   # a hang bound: the line comes with the broker's start
    while not _control_url:
        found = _CONTROL_RE.findall(broker.log_since(0, 10**7))
        if found:
            _control_url.append(found[-1])
        else:
            assert time.monotonic() < deadline, "no 'control API on' line in the broker log:\n" + broker.log_tail()
            time.sleep(0.05)
    control("/v1/faults/clear", {})
    yield
    control("/v1/faults/clear", {})


def _producer(broker: BrokerProcess, **extra: Any) -> Any:
    conf = {"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 5,
            "retry.backoff.ms": 50, "retry.backoff.max.ms": 200, "request.timeout.ms": 5000,
            "message.timeout.ms": 30000, "socket.timeout.ms": 5000, "topic.metadata.refresh.interval.ms": 1000}
    conf.update(extra)
    return ck.Producer(conf)


def _produce_all(p: Any, topic: str, values: list[bytes], partitions: int) -> list[Any]:
    results: list[Any] = []
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=i % partitions, on_delivery=lambda err, msg: results.append(err))
        p.poll(0)
    assert p.flush(60) == 0, "messages still in flight after 60 s"
    return results


def _read_all(broker: BrokerProcess, topic: str, partitions: int, expect: int) -> list[bytes]:
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"read-{topic}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                if len(got) >= expect:
                    break
                continue
            assert m.error() is None, m.error()
            got.append(m.value())
        return got
    finally:
        c.close()


def test_coordinator_errors_group_still_forms_and_commits(broker: BrokerProcess, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 1)
    _produce_all(_producer(broker), topic, [b"a", b"b", b"c"], 1)
    group = f"g-{topic}"
    for api, error in (("FindCoordinator", "COORDINATOR_NOT_AVAILABLE"), ("JoinGroup", "NOT_COORDINATOR"),
                       ("OffsetCommit", "COORDINATOR_NOT_AVAILABLE")):
        control("/v1/faults/inject", {"api": api, "error": error, "count": 1})
    # session.timeout.ms stays at librdkafka's default (45 s): after the OffsetCommit error librdkafka marks its
    # coordinator dead and finds it again; under CI load that once took over 6 s, and a 6 s session expired the
    # member meanwhile (UNKNOWN_MEMBER_ID on the retried commit) -- a session timeout, not the behaviour tested
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "retry.backoff.ms": 50})
    try:
        c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert got == [b"a", b"b", b"c"]
        assert control("/v1/groups/wait", {"group": group, "state": "Stable", "timeout": 30})["state"] == "Stable"
        committed = None
        for _ in range(10):        # a commit that met the injected error is retried by the application
            try:
                c.commit(asynchronous=False)
                committed = c.committed([ck.TopicPartition(topic, 0)], timeout=10)[0].offset
                break
            except ck.KafkaException as exc:
                assert exc.args[0].retriable(), exc
        assert committed == 3
        assert all(not r for b in control("/v1/faults")["brokers"] for r in b["rules"])   # every fault fired
    finally:
        c.close()


def test_latency_beyond_request_timeout_client_retries(broker: BrokerProcess, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 1)
    timeouts = [0]

    def stats(raw: str) -> None:   # librdkafka's own count of requests that timed out
        brokers = json.loads(raw).get("brokers", {}).values()
        timeouts[0] = max(timeouts[0], sum(b.get("req_timeouts", 0) for b in brokers))

    p = _producer(broker, **{"request.timeout.ms": 1000, "socket.timeout.ms": 1000,
                             "statistics.interval.ms": 100, "stats_cb": stats})
    _produce_all(p, topic, [b"first"], 1)
    before = counters()["requests_delayed"]
    control("/v1/faults/latency", {"ms": 2500, "api": "Produce", "count": 1})
    assert _produce_all(p, topic, [b"slow"], 1) == [None]
    assert counters()["requests_delayed"] - before == 1
    p.poll(0.5)
    assert timeouts[0] >= 1                                            # the client did time out
    assert _read_all(broker, topic, 1, 2) == [b"first", b"slow"]      # timed out, retried, not duplicated


def test_pause_times_out_resume_recovers(broker: BrokerProcess, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 1)
    admin = ck.admin.AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 1000})
    p = _producer(broker, **{"request.timeout.ms": 1000})
    _produce_all(p, topic, [b"before"], 1)
    control("/v1/faults/pause", {})
    with pytest.raises(ck.KafkaException):
        admin.list_topics(timeout=1.5)                  # held: the client gives up
    results: list[Any] = []
    p.produce(topic, value=b"during", on_delivery=lambda err, msg: results.append(err))
    assert p.flush(2) == 1 and not results              # nothing answered while paused
    control("/v1/faults/resume", {})
    assert p.flush(30) == 0 and results == [None]
    assert topic in admin.list_topics(timeout=10).topics
    assert _read_all(broker, topic, 1, 2) == [b"before", b"during"]
    assert counters()["requests_paused"] >= 1


def test_dropped_connections_clients_reconnect(broker: BrokerProcess, topic: str) -> None:
    create_topic(broker.bootstrap, topic, 1)
    p = _producer(broker)
    _produce_all(p, topic, [b"one"], 1)
    assert control("/v1/faults/drop", {})["results"][0]["dropped"] >= 1
    assert _produce_all(p, topic, [b"two"], 1) == [None]
    control("/v1/faults/drop", {"api": "Produce", "count": 1})     # mid-request
    assert _produce_all(p, topic, [b"three"], 1) == [None]
    assert _read_all(broker, topic, 1, 3) == [b"one", b"two", b"three"]




# -- every client: the harness drivers (each client's own API) ---------------------------------------------
@pytest.mark.parametrize("client_name", clients_with("idempotent"))
@pytest.mark.parametrize("mode", ["answer", "through"])
def test_each_client_retries_not_leader_exactly_once(client_name: str, mode: str, broker: BrokerProcess,
                                                     topic: str, client: Client) -> None:
    """NOT_LEADER_OR_FOLLOWER is retriable (Kafka: refresh metadata, retry): refused ("answer") or after the
    append ("through", a lost acknowledgement, which the broker's idempotence must catch), every record ends
    up in the log once."""
    create_topic(broker.bootstrap, topic, 2)
    before = counters()["errors_injected"]
    control("/v1/faults/inject", {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 2, "mode": mode,
                                  "partitions": [{"topic": topic, "partition": 0}]})
    records = [Rec(b"k%d" % i, b"v%03d" % i, partition=i % 2) for i in range(20)]
    client.produce(broker.bootstrap, topic, records, idempotent=True, timeout_s=60)
    assert counters()["errors_injected"] - before == 2
    got = _read_all(broker, topic, 2, 20)
    assert sorted(got) == sorted(r.value for r in records)


def _end_offset(broker: BrokerProcess, topic: str, partition: int) -> int:
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"wm-{topic}"})
    try:
        return int(c.get_watermark_offsets(ck.TopicPartition(topic, partition), timeout=10)[1])
    finally:
        c.close()


@pytest.mark.parametrize("client_name", clients_with("produce"))
def test_each_client_fails_on_a_fatal_produce_error(client_name: str, broker: BrokerProcess, topic: str,
                                                   client: Client) -> None:
    """TOPIC_AUTHORIZATION_FAILED is not retriable: the client reports it to the application."""
    create_topic(broker.bootstrap, topic, 1)
    control("/v1/faults/inject", {"api": "Produce", "error": "TOPIC_AUTHORIZATION_FAILED", "count": None})
    # the harness's ClientError, or the Python client's own exception (kafka-python, aiokafka raise theirs)
    with pytest.raises((ClientError, Exception)) as exc:
        client.produce(broker.bootstrap, topic, [Rec(b"k", b"refused", partition=0)], timeout_s=20)
    text = f"{type(exc.value).__name__} {exc.value}".lower()
    assert "authoriz" in text or "29" in text, exc.value
    assert _end_offset(broker, topic, 0) == 0               # nothing appended
    assert counters()["errors_injected"] >= 1


@pytest.mark.parametrize("client_name", [*ALL_CLIENTS, "kcat"])
def test_each_client_group_survives_coordinator_errors(client_name: str, broker: BrokerProcess,
                                                       topic: str) -> None:
    """COORDINATOR_NOT_AVAILABLE on FindCoordinator and NOT_COORDINATOR on JoinGroup and OffsetCommit are
    retriable (Kafka: look the coordinator up again, retry): the group forms and its commit lands."""
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, [(0, b"v%d" % i) for i in range(5)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    for api, error in (("FindCoordinator", "COORDINATOR_NOT_AVAILABLE"), ("JoinGroup", "NOT_COORDINATOR"),
                       ("OffsetCommit", "NOT_COORDINATOR")):
        control("/v1/faults/inject", {"api": api, "error": error, "count": 1})
    read = group_consume(client_name, broker.bootstrap, topic, group, 5, timeout_s=60)
    assert sorted(read.values) == [b"v%d" % i for i in range(5)]
    fired = [r for b in control("/v1/faults")["brokers"] for r in b["rules"]]
    assert not [r for r in fired if r["api"] != "OffsetCommit"]      # the client met each of them
    if fired:   # a client that commits nothing until it closes may not have met the OffsetCommit fault
        control("/v1/faults/clear", {})
    assert committed(broker.bootstrap, group, topic, 1) == {0: 5}
