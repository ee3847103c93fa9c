"""max.connections.per.ip, its overrides and max.connections, with Kafka's semantics (ConnectionQuotas):
a connection over its address's limit is accepted and closed at once; at the broker-wide limit the listener
stops accepting until a connection closes (the new one waits in the backlog, then is served)."""
from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from kafkalite.embedded import Broker, BrokerStartError
from kafkalite.server.connection_quotas import ConnectionQuotas, parse_overrides
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import MetadataRequest


def test_parse_overrides() -> None:
    assert parse_overrides("") == {}
    assert parse_overrides("127.0.0.1:5, ::1:0,[::2]:7") == {"127.0.0.1": 5, "::1": 0, "::2": 7}
    assert parse_overrides("localhost:2") == {"127.0.0.1": 2}
    for bad in ("127.0.0.1", "127.0.0.1:x", ":3", "127.0.0.1:-1"):
        with pytest.raises(ValueError):
            parse_overrides(bad)


def test_counts_per_address_and_in_total() -> None:
    q = ConnectionQuotas(max_total=10, max_per_ip=2, overrides={"10.0.0.9": 0, "10.0.0.8": 3})
    assert [q.admit("10.0.0.1") for _ in range(3)] == [True, True, False]
    assert q.admit("::ffff:10.0.0.1") is False          # the same address through a dual-stack listener
    assert q.admit("10.0.0.9") is False                  # an override of 0 refuses every connection
    assert [q.admit("10.0.0.8") for _ in range(4)] == [True, True, True, False]
    assert q.total == 5 and q.rejected == 4
    q.release("10.0.0.1")
    assert q.admit("10.0.0.1") is True and q.total == 5
    for _ in range(2):
        q.release("10.0.0.1")
    q.release("10.0.0.1")                                # more releases than connections: counts stay >= 0
    assert q.counts.get("10.0.0.1") is None and q.total == 3


def _alive(c: RawClient) -> bool:
    try:
        return bool(c.request(MetadataRequest(topics=[]), 12).brokers)
    except (OSError, AssertionError, ValueError):
        return False


def _closed_at_once(host: str, port: int) -> bool:
    s = socket.create_connection((host, port), timeout=20)   # a hang would fail the test, not a timing
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    finally:
        s.close()


def test_a_connection_over_the_per_ip_limit_is_closed_and_the_others_work(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path / "a", overrides={"max.connections.per.ip": "3"}) as b:
        clients = [RawClient(b.host, b.port) for _ in range(3)]
        try:
            assert all(_alive(c) for c in clients)
            assert _closed_at_once(b.host, b.port)
            assert all(_alive(c) for c in clients)          # the three already there are untouched
            clients.pop().close()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:              # the broker notices the close, then has a slot
                with RawClient(b.host, b.port) as again:
                    if _alive(again):
                        break
                time.sleep(0.05)
            else:
                pytest.fail("no connection accepted after one of three closed")
        finally:
            for c in clients:
                c.close()


def test_overrides_raise_or_lower_the_limit_for_one_address(tmp_path: Path) -> None:
    overrides = {"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:4"}
    with Broker(data_dir=tmp_path / "a", overrides=overrides) as b:
        clients = [RawClient(b.host, b.port) for _ in range(4)]
        try:
            assert all(_alive(c) for c in clients)
            assert _closed_at_once(b.host, b.port)
        finally:
            for c in clients:
                c.close()
    with Broker(data_dir=tmp_path / "b", overrides={"max.connections.per.ip.overrides": "127.0.0.1:0"}) as b:
        assert _closed_at_once(b.host, b.port)


def test_at_max_connections_the_next_one_waits_until_a_slot_frees(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path / "a", overrides={"max.connections": "2"}) as b:
        first, second = RawClient(b.host, b.port), RawClient(b.host, b.port)
        assert _alive(first) and _alive(second)
        third = RawClient(b.host, b.port, timeout=1.0)     # connects (the kernel's backlog), not yet accepted
        try:
            third.send(MetadataRequest(topics=[]), 12)
            with pytest.raises(TimeoutError):
                third.recv_frame()
            first.close()
            third.sock.settimeout(20)
            assert third.recv_frame()                       # accepted once a slot freed, then answered
            assert _alive(second)
        finally:
            for c in (first, second, third):
                c.close()


@pytest.mark.parametrize("bad", [{"max.connections.per.ip.overrides": "127.0.0.1"},
                                 {"max.connections.per.ip": "-1"}, {"max.connections": "x"}])
def test_bad_limits_are_config_errors_at_start(tmp_path: Path, bad: dict[str, str]) -> None:
    with pytest.raises((BrokerStartError, ValueError)):
        Broker(data_dir=tmp_path / "a", overrides=bad).start()
