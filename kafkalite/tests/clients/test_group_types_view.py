"""Groups of every type (classic, KIP-848 consumer, KIP-932 share) in the console and in metrics, made by real
clients: confluent-kafka with ``group.protocol=consumer`` and its ShareConsumer; the console's groups page
checked in headless Chromium."""
from __future__ import annotations

import time

import pytest

from kafkalite.tests.broker.test_metrics import scrape, val
from kafkalite.tests.support.console_helpers import console_broker, produce
from kafkalite.tests.support.tools_helpers import need_confluent


def _poll_until(consumer, n: int) -> int:
    got = 0
    deadline = time.monotonic() + 60
    while got < n and time.monotonic() < deadline:
        out = consumer.poll(1.0)
        for m in [out] if out is None or hasattr(out, "error") else out:   # ShareConsumer.poll: a batch
            if m is not None and m.error() is None:
                got += 1
    return got


def _wait(what, check, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def groups_env():
    ck = need_confluent()
    with console_broker(**{"kafkalite.metrics.listen": "127.0.0.1:0"}) as (broker, c):
        bs = broker.bootstrap_servers
        assert c.post("topics", {"name": "typed", "partitions": 2}).status == 200
        produce(bs, "typed", [{"value": b"v%d" % i, "partition": i % 2} for i in range(10)])
        classic = ck.Consumer({"bootstrap.servers": bs, "group.id": "g-classic"})
        classic.commit(offsets=[ck.TopicPartition("typed", 0, 2)], asynchronous=False)
        classic.close()
        consumer = ck.Consumer({"bootstrap.servers": bs, "group.id": "g-848", "group.protocol": "consumer",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False})
        share = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": "g-share"})
        try:
            consumer.subscribe(["typed"])
            assert _poll_until(consumer, 10) == 10
            consumer.commit(asynchronous=False)
            share.subscribe(["typed"])   # joins on poll (it starts at the log end: nothing to deliver)
            _wait("the share consumer's membership", lambda: share.poll(0.5) is not None and any(
                g["group_id"] == "g-share" and g["members"] == 1 for g in c.get("groups").json()["groups"]))
            # ... and until its first ShareFetch has set both share-partitions' start at the log end: records
            # produced before that (a test's, on a loaded machine) would be skipped (share.auto.offset.reset
            # is latest when the share-partition is initialised, not when the member joined)
            _wait("both share-partitions initialised", lambda: share.poll(0.5) is not None and {
                (r["topic"], r["partition"]) for r in c.get("groups/g-share").json()["share_partitions"]} >= {
                ("typed", 0), ("typed", 1)})
            yield broker, c, ck, share
        finally:
            consumer.close()
            share.close()


def test_console_api_lists_every_type(groups_env):
    broker, c, _ck, _share = groups_env
    rows = _wait("three typed groups, the live ones Stable", lambda: (lambda d: d if {
        (g["group_id"], g["type"], g["state"]) for g in d} >= {("g-classic", "classic", "Empty"),
                                                                ("g-848", "consumer", "Stable"),
                                                                ("g-share", "share", "Stable")} else None)(
        c.get("groups").json()["groups"]))
    by_id = {g["group_id"]: g for g in rows}
    assert by_id["g-848"]["members"] == 1 and by_id["g-848"]["lag"] == 0 and by_id["g-848"]["partitions"] == 2
    assert by_id["g-classic"]["lag"] == 3                # 5 records on partition 0, committed 2
    assert by_id["g-share"]["members"] == 1 and by_id["g-share"]["lag"] is None

    g = c.get("groups/g-848").json()
    assert g["type"] == "consumer" and g["state"] == "Stable"
    (m,) = g["members"]
    assert sorted(p for a in m["assignment"] for p in a["partitions"]) == [0, 1]
    assert {(o["topic"], o["partition"], o["committed"], o["lag"]) for o in g["offsets"]} == {
        ("typed", 0, 5, 0), ("typed", 1, 5, 0)}
    s = c.get("groups/g-share").json()
    assert s["type"] == "share" and len(s["members"]) == 1
    assert sorted(p for a in s["members"][0]["assignment"] for p in a["partitions"]) == [0, 1]
    # lag of the KIP-848 group moves with the log
    produce(broker.bootstrap_servers, "typed", [{"value": b"late", "partition": 1}] * 4)
    _wait("lag 4", lambda: {x["group_id"]: x for x in c.get("groups").json()["groups"]}["g-848"]["lag"] == 4)


def test_metrics_cover_every_type(groups_env):
    broker, _c, _ck, _share = groups_env
    s = _wait("consumer and share groups Stable in metrics", lambda: (lambda s: s if val(
        s, "kafka_consumergroup_state", consumergroup="g-848", state="Stable") == 1 and val(
        s, "kafka_consumergroup_state", consumergroup="g-share", state="Stable") == 1 else None)(scrape(broker)))
    for gid, t in (("g-classic", "classic"), ("g-848", "consumer"), ("g-share", "share")):
        assert val(s, "kafkalite_group_type", consumergroup=gid, type=t) == 1
    assert val(s, "kafka_consumergroup_members", consumergroup="g-848") == 1
    assert val(s, "kafka_consumergroup_members", consumergroup="g-share") == 1
    assert val(s, "kafka_consumergroup_current_offset", consumergroup="g-848", topic="typed", partition=0) == 5


def test_share_partitions_start_offset_and_in_flight(groups_env):
    """A share group's share-partitions: start offset and in-flight records, in the console and in metrics."""
    broker, c, _ck, share = groups_env
    # share.auto.offset.reset=latest is resolved by the first ShareFetch of the partition (as in Kafka), which
    # may come after the membership the fixture waited for: records produced before it would be skipped
    _wait("the share-partition initialised by a fetch", lambda: share.poll(0.5) is not None and any(
        (r["topic"], r["partition"]) == ("typed", 0) for r in c.get("groups/g-share").json()["share_partitions"]))
    produce(broker.bootstrap_servers, "typed", [{"value": b"s%d" % i, "partition": 0} for i in range(6)])
    got = 0
    deadline = time.monotonic() + 60
    while got == 0 and time.monotonic() < deadline:   # acquired now, acknowledged only at the next poll
        got = sum(1 for m in share.poll(1.0) if m.error() is None and m.partition() == 0)
    assert got > 0
    rows = c.get("groups/g-share").json()["share_partitions"]
    p0 = next(r for r in rows if (r["topic"], r["partition"]) == ("typed", 0))
    end = c.get("topics/typed").json()["partitions"][0]["high_watermark"]
    assert 0 <= p0["start_offset"] <= end - got and p0["in_flight"] >= got
    s = scrape(broker)
    assert val(s, "kafkalite_sharegroup_start_offset", sharegroup="g-share", topic="typed", partition=0) \
        == p0["start_offset"]
    assert val(s, "kafkalite_sharegroup_in_flight_records", sharegroup="g-share", topic="typed", partition=0) \
        >= got


def test_groups_tool_shows_types(groups_env):
    """``kafkalite groups --list --type --state`` (kafka-consumer-groups.sh 4.x's columns) and --describe."""
    from kafkalite.tests.support.tools_helpers import cli

    broker, _c, _ck, _share = groups_env
    bs = broker.bootstrap_servers
    rows = cli(bs, "groups", "--list", "--type", "--state").rows()
    assert ["g-848", "Consumer", "Stable"] in rows and ["g-classic", "Classic", "Empty"] in rows
    assert not any(r[0] == "g-share" for r in rows)     # a share group is not a consumer group
    (d,) = cli(bs, "groups", "--describe", "--group", "g-848", "--json").json()
    assert d["type"] == "Consumer" and d["state"] == "Stable" and len(d["members"]) == 1
    assert {(o["partition"], o["current_offset"]) for o in d["offsets"]} >= {(0, 5)}


def test_groups_page_shows_types_in_chromium(groups_env, tmp_path):
    from kafkalite.tests.clients.test_console_browser import open_page, text
    from kafkalite.tests.support.chromium import Chromium, need_chromium

    exe = need_chromium()
    _broker, c, _ck, _share = groups_env
    with Chromium.launch(exe) as browser:
        page = browser.new_page()
        open_page(page, c, "#/groups")
        for gid, t in (("g-classic", "classic"), ("g-848", "consumer"), ("g-share", "share")):
            page.wait_for(f"(r => r && r.querySelector('.type').textContent === '{t}')"
                          f"(document.querySelector(\"#groups tr[data-group='{gid}']\"))")
        open_page(page, c, "#/group/g-848")
        page.wait_for("document.getElementById('group-state').textContent.startsWith('consumer group')")
        assert "typed: 0,1" in text(page, "#members")
        open_page(page, c, "#/group/g-share")
        page.wait_for("document.getElementById('group-state').textContent.startsWith('share group')")
        page.wait_for("document.querySelector(\"#share-partitions tr[data-tp='typed-0'] .start\")")
        assert page.problems() == []
