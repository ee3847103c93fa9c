"""The console's JSON API without a browser: reads match what a real client produced; bad input gets a 4xx
with a message (never a 500 or a stalled loop); mutations need the token and the same origin; reset-offsets
follows Kafka (dry run first, refused for a group with members, clamped to the log)."""
from __future__ import annotations

import json
import socket

import pytest

from kafkalite.tests.support.console_helpers import console_broker, produce
from kafkalite.tests.support.tools_helpers import need_confluent


def _admin(conf):
    need_confluent()
    from confluent_kafka.admin import AdminClient

    return AdminClient(conf)


@pytest.fixture(scope="module")
def env():
    need_confluent()
    with console_broker() as (broker, client):
        assert client.post("topics", {"name": "browse", "partitions": 2}).status == 200
        now = 1_700_000_000_000
        records = [{"key": b"k%d" % i, "value": b"plain %d" % i, "partition": 0, "timestamp": now + i * 1000}
                   for i in range(30)]
        records += [
            {"key": b"json", "value": json.dumps({"a": [1, 2], "b": "x"}).encode(), "partition": 0,
             "timestamp": now + 30_000, "headers": [("trace", b"abc"), ("bin", b"\x00\xff")]},
            {"key": None, "value": b"\x00\x01\xfe\xff", "partition": 0, "timestamp": now + 31_000},
            {"key": b"needle-key", "value": b"the haystack holds a NEEDLE here", "partition": 0,
             "timestamp": now + 32_000},
        ]
        produce(broker.bootstrap_servers, "browse", records)
        yield broker, client


def test_topics_and_detail(env):
    _broker, c = env
    topics = {t["name"]: t for t in c.get("topics").json()["topics"]}
    assert topics["browse"]["partitions"] == 2
    assert topics["browse"]["end_offsets"] == 33
    d = c.get("topics/browse").json()
    p0 = d["partitions"][0]
    assert (p0["log_start_offset"], p0["high_watermark"], p0["log_end_offset"]) == (0, 33, 33)
    assert p0["segments"][0]["file"] == "00000000000000000000.log"
    assert p0["size"] == p0["segments"][0]["size"] > 0
    assert d["partitions"][1]["high_watermark"] == 0
    assert {"cleanup.policy", "retention.ms"} <= {x["name"] for x in d["configs"]}
    o = c.get("overview").json()
    assert o["node_id"] == 1 and any(x["name"] == "log.retention.hours" for x in o["configs"])


def test_browse_modes_and_formats(env):
    _broker, c = env
    tail = c.get("topics/browse/partitions/0/messages?from=end&limit=3").json()
    assert [r["offset"] for r in tail["records"]] == [30, 31, 32]
    js, binary, text = tail["records"]
    assert js["value"]["format"] == "json" and json.loads(js["value"]["text"]) == {"a": [1, 2], "b": "x"}
    assert "\n" in js["value"]["text"]   # pretty-printed
    assert js["headers"][0] == {"key": "trace", "value": {"format": "text", "text": "abc", "size": 3,
                                                         "truncated": False}}
    assert js["headers"][1]["value"]["format"] == "hex"
    assert binary["key"] is None and binary["value"] == {"format": "hex", "text": "00 01 fe ff", "size": 4,
                                                         "truncated": False}
    assert text["key"]["text"] == "needle-key"
    page = c.get("topics/browse/partitions/0/messages?from=offset&offset=5&limit=4").json()
    assert [r["offset"] for r in page["records"]] == [5, 6, 7, 8]
    assert page["records"][0]["value"]["text"] == "plain 5"
    first = c.get("topics/browse/partitions/0/messages?from=beginning&limit=1").json()
    assert first["records"][0]["offset"] == 0
    by_time = c.get("topics/browse/partitions/0/messages?from=timestamp&timestamp=1700000010000&limit=1").json()
    assert by_time["records"][0]["offset"] == 10
    iso = c.get("topics/browse/partitions/0/messages?from=timestamp&timestamp=2023-11-14T22:13:40Z&limit=1").json()
    assert iso["records"][0]["offset"] == 20   # 1_700_000_020_000 ms


def test_search_by_key_and_substring_within_window(env):
    _broker, c = env
    hit = c.get("topics/browse/partitions/0/messages?from=beginning&q=NEEDLE&in=value").json()
    assert [r["offset"] for r in hit["records"]] == [32]
    by_key = c.get("topics/browse/partitions/0/messages?from=beginning&q=k2&in=key").json()
    assert [r["offset"] for r in by_key["records"]] == [2, *list(range(20, 30))]
    # a window of 10 records from offset 0 does not reach offset 32: nothing found, and it says where it stopped
    short = c.get("topics/browse/partitions/0/messages?from=beginning&q=NEEDLE&window=10").json()
    assert short["records"] == [] and short["scanned"] == 10 and short["next_offset"] == 10
    assert short["stopped"] == "window"


