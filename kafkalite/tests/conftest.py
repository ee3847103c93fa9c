"""Fixtures for the broker tests: an embedded broker per module and raw connections to it."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture
def raw(broker: Broker) -> Iterator[Callable[[], RawClient]]:
    clients: list[RawClient] = []

    def connect() -> RawClient:
        c = RawClient(broker.host, broker.port)
        clients.append(c)
        return c

    yield connect
    for c in clients:
        c.close()
