"""An embedded broker with its console on a free loopback port, and HTTP calls to it, for the console tests."""
from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kafkalite import Broker


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


class ConsoleClient:
    def __init__(self, broker: Broker) -> None:
        addr = broker.console_address
        assert addr is not None, "the console did not start"
        self.host, self.port = addr
        self.base = f"http://{self.host}:{self.port}"
        page = self.request("GET", "/").body.decode()
        m = re.search(r'name="kafkalite-token" content="([0-9a-f]+)"', page)
        assert m is not None
        self.token = m.group(1)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Answer:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Answer(resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()})
        finally:
            conn.close()

    def get(self, path: str) -> Answer:
        return self.request("GET", "/api/" + path)

    def post(self, path: str, data: Any, *, token: str | None = "", origin: str | None = None) -> Answer:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["X-Kafkalite-Token"] = token or self.token
        if origin is not None:
            headers["Origin"] = origin
        return self.request("POST", "/api/" + path, json.dumps(data).encode(), headers)


@contextmanager
def console_broker(**overrides: str) -> Iterator[tuple[Broker, ConsoleClient]]:
    values = {"kafkalite.console.listen": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0", **overrides}
    with Broker(overrides=values) as broker:
        yield broker, ConsoleClient(broker)


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    """Each record: value, and optionally key, partition, headers, timestamp (a real client: confluent-kafka)."""
    from kafkalite.tests.support.tools_helpers import need_confluent

    ck = need_confluent()
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for r in records:
        kwargs = {k: r[k] for k in ("key", "partition", "headers", "timestamp") if k in r}
        p.produce(topic, r.get("value"), **kwargs)
    assert p.flush(30) == 0