@pytest.mark.parametrize(("path", "status", "words"), [
    ("topics/nope", 404, "unknown topic"),
    ("topics/nope/partitions/0/messages", 404, "unknown topic"),
    ("topics/browse/partitions/9/messages", 404, "no partition 9"),
    ("topics/browse/partitions/x/messages", 400, "partition must be an integer"),
    ("topics/browse/partitions/0/messages?from=offset&offset=abc", 400, "offset must be an integer"),
    ("topics/browse/partitions/0/messages?from=offset&offset=-3", 400, "at least 0"),
    ("topics/browse/partitions/0/messages?from=offset", 400, "needs offset"),
    ("topics/browse/partitions/0/messages?limit=ten", 400, "limit must be an integer"),
    ("topics/browse/partitions/0/messages?from=sideways", 400, "from must be"),
    ("topics/browse/partitions/0/messages?from=timestamp&timestamp=yesterday", 400, "ISO 8601"),
    ("topics/browse/partitions/0/messages?q=" + "x" * 300, 400, "at most 256"),
    ("topics/browse/partitions/0/messages?in=both", 400, "in must be"),
    ("groups/none-such", 404, "unknown group"),
    ("nothing/here", 404, "no such endpoint"),
])
def test_bad_input_is_a_4xx_with_a_message(env, path, status, words):
    _broker, c = env
    a = c.get(path)
    assert a.status == status, a.body
    assert words in a.json()["error"]


def test_huge_limits_are_clamped(env):
    _broker, c = env
    d = c.get("topics/browse/partitions/0/messages?from=beginning&limit=99999999999999999999"
              "&window=99999999999999").json()
    assert d["limit"] == 200 and len(d["records"]) == 33
    far = c.get("topics/browse/partitions/0/messages?from=offset&offset=99999999999999999999").json()
    assert far["records"] == [] and far["from_offset"] == 33


