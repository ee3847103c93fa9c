"""pytest plugin (registered as the ``pytest11`` entry point ``kafkalite``).

Fixtures, available to any project that has kafkalite installed:

- ``kafkalite_broker`` (session scope): one embedded :class:`kafkalite.Broker` on a free port with a temporary
  data directory, shared by the whole test session. Use ``kafkalite_broker.bootstrap_servers``; it also serves
  the built-in schema registry at ``kafkalite_broker.schema_registry_url``.
- ``kafkalite_schema_registry_url`` (session scope): that URL (``http://127.0.0.1:PORT``), for
  confluent-kafka's ``SchemaRegistryClient({"url": ...})``.
- ``kafkalite_broker_factory`` (function scope): a callable ``factory(**kwargs) -> Broker`` that starts brokers
  (``data_dir=``, ``overrides=``, ``emulate_kafka=``) and stops all of them at the end of the test.
- ``kafkalite_cluster`` (function scope): a :class:`kafkalite.cluster.Cluster` of 3 brokers in this process,
  stopped after the test. ``@pytest.mark.kafkalite_cluster(brokers=5, overrides={...})`` changes its
  arguments. Use ``kafkalite_cluster.bootstrap_servers`` and ``kafkalite_cluster.sync.<operation>(...)``
  (``stop_broker``, ``start_broker``, ``restart_broker``, ``move_leader``, ``set_isr``,
  ``move_coordinator``, ``describe``).

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
    from kafkalite.cluster import Cluster
    from kafkalite.embedded import Broker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafkalite_cluster(brokers=3, overrides=None, ...): arguments of the "
                                       "kafkalite_cluster fixture's Cluster")


@pytest.fixture(scope="session")
def kafkalite_broker() -> Iterator[Broker]:
    from kafkalite.embedded import Broker  # only when a fixture is used: the plugin itself costs nothing

    with Broker(schema_registry=True) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafkalite_schema_registry_url(kafkalite_broker: Broker) -> str:
    url = kafkalite_broker.schema_registry_url
    assert url is not None, "the session broker serves no schema registry"
    return url


@pytest.fixture
def kafkalite_broker_factory() -> Iterator[Callable[..., Broker]]:
    from kafkalite.embedded import Broker  # only when a fixture is used: the plugin itself costs nothing

    started: list[Broker] = []

    def factory(**kwargs: Any) -> Broker:
        broker = Broker(**kwargs)
        broker.start()
        started.append(broker)
        return broker

    yield factory
    for broker in reversed(started):
        broker.stop()


@pytest.fixture
def kafkalite_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    from kafkalite.cluster import Cluster  # only when the fixture is used: the plugin itself costs nothing

    marker = request.node.get_closest_marker("kafkalite_cluster")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    with Cluster(**kwargs) as cluster:
        yield cluster
