"""The web console in a real headless Chromium (Debian's package, driven over the DevTools protocol by
kafkalite.tests.support.chromium): every page, the live update while a real producer writes, create/delete topic and
the reset-offsets flow through their confirmation dialogs, and that attacker-controlled keys, values,
headers and group ids stay text. Screenshots go to $KAFKALITE_CONSOLE_SCREENSHOTS (default: a pytest temp
directory); CI keeps them as artifacts."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalite import Cluster
from kafkalite.console import bound_address
from kafkalite.tests.support.chromium import Chromium, need_chromium
from kafkalite.tests.support.console_helpers import ConsoleClient, console_broker, produce
from kafkalite.tests.support.tools_helpers import need_confluent

EVIL = '<img src=x onerror="window.__xss=1">'
EVIL_VALUE = '<script>window.__xss=2</script><b>bold</b>'
EVIL_GROUP = '<img src=y onerror="window.__xss=3">'


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    where = os.environ.get("KAFKALITE_CONSOLE_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("console-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def env():
    exe = need_chromium()
    need_confluent()
    with console_broker() as (broker, client), Chromium.launch(exe) as browser:
        page = browser.new_page()
        yield broker, client, page
        assert page.problems() == []


def open_page(page, client, route: str) -> None:
    """Navigate and wait until the page has rendered that route (a hash change re-renders in place: the
    previous route's ready mark is cleared first)."""
    page.eval("(m => m && m.removeAttribute('data-ready'))(document.getElementById('main'))")
    page.goto(client.base + "/" + route)
    page.wait_for("document.getElementById('main') && document.getElementById('main').dataset.ready")


def text(page, selector: str) -> str:
    return page.eval(f"document.querySelector({json.dumps(selector)}).textContent")


def test_brokers_page(env, shots):
    broker, c, page = env
    open_page(page, c, "#/brokers")
    overview = c.get("overview").json()
    assert overview["cluster_id"] in text(page, "#broker")
    assert str(broker.port) in text(page, "main")
    page.eval("const f = document.getElementById('config-filter'); f.value = 'retention';"
              "f.dispatchEvent(new Event('input'))")
    names = page.eval("[...document.querySelectorAll('#configs tbody tr td:first-child')].map(e => e.textContent)")
    assert names and all("retention" in n for n in names)
    assert "log.retention.hours" in names
    page.screenshot(shots / "brokers.png")


def test_topics_page_updates_live_while_producing(env, shots):
    broker, c, page = env
    assert c.post("topics", {"name": "live", "partitions": 2}).status == 200
    open_page(page, c, "#/topics")
    row = "#topics tr[data-topic='live']"
    page.wait_for(f"document.querySelector(\"{row} .end\").textContent === '0'")
    produce(broker.bootstrap_servers, "live", [{"value": b"v%d" % i} for i in range(120)])
    # the open page shows the new end offsets and a produce rate, without a reload
    page.wait_for(f"document.querySelector(\"{row} .end\").textContent === '120'")
    rate = page.wait_for(f"(t => t !== '–' && parseFloat(t) > 0 && t)(document.querySelector(\"{row} .rate\").textContent)")
    assert rate.endswith("/s")
    page.screenshot(shots / "topics-live.png")


def test_topic_page_and_partition_offsets(env, shots):
    broker, c, page = env
    open_page(page, c, "#/topic/live")
    hws = page.eval("[...document.querySelectorAll('#partitions tbody tr .hw')].map(e => e.textContent)")
    d = c.get("topics/live").json()
    assert hws == [f"{p['high_watermark']:,}" for p in d["partitions"]]
    assert sum(p["high_watermark"] for p in d["partitions"]) == 120
    assert "00000000000000000000.log" in text(page, "#segments")
    assert "retention.ms" in text(page, "#topic-configs")
    before = page.eval("document.querySelector(\"#partitions tr[data-partition='0'] .hw\").textContent")
    produce(broker.bootstrap_servers, "live", [{"value": b"more", "partition": 0}] * 5)
    page.wait_for("document.querySelector(\"#partitions tr[data-partition='0'] .hw\").textContent !== "
                  + json.dumps(before))
    page.screenshot(shots / "topic.png")


def test_message_browser_formats_search_and_no_xss(env, shots):
    broker, c, page = env
    assert c.post("topics", {"name": "xss", "partitions": 1}).status == 200
    produce(broker.bootstrap_servers, "xss", [
        {"key": EVIL.encode(), "value": EVIL_VALUE.encode(), "headers": [(EVIL, EVIL.encode())]},
        {"key": b"doc", "value": json.dumps({"name": EVIL, "n": 1}).encode()},
        {"key": b"bin", "value": b"\x00\x01\x02\xff"},
        {"key": b"find-me", "value": b"a NEEDLE in the hay"},
    ])
    open_page(page, c, "#/messages/xss/0")
    page.wait_for("document.querySelectorAll('#messages tbody tr').length === 4")
    assert page.eval("window.__xss === undefined")
    assert page.eval("document.querySelectorAll('#messages img, #messages script, #messages b:not(:empty) ~ b')"
                     ".length") == 0
    assert text(page, "#messages tr[data-offset='0'] .key pre") == EVIL
    assert text(page, "#messages tr[data-offset='0'] .value pre") == EVIL_VALUE
    assert EVIL in text(page, "#messages tr[data-offset='0'] .headers")
    pretty = text(page, "#messages tr[data-offset='1'] .value pre.v-json")
    assert json.loads(pretty) == {"name": EVIL, "n": 1} and "\n" in pretty
    assert text(page, "#messages tr[data-offset='2'] .value pre.v-hex") == "00 01 02 ff"
    page.screenshot(shots / "messages.png")
    page.eval("document.getElementById('search').value = 'NEEDLE';"
              "document.getElementById('from').value = 'beginning';"
              "document.getElementById('load').click()")
    page.wait_for("document.querySelectorAll('#messages tbody tr').length === 1")
    assert page.eval("document.querySelector('#messages tbody tr').dataset.offset") == "3"
    page.eval("document.getElementById('search').value = '';"
              "document.getElementById('from').value = 'offset';"
              "document.getElementById('offset').value = '2';"
              "document.getElementById('load').click()")
    page.wait_for("[...document.querySelectorAll('#messages tbody tr')].map(r => r.dataset.offset).join() === '2,3'")
    page.eval("document.getElementById('limit').value = '1'; document.getElementById('load').click()")
    page.wait_for("[...document.querySelectorAll('#messages tbody tr')].map(r => r.dataset.offset).join() === '2'")
    page.eval("document.getElementById('next').click()")   # the next page starts where this one stopped
    page.wait_for("[...document.querySelectorAll('#messages tbody tr')].map(r => r.dataset.offset).join() === '3'")
    assert page.eval("document.getElementById('next').disabled")   # at the high watermark
    page.screenshot(shots / "messages-search.png")


def test_create_and_delete_topic_with_confirmation(env, shots):
    _broker, c, page = env
    open_page(page, c, "#/topics")
    page.eval("document.getElementById('new-topic-name').value = 'from-ui';"
              "document.getElementById('new-topic-partitions').value = '3';"
              "document.getElementById('new-topic-configs').value = 'retention.ms=120000';"
              "document.querySelector('#create-topic button[type=submit]').click()")
    page.wait_for("!document.getElementById('dialog').hidden && document.getElementById('confirm-create')")
    assert "from-ui" not in {t["name"] for t in c.get("topics").json()["topics"]}   # not before the confirmation
    page.screenshot(shots / "create-confirm.png")
    page.eval("document.getElementById('confirm-create').click()")
    page.wait_for("document.querySelector(\"#topics tr[data-topic='from-ui']\")")
    d = c.get("topics/from-ui").json()
    assert d["partition_count"] == 3
    assert {x["name"]: x["value"] for x in d["configs"]}["retention.ms"] == "120000"
    open_page(page, c, "#/topic/from-ui")
    page.eval("document.getElementById('delete-topic').click()")
    page.wait_for("document.getElementById('confirm-delete')")
    page.eval("document.getElementById('confirm-name').value = 'wrong'; document.getElementById('confirm-delete').click()")
    page.wait_for("document.querySelector('#topic-message .error')")
    assert c.get("topics/from-ui").status == 200   # a wrong name deletes nothing
    page.eval("document.getElementById('delete-topic').click()")
    page.wait_for("document.getElementById('confirm-delete')")
    page.eval("document.getElementById('confirm-name').value = 'from-ui'; document.getElementById('confirm-delete').click()")
    page.wait_for("location.hash === '#/topics' && document.querySelector('#topics') && "
                  "!document.querySelector(\"#topics tr[data-topic='from-ui']\")")
    assert c.get("topics/from-ui").status == 404


def test_groups_live_lag_and_reset_offsets_flow(env, shots):
    broker, c, page = env
    ck = need_confluent()
    assert c.post("topics", {"name": "work", "partitions": 1}).status == 200
    produce(broker.bootstrap_servers, "work", [{"value": b"w%d" % i} for i in range(20)])
    # a group whose id is markup, committed by a real client: shown as text
    evil = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": EVIL_GROUP})
    evil.commit(offsets=[ck.TopicPartition("work", 0, 3)], asynchronous=False)
    evil.close()
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "workers",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe(["work"])
        got = 0
        for _ in range(100):
            m = consumer.poll(1.0)
            got += m is not None and not m.error()
            if got == 20:
                break
        consumer.commit(asynchronous=False)
        open_page(page, c, "#/groups")
        row = "#groups tr[data-group='workers']"
        page.wait_for(f"document.querySelector(\"{row} .lag\").textContent === '0'")
        assert page.eval("window.__xss === undefined && document.querySelectorAll('#groups img').length === 0")
        assert EVIL_GROUP in text(page, "#groups")
        produce(broker.bootstrap_servers, "work", [{"value": b"late"}] * 7)
        page.wait_for(f"document.querySelector(\"{row} .lag\").textContent === '7'")   # live, no reload
        page.screenshot(shots / "groups.png")

        open_page(page, c, "#/group/workers")
        assert "work: 0" in text(page, "#members")
        assert "Stable" in text(page, "#group-state")
        page.eval("document.getElementById('reset-to').value = 'earliest'; "
                  "document.getElementById('reset-preview').click()")
        page.wait_for("document.getElementById('confirm-reset')")
        page.eval("document.getElementById('confirm-reset').click()")
        error = page.wait_for("(e => e && e.textContent)(document.querySelector('#reset-message .error'))")
        assert "inactive" in error and "Stable" in error   # refused for a group with members, as Kafka
        page.screenshot(shots / "reset-refused.png")
    finally:
        consumer.close()
    page.wait_for("document.getElementById('group-state').textContent.includes('state Empty')")
    page.eval("document.getElementById('reset-to').value = 'offset'; "
              "document.getElementById('reset-value').value = '5'; "
              "document.getElementById('reset-preview').click()")
    page.wait_for("document.getElementById('confirm-reset')")
    plan = page.eval("[...document.querySelectorAll('#reset-plan tbody td')].map(e => e.textContent)")
    assert plan == ["0", "20", "5"]   # partition, current, new: shown before anything changes
    assert next(o for o in c.get("groups/workers").json()["offsets"])["committed"] == 20
    page.screenshot(shots / "reset-plan.png")
    page.eval("document.getElementById('confirm-reset').click()")
    page.wait_for("document.querySelector('#reset-message .ok')")
    page.wait_for("document.querySelector(\"#offsets tr[data-tp='work-0'] .committed\").textContent === '5'")
    page.screenshot(shots / "reset-done.png")
    checker = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "workers"})
    try:
        assert checker.committed([ck.TopicPartition("work", 0)], timeout=20)[0].offset == 5
    finally:
        checker.close()


