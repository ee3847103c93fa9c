"""The console's live updates over Server-Sent Events (kafkalite/console/events.py): the stream carries what
the JSON endpoints answer, its concurrency is capped (503 beyond, the page then polls), a closed client frees
its slot, ordinary requests are answered while every stream slot is taken, and pages in headless Chromium use
it (and fall back to polling when refused)."""
from __future__ import annotations

import json
import socket
import time

import pytest

from kafkalite.console.http import MAX_STREAMS
from kafkalite.tests.support.console_helpers import console_broker, produce
from kafkalite.tests.support.tools_helpers import need_confluent


class Stream:
    """A raw HTTP client reading an event stream (the response head, then one event at a time)."""

    def __init__(self, host: str, port: int, query: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.sendall(f"GET /api/events?{query} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, self.buf
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}

    def event(self) -> tuple[str, str]:
        """(event type, data) of the next event; comments and retry lines are skipped."""
        while True:
            while b"\n\n" not in self.buf:
                chunk = self.sock.recv(65536)
                assert chunk, "stream closed"
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\n\n", 1)
            kind, data = "message", []
            for line in raw.decode().split("\n"):
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
            if data:
                return kind, "\n".join(data)

    def body(self) -> bytes:
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return self.buf
            self.buf += chunk

    def close(self) -> None:
        self.sock.close()


def _open(c, query: str) -> Stream:
    """A stream, once a slot is free (a client that closed a moment ago frees its slot when the server reads
    its EOF)."""
    deadline = time.monotonic() + 30
    while True:
        s = Stream(c.host, c.port, query)
        if s.status == 200:
            return s
        s.close()
        assert time.monotonic() < deadline, "no stream slot became free"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def env():
    need_confluent()
    with console_broker() as (broker, c):
        yield broker, c


def test_stream_carries_what_the_endpoint_answers(env):
    broker, c = env
    assert c.post("topics", {"name": "ev", "partitions": 1}).status == 200
    s = Stream(c.host, c.port, "view=topic&id=ev")
    try:
        assert s.status == 200 and s.headers["content-type"].startswith("text/event-stream")
        assert "content-length" not in s.headers
        kind, data = s.event()
        assert kind == "message" and json.loads(data)["name"] == "ev"
        produce(broker.bootstrap_servers, "ev", [{"value": b"x"}] * 3)
        deadline = time.monotonic() + 60
        while True:   # the next events show the new end offset without any request from the client
            parts = json.loads(s.event()[1])["partitions"]
            if parts[0]["high_watermark"] == 3:
                break
            assert time.monotonic() < deadline
    finally:
        s.close()
    bad = Stream(c.host, c.port, "view=nothing")
    assert bad.status == 400 and "view must be" in json.loads(bad.body())["error"]
    gone = Stream(c.host, c.port, "view=group&id=no-such-group")
    try:   # an error view is an error event, and the stream goes on
        assert gone.status == 200 and gone.event() == ("error", json.dumps({"error": "unknown group 'no-such-group'"}))
    finally:
        gone.close()


def test_streams_are_capped_and_a_closed_client_frees_its_slot(env):
    _broker, c = env
    streams = [_open(c, "view=groups") for _ in range(MAX_STREAMS)]
    try:
        for s in streams:
            assert s.status == 200 and "groups" in json.loads(s.event()[1])
        extra = Stream(c.host, c.port, "view=groups")
        assert extra.status == 503 and "too many live streams" in json.loads(extra.body())["error"]
        # every stream slot taken: ordinary requests are still answered
        assert c.get("overview").status == 200 and c.get("topics").status == 200
        streams.pop().close()
        streams.append(_open(c, "view=groups"))   # the server sees the closed client's EOF and frees its slot
    finally:
        for s in streams:
            s.close()


def test_pages_use_events_and_fall_back_to_polling(env, tmp_path):
    from kafkalite.tests.clients.test_console_browser import open_page
    from kafkalite.tests.support.chromium import Chromium, need_chromium

    exe = need_chromium()
    broker, c = env
    assert c.post("topics", {"name": "ev-page", "partitions": 1}).status == 200
    row = "#topics tr[data-topic='ev-page']"
    with Chromium.launch(exe) as browser:
        page = browser.new_page()
        open_page(page, c, "#/topics")
        page.wait_for(f"document.querySelector(\"{row} .end\") && document.querySelector(\"{row} .end\").textContent === '0'")
        assert page.eval("window.__kafkaliteLive") == "sse"
        produce(broker.bootstrap_servers, "ev-page", [{"value": b"v"}] * 5)
        page.wait_for(f"document.querySelector(\"{row} .end\").textContent === '5'")   # pushed, no reload
        # every slot taken by other clients: the page is refused a stream and polls instead, still live
        page.goto("about:blank")   # the page's own stream closes
        held = []
        try:
            while len(held) < MAX_STREAMS:
                held.append(_open(c, "view=overview"))
            open_page(page, c, "#/topics")
            page.wait_for("window.__kafkaliteLive === 'poll'")
            produce(broker.bootstrap_servers, "ev-page", [{"value": b"v"}] * 2)
            page.wait_for(f"document.querySelector(\"{row} .end\").textContent === '7'")
        finally:
            for s in held:
                s.close()
        assert page.problems() == [] or all("events" in p for p in page.problems())