def test_mutations_need_token_and_same_origin(env):
    _broker, c = env
    assert c.post("topics", {"name": "sneaky"}, token=None).status == 403
    assert c.post("topics", {"name": "sneaky"}, token="0" * 32).status == 403
    assert c.post("topics", {"name": "sneaky"}, origin="http://evil.example").status == 403
    assert c.post("topics", {"name": "sneaky"}, origin=f"http://{c.host}:{c.port + 1}").status == 403
    assert c.post("topics", {"name": "same-origin"}, origin=c.base).status == 200   # the page's own
    raw = c.request("POST", "/api/topics", b"name=sneaky", {"Content-Type": "application/x-www-form-urlencoded",
                                                             "X-Kafkalite-Token": c.token})
    assert raw.status == 415
    assert c.request("POST", "/api/topics", b"{not json", {"Content-Type": "application/json",
                                                           "X-Kafkalite-Token": c.token}).status == 400
    assert c.request("DELETE", "/api/topics/browse").status == 405
    assert "sneaky" not in {t["name"] for t in c.get("topics").json()["topics"]}
    # a page on another name that resolves to 127.0.0.1 (DNS rebinding) is not answered
    assert c.request("GET", "/api/topics", headers={"Host": "evil.example:80"}).status == 421
    page = c.request("GET", "/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_garbage_and_oversize_requests(env):
    broker, c = env
    big = c.request("POST", "/api/topics", b"{}" + b" " * 70_000,
                    {"Content-Type": "application/json", "X-Kafkalite-Token": c.token})
    assert big.status == 413
    with socket.create_connection((c.host, c.port), timeout=30) as s:
        s.sendall(b"\x16\x03\x01garbage\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    # the broker still serves Kafka clients and the console
    assert c.get("topics").status == 200
    need_confluent()
    md = _admin({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=20)
    assert "browse" in md.topics


def test_create_and_delete_topic(env):
    broker, c = env
    bad = c.post("topics", {"name": "bad name!", "partitions": 1})
    assert bad.status == 400 and "contains one or more characters other than ASCII alphanumerics" in bad.json()["error"]
    assert c.post("topics", {"name": "cfg", "partitions": 0}).status == 400
    assert c.post("topics", {"name": "cfg", "configs": {"retention.ms": "soon"}}).status == 400
    ok = c.post("topics", {"name": "made.here", "partitions": 3, "configs": {"retention.ms": "60000"}})
    assert ok.status == 200, ok.body
    assert c.post("topics", {"name": "made.here"}).status == 409
    assert c.post("topics", {"name": "made_here"}).status == 409   # collides with made.here
    need_confluent()
    admin = _admin({"bootstrap.servers": broker.bootstrap_servers})
    assert len(admin.list_topics(timeout=20).topics["made.here"].partitions) == 3
    d = c.get("topics/made.here").json()
    assert {x["name"]: x["value"] for x in d["configs"]}["retention.ms"] == "60000"
    refused = c.post("topics/made.here/delete", {})
    assert refused.status == 400 and "confirm" in refused.json()["error"]
    assert c.post("topics/__consumer_offsets/delete", {"confirm": "__consumer_offsets"}).status in (403, 404)
    assert c.post("topics/made.here/delete", {"confirm": "made.here"}).status == 200
    assert "made.here" not in admin.list_topics(timeout=20).topics
    assert c.get("topics/made.here").status == 404


def test_reset_offsets_follows_kafka(env):
    broker, c = env
    ck = need_confluent()
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "readers",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe(["browse"])
        got = 0
        for _ in range(100):
            m = consumer.poll(1.0)
            if m is not None and not m.error():
                got += 1
            if got == 33:
                break
        assert got == 33
        consumer.commit(asynchronous=False)
        g = c.get("groups/readers").json()
        assert g["state"] == "Stable" and len(g["members"]) == 1
        assert g["members"][0]["assignment"] == [{"topic": "browse", "partitions": [0, 1]}]
        row = next(o for o in g["offsets"] if o["partition"] == 0)
        assert (row["committed"], row["high_watermark"], row["lag"]) == (33, 33, 0)
        produce(broker.bootstrap_servers, "browse", [{"value": b"later", "partition": 0}])
        lagging = next(o for o in c.get("groups/readers").json()["offsets"] if o["partition"] == 0)
        assert lagging["lag"] == 1
        assert next(x for x in c.get("groups").json()["groups"] if x["group_id"] == "readers")["lag"] == 1
        refused = c.post("groups/readers/reset-offsets", {"topic": "browse", "to": "earliest", "execute": True})
        assert refused.status == 409 and "inactive" in refused.json()["error"]
    finally:
        consumer.close()
    bad = c.post("groups/readers/reset-offsets", {"topic": "browse", "to": "offset", "value": "ten"})
    assert bad.status == 400
    plan = c.post("groups/readers/reset-offsets", {"topic": "browse", "to": "shift", "value": -10,
                                                   "partitions": [0]}).json()
    assert plan["executed"] is False
    assert plan["plan"] == [{"topic": "browse", "partition": 0, "current": 33, "new": 23, "log_start_offset": 0,
                             "high_watermark": 34}]
    unchanged = next(o for o in c.get("groups/readers").json()["offsets"] if o["partition"] == 0)
    assert unchanged["committed"] == 33   # a dry run changes nothing
    done = c.post("groups/readers/reset-offsets", {"topic": "browse", "to": "offset", "value": 10 ** 9,
                                                   "execute": True})
    assert done.status == 200, done.body
    assert [r["new"] for r in done.json()["plan"]] == [34, 0]   # clamped to each high watermark
    checker = ck.Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "readers"})
    try:
        committed = checker.committed([ck.TopicPartition("browse", 0), ck.TopicPartition("browse", 1)], timeout=20)
    finally:
        checker.close()
    assert [tp.offset for tp in committed] == [34, 0]


def test_off_unless_configured(tmp_path):
    from kafkalite import Broker
    from kafkalite.cli import serve

    with Broker(data_dir=tmp_path / "d") as b:
        assert b.console_address is None
    import argparse

    parser = argparse.ArgumentParser()
    serve.configure(parser)
    args = parser.parse_args(["--console"])
    assert serve.config_from_args(args).get_str("kafkalite.console.listen") == "127.0.0.1:8080"
    assert parser.parse_args([]).console is None


def test_a_long_search_leaves_the_loop_free(env):
    """A search over the largest window decodes in a worker thread: other requests are answered meanwhile
    (decoded on the event loop, none would be until the search's answer)."""
    import threading

    broker, c = env
    assert c.post("topics", {"name": "big", "partitions": 1}).status == 200
    produce(broker.bootstrap_servers, "big", [{"value": b"x" * 200 + b"%d" % i} for i in range(60_000)])
    done = threading.Event()
    answered_during = []
    result = {}

    def search() -> None:
        result["a"] = c.get("topics/big/partitions/0/messages?from=beginning&q=absent&window=100000")
        done.set()

    t = threading.Thread(target=search)
    t.start()
    while not done.is_set():
        if c.get("overview").status == 200 and not done.is_set():
            answered_during.append(1)
    t.join(60)
    body = result["a"].json()
    assert body["scanned"] == 60_000 and body["records"] == [] and body["stopped"] == "end"
    assert len(answered_during) >= 3