def test_cluster_pages_show_each_partitions_leader_replicas_isr_and_the_brokers(shots):
    """``kafkalite serve --brokers 3 --console``: the console (served by broker 1) shows each partition's real
    leader, replicas and ISR as Metadata reports them (not broker 1 everywhere), every broker with its port
    written as a port (no thousands separator), and a stopped broker as stopped."""
    exe = need_chromium()
    need_confluent()
    with Cluster(brokers=3, overrides={"kafkalite.console.listen": "127.0.0.1:0",
                                       "offsets.topic.num.partitions": "3"}) as cluster, \
            Chromium.launch(exe) as browser:
        from confluent_kafka.admin import AdminClient, NewTopic  # lazy: need_confluent() skips without it

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("placed", 3, 2)])["placed"].result(30)
        md = admin.list_topics("placed", timeout=30).topics["placed"].partitions
        want = {p: (str(md[p].leader), ",".join(map(str, md[p].replicas)), ",".join(map(str, md[p].isrs)))
                for p in sorted(md)}
        assert len({leader for leader, _r, _i in want.values()}) == 3    # the leaders are spread over the brokers

        addr = bound_address(cluster.runtime.nodes[1].state.log_dir)
        assert addr is not None
        client = ConsoleClient(SimpleNamespace(console_address=addr))   # type: ignore[arg-type]
        page = browser.new_page()
        open_page(page, client, "#/topic/placed")
        shown = page.eval("Object.fromEntries([...document.querySelectorAll('#partitions tbody tr')].map(r => "
                          "[r.dataset.partition, [r.querySelector('.leader').textContent, "
                          "r.querySelector('.replicas').textContent, r.querySelector('.isr').textContent]]))")
        assert {int(k): tuple(v) for k, v in shown.items()} == want
        page.screenshot(shots / "cluster-topic.png")

        open_page(page, client, "#/brokers")
        rows = page.eval("[...document.querySelectorAll('#brokers tbody tr')].map(r => "
                         "[...r.querySelectorAll('td')].map(td => td.textContent))")
        ports = cluster.addresses()
        assert rows == [[str(n), ports[n][0], str(ports[n][1]), "running"] for n in (1, 2, 3)]
        listener_port = page.eval("document.querySelector('#listeners tbody td:nth-child(3)').textContent")
        assert listener_port == str(ports[1][1]) and "," not in listener_port
        page.screenshot(shots / "cluster-brokers.png")

        cluster.sync.stop_broker(3)
        open_page(page, client, "#/topic/placed")   # another route first: the same hash would not re-render
        leaders = page.eval("[...document.querySelectorAll('#partitions tbody tr .leader')].map(e => e.textContent)")
        assert "3" not in leaders and len(leaders) == 3
        open_page(page, client, "#/brokers")
        status = page.eval("[...document.querySelectorAll('#brokers tbody tr')].map(r => r.lastChild.textContent)")
        assert status == ["running", "running", "stopped"]
        assert page.problems() == []
