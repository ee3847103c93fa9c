"""pytest plugin (registered as the ``pytest11`` entry point ``kafkalite``).

Fixtures, available to any project that has kafkalite installed:

- ``kafkalite_broker`` (session scope): one embedded :class:`kafkalite.Broker` on a free port with a temporary
  data directory, shared by the whole test session. Use ``kafkalite_broker.bootstrap_servers``.
- ``kafkalite_broker_factory`` (function scope): a callable ``factory(**kwargs) -> Broker`` that starts brokers
  (``data_dir=``, ``overrides=``, ``emulate_kafka=``) and stops all of them at the end of the test.

A broker that cannot start fails the test that asked for it with the one-line cause
(:class:`kafkalite.embedded.BrokerStartError`, or ``ConfigError`` for a bad override), and leaves no
temporary directory behind. Nothing heavy is imported until a fixture is used, so merely having the plugin
installed costs nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kafkalite.embedded import Broker


@pytest.fixture(scope="session")
def kafkalite_broker() -> Iterator[Broker]:
    from kafkalite.embedded import Broker

    with Broker() as broker:
        yield broker


@pytest.fixture
def kafkalite_broker_factory() -> Iterator[Callable[..., Broker]]:
    from kafkalite.embedded import Broker

    started: list[Broker] = []

    def factory(**kwargs: Any) -> Broker:
        broker = Broker(**kwargs)
        broker.start()
        started.append(broker)
        return broker

    yield factory
    for broker in reversed(started):
        broker.stop()
