"""``kafkalite groups`` on share groups (KIP-932), made by confluent-kafka's real ``ShareConsumer``: what
``kafka-share-groups.sh`` shows (start offset and lag per share-partition after acknowledgements, members,
state), --list --type share, delete (refused while a member is in), reset-offsets (refused for an active
group, AlterShareGroupOffsets for an empty one), unknown groups and bad input."""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.tools_helpers import cli, need_confluent


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


def test_unknown_group_and_bad_input(bs: str) -> None:
    need_confluent()
    r = cli(bs, "groups", "--describe", "--group", "no-such-share-group")
    assert r.code == 1 and "does not exist" in r.err
    r = cli(bs, "groups", "--list", "--type", "queue")
    assert r.code == 2 and "classic, consumer and share" in r.err
    r = cli(bs, "groups", "--describe", "--group", "x", "--type", "share")
    assert r.code == 2 and "--type is an option of --list" in r.err
