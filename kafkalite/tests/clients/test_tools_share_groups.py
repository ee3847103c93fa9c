"""``kafkalite groups`` on share groups (KIP-932), made by confluent-kafka's real ``ShareConsumer``: what
``kafka-share-groups.sh`` shows (start offset and lag per share-partition after acknowledgements, members,
state), --list --type share, delete (refused while a member is in), reset-offsets (refused for an active
group, AlterShareGroupOffsets for an empty one), unknown groups and bad input."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.client.shareadmin import ShareAdmin
from kafkalite.client.wire import Security, WireError
from kafkalite.embedded import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent


@pytest.fixture(scope="module")
def bs() -> Iterator[str]:
    with Broker(overrides={"kafkalite.share.auto.offset.reset": "earliest"}) as b:
        yield b.bootstrap_servers


def _produce(bs: str, topic: str, n: int) -> None:
    ck = need_confluent()
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 1})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0


def _share_consumer(bs: str, group: str, topic: str) -> Any:
    ck = need_confluent()
    c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": group, "client.id": "share-cli-test",
                          "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    return c


def _take(c: Any, n: int) -> list[Any]:
    """Poll until ``n`` records arrived (explicit mode: each must then be acknowledged)."""
    out: list[Any] = []
    deadline = time.monotonic() + 60
    while len(out) < n and time.monotonic() < deadline:
        out.extend(m for m in c.poll(0.5) if m.error() is None)
    assert len(out) >= n, f"got {len(out)} of {n} records"
    return out


def _describe(bs: str, group: str, *extra: str) -> Any:
    r = cli(bs, "groups", "--describe", "--group", group, *extra, "--json")
    assert r.code == 0, r.err
    (d,) = r.json()
    return d


def test_describe_share_group_start_offset_lag_members_state(bs: str) -> None:
    ck = need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "sq", "--partitions", "1").code == 0
    _produce(bs, "sq", 10)
    c = _share_consumer(bs, "sg-desc", "sq")
    try:
        got = _take(c, 10)
        first = sorted(got, key=lambda m: m.offset())
        for m in first[:4]:                       # offsets 0..3 accepted: the start offset moves to 4
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        for m in first[4:]:                       # the rest released: available again, still lag
            c.acknowledge(m, ck.AcknowledgeType.RELEASE)
        c.commit_sync(30)
        d = _describe(bs, "sg-desc")
        assert d["type"] == "Share" and d["state"] == "Stable"
        assert [(o["topic"], o["partition"], o["start_offset"], o["lag"], o["log_end_offset"])
                for o in d["offsets"]] == [("sq", 0, 4, 6, 10)]
        (m,) = d["members"]
        assert m["client_id"] == "share-cli-test" and m["assignment"] == [["sq", 0]]
        assert m["subscribed_topics"] == ["sq"]
        # the table: kafka-share-groups.sh --describe's columns
        r = cli(bs, "groups", "--describe", "--group", "sg-desc")
        assert r.code == 0 and r.out.splitlines()[0].split("\t") == ["GROUP", "TOPIC", "PARTITION",
                                                                     "START-OFFSET", "LAG"]
        assert r.rows() == [["sg-desc", "sq", "0", "4", "6"]]
        assert cli(bs, "groups", "--describe", "--group", "sg-desc", "--offsets").rows() == r.rows()
        r = cli(bs, "groups", "--describe", "--group", "sg-desc", "--verbose")
        assert r.out.splitlines()[0].split("\t")[3:] == ["LEADER-EPOCH", "START-OFFSET", "LAG"]
        assert r.rows() == [["sg-desc", "sq", "0", "0", "4", "6"]]
        r = cli(bs, "groups", "--describe", "--group", "sg-desc", "--members")
        assert r.out.splitlines()[0].split("\t") == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                                     "ASSIGNMENT"]
        assert r.rows() == [["sg-desc", m["member_id"], m["host"], "share-cli-test", "1", "sq:0"]]
        r = cli(bs, "groups", "--describe", "--group", "sg-desc", "--state")
        assert r.rows()[0][0] == "sg-desc" and r.rows()[0][2:] == ["Stable", "1"]
        # listed with --type share only (a share group is not a consumer group)
        assert ["sg-desc", "Share", "Stable"] in cli(bs, "groups", "--list", "--type", "share", "--state").rows()
        assert not any(r[0] == "sg-desc" for r in cli(bs, "groups", "--list", "--type").rows())
        # a member is in: neither delete nor reset-offsets
        r = cli(bs, "groups", "--delete", "--group", "sg-desc")
        assert r.code == 1 and "NON_EMPTY_GROUP" in r.err
        r = cli(bs, "groups", "--reset-offsets", "--group", "sg-desc", "--topic", "sq", "--to-earliest", "--execute")
        assert r.code == 1 and "Share group 'sg-desc' is not empty." in r.err
        r = cli(bs, "groups", "--reset-offsets", "--group", "sg-desc", "--topic", "sq", "--shift-by", "1")
        assert r.code == 2 and "not supported for share groups" in r.err
        assert _describe(bs, "sg-desc")["offsets"][0]["start_offset"] == 4
    finally:
        c.close()
    # the member left: Empty; reset to offset 2 (AlterShareGroupOffsets), then delete
    deadline = time.monotonic() + 60
    while _describe(bs, "sg-desc")["state"] != "Empty":
        assert time.monotonic() < deadline, "the share group did not become Empty"
        time.sleep(0.2)
    r = cli(bs, "groups", "--reset-offsets", "--group", "sg-desc", "--topic", "sq", "--to-offset", "2", "--execute")
    assert r.code == 0, r.err
    assert r.rows() == [["sg-desc", "sq", "0", "2"]]
    assert _describe(bs, "sg-desc")["offsets"][0]["start_offset"] == 2
    r = cli(bs, "groups", "--delete", "--group", "sg-desc")
    assert r.code == 0, r.err
    assert not any(row[0] == "sg-desc" for row in cli(bs, "groups", "--list", "--type", "share").rows())


def _wait_empty(bs: str, group: str) -> None:
    deadline = time.monotonic() + 60
    while _describe(bs, group)["state"] != "Empty":
        assert time.monotonic() < deadline, f"the share group {group} did not become Empty"
        time.sleep(0.2)


def test_delete_offsets_of_a_share_group(bs: str) -> None:
    """--delete-offsets (kafka-share-groups.sh --delete-offsets): refused while a member is in
    (NON_EMPTY_GROUP, exit 1, nothing deleted); for the empty group the topic's delivery state is gone (no
    offset information) and a new member starts again from share.auto.offset.reset (earliest here), so the
    acknowledged records are delivered again; an unknown topic is reported per topic, an unknown group is
    GROUP_ID_NOT_FOUND."""
    ck = need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "sdel", "--partitions", "1").code == 0
    _produce(bs, "sdel", 5)
    c = _share_consumer(bs, "sg-del", "sdel")
    try:
        for m in _take(c, 5):
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.commit_sync(30)
        assert _describe(bs, "sg-del")["offsets"][0]["start_offset"] == 5
        r = cli(bs, "groups", "--delete-offsets", "--group", "sg-del", "--topic", "sdel")
        assert r.code == 1 and "NON_EMPTY_GROUP: The group is not empty." in r.err, r.err
        assert _describe(bs, "sg-del")["offsets"][0]["start_offset"] == 5
    finally:
        c.close()
    _wait_empty(bs, "sg-del")
    r = cli(bs, "groups", "--delete-offsets", "--group", "sg-del", "--topic", "sdel", "--topic", "no-such-topic")
    assert r.code == 1 and "not deleted for: no-such-topic" in r.err
    assert r.out.splitlines()[0].split("\t") == ["TOPIC", "STATUS"]
    assert r.rows() == [["no-such-topic", "Error: This server does not host this topic-partition."],
                        ["sdel", "Successful"]]
    assert _describe(bs, "sg-del")["offsets"] == []
    r = cli(bs, "groups", "--describe", "--group", "sg-del")
    assert r.code == 0 and "Share group 'sg-del' has no offset information." in r.err
    # nothing left to delete: Kafka 4.x answers the topic UNKNOWN_TOPIC_OR_PARTITION "There is no offset
    # information to delete." (checked against Kafka 4.4 by the differential tests)
    r = cli(bs, "groups", "--delete-offsets", "--group", "sg-del", "--topic", "sdel", "--json")
    assert r.code == 1 and r.json() == {"group": "sg-del", "topics": [{
        "topic": "sdel", "status": "Error: There is no offset information to delete.",
        "error": "UNKNOWN_TOPIC_OR_PARTITION"}]}, r.out
    c = _share_consumer(bs, "sg-del", "sdel")   # starts again from earliest: all 5 records once more
    try:
        again = _take(c, 5)
        assert sorted(m.offset() for m in again) == [0, 1, 2, 3, 4]
        for m in again:
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.commit_sync(30)
    finally:
        c.close()
    r = cli(bs, "groups", "--delete-offsets", "--group", "no-such-share-group", "--topic", "sdel")
    assert r.code == 1 and "GROUP_ID_NOT_FOUND: Share group 'no-such-share-group' does not exist." in r.err
    r = cli(bs, "groups", "--delete-offsets", "--group", "sg-del")
    assert r.code == 2 and "--delete-offsets needs --topic" in r.err
    r = cli(bs, "groups", "--delete-offsets", "--group", "sg-del", "--topic", "sdel:0")
    assert r.code == 2 and "whole topics" in r.err

def test_unknown_group_and_bad_input(bs: str) -> None:
    need_confluent()
    r = cli(bs, "groups", "--describe", "--group", "no-such-share-group")
    assert r.code == 1 and "does not exist" in r.err
    r = cli(bs, "groups", "--list", "--type", "queue")
    assert r.code == 2 and "classic, consumer and share" in r.err
    r = cli(bs, "groups", "--describe", "--group", "x", "--type", "share")
    assert r.code == 2 and "--type is an option of --list" in r.err


def test_share_group_over_sasl_ssl_with_command_config(tmp_path: Path) -> None:
    """The wire client speaks TLS and SCRAM from --command-config (librdkafka's names), as the AdminClient
    does; a refused password is Kafka's error at once, not a hang or a retry loop."""
    from kafkalite.cli import certs
    from kafkalite.tests.broker.test_sasl import _add_scram
    from kafkalite.tests.support.rawclient import RawClient

    need_confluent()
    material = certs.write_certs(tmp_path / "certs")
    with Broker(overrides={"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
                           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
                           "ssl.keystore.location": str(material["broker.pem"]),
                           "ssl.truststore.location": str(material["ca.pem"]),
                           "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                           "kafkalite.share.auto.offset.reset": "earliest"}) as b:
        (host, port), (shost, sport) = b.addresses[0], b.addresses[1]
        with RawClient(host, port, timeout=10) as raw:
            assert _add_scram(raw, "sam", "sam-pw", 2).results[0].error_code == 0   # SCRAM-SHA-512
        plain = f"{host}:{port}"
        assert cli(plain, "topics", "--create", "--topic", "sec", "--partitions", "1").code == 0
        _produce(plain, "sec", 3)
        c = _share_consumer(plain, "sg-sec", "sec")
        try:
            for m in _take(c, 3):
                c.acknowledge(m)
            c.commit_sync(30)
            conf = tmp_path / "client.properties"
            conf.write_text("security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=sam\n"
                            f"sasl.password=sam-pw\nssl.ca.location={material['ca.pem']}\n")
            r = cli(f"{shost}:{sport}", "groups", "--describe", "--group", "sg-sec", "--command-config", str(conf))
            assert r.code == 0, r.err
            assert r.rows() == [["sg-sec", "sec", "0", "3", "0"]]
            # a refused password: Kafka's SASL_AUTHENTICATION_FAILED at once (confluent's AdminClient would
            # have stopped the tool earlier; the wire client's own answer is checked here)
            sec = Security.from_params({"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                                        "sasl.username": "sam", "sasl.password": "wrong",
                                        "ssl.ca.location": str(material["ca.pem"])})
            with ShareAdmin(f"{shost}:{sport}", timeout=10, security=sec) as admin, \
                    pytest.raises(WireError, match="SASL authentication failed") as err:
                admin.list_groups()
            assert err.value.code == 58 and "wrong" not in str(err.value)
        finally:
            c.close()


def test_wire_client_refuses_an_oversized_or_garbled_answer() -> None:
    """A peer that is not a Kafka broker: a frame size beyond the cap, or bytes that do not parse, end the
    request with WireError at once (no 2 GiB buffer, no wait for bytes that never come)."""
    import socket
    import struct
    import threading

    from kafkalite.client.wire import MAX_RESPONSE, call
    from kafkalite_wire.messages import ListGroupsRequest

    for answer in (struct.pack(">i", MAX_RESPONSE + 1) + b"x" * 16, struct.pack(">i", 3) + b"\x00\x00\x00"):
        srv = socket.create_server(("127.0.0.1", 0))

        def serve(srv: socket.socket = srv, answer: bytes = answer) -> None:
            conn, _ = srv.accept()
            with conn:
                conn.recv(1 << 16)
                conn.sendall(answer)
                conn.recv(1)   # until the client closes

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with srv, pytest.raises(WireError):
            call("127.0.0.1", srv.getsockname()[1], ListGroupsRequest(), 5, timeout=30)
        t.join(30)
