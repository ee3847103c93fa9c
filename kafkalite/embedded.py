"""``kafkalite.Broker``: an in-process broker for tests and notebooks.

    with kafkalite.Broker() as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

The server runs on its own trio loop in a daemon thread, bound to 127.0.0.1 on a free port, with a temporary
data directory (deleted on stop) unless ``data_dir`` is given. ``start()`` returns once clients can connect;
``stop()`` drains and closes storage cleanly (the clean-shutdown marker is written), and is idempotent.
A bad setting raises :class:`kafkalite.errors.ConfigError` from the constructor; a broker that cannot start
(address in use, data dir held by another broker, ...) raises :class:`BrokerStartError` from ``start()``
with the one-line cause, after removing the temporary data directory it created.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kafkalite.config.broker import BrokerConfig
from kafkalite.errors import describe
from kafkalite.runtime.loopthread import LoopOwner, LoopThread
from kafkalite.server.serve import serve


class BrokerStartError(RuntimeError):
    """The embedded broker could not start; the message is the one-line cause (the original exception is
    chained as ``__cause__``). A temporary data directory it created is already removed."""


def _one_line(exc: BaseException) -> str:
    known = describe(exc)
    if known is not None:
        return f"kafkalite broker failed to start: {known[1]}"
    return f"kafkalite broker failed to start: {type(exc).__name__}: {exc}"


class Broker(LoopOwner):
    def __init__(self, *, data_dir: str | Path | None = None, host: str = "127.0.0.1", port: int = 0,
                 overrides: Mapping[str, str] | None = None, emulate_kafka: str | None = None,
                 config: BrokerConfig | None = None, startup_timeout: float = 60.0,
                 schema_registry: bool = False) -> None:
        values: dict[str, str] = dict(config.values) if config is not None else {}
        values.setdefault("listeners", f"PLAINTEXT://{host}:{port}")
        if schema_registry:   # on a free port of the same host (Broker.schema_registry_url)
            values["kafkalite.schema.registry.listen"] = f"{host}:0"
        if emulate_kafka:
            values["kafkalite.emulate.kafka"] = emulate_kafka
        values.update(overrides or {})
        self._own_dir = data_dir is None
        values["log.dirs"] = str(data_dir) if data_dir is not None else "."
        BrokerConfig(values)    # a bad setting raises ConfigError here, before a temporary dir exists
        self.data_dir = Path(tempfile.mkdtemp(prefix="kafkalite-")) if data_dir is None else Path(data_dir)
        values["log.dirs"] = str(self.data_dir)
        self.config = BrokerConfig(values)
        self.startup_timeout = startup_timeout
        self.host = host
        self.port = 0
        self.addresses: list[tuple[str, int]] = []
        self._loop = LoopThread(f"kafkalite-broker-{id(self):x}", "broker")

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """(host, port) of the /metrics endpoint when ``kafkalite.metrics.listen`` is set (port 0: a free one)."""
        # only when asked: the metrics room is not imported otherwise
        from kafkalite.metrics import bound_address

        return bound_address(self.data_dir)

    @property
    def console_address(self) -> tuple[str, int] | None:
        """(host, port) of the web console when ``kafkalite.console.listen`` is set (port 0: a free one)."""
        from kafkalite.console import bound_address  # only when asked: the console is not imported otherwise

        return bound_address(self.data_dir)

    @property
    def schema_registry_url(self) -> str | None:
        """``http://127.0.0.1:PORT`` of the built-in schema registry when ``schema_registry=True`` (or
        ``kafkalite.schema.registry.listen`` is set); None when it is off or not started."""
        from kafkalite.registry import bound_address  # the registry room is imported only when asked about

        bound = bound_address(self.data_dir)
        if bound is None:
            return None
        host, port = bound
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    @property
    def faults(self) -> Any:
        """Faults on command for this broker (:class:`kafkalite.faults.embedded.BrokerFaults`): inject errors,
        latency, dropped connections, a pause; wait for a group state."""
        from kafkalite.faults.embedded import BrokerFaults  # only when faults are asked for: not at start

        return BrokerFaults(self)

    @property
    def control_address(self) -> tuple[str, int] | None:
        """(host, port) of the HTTP control API when ``kafkalite.control.listen`` is set (port 0: a free one)."""
        # only when asked: the control API is not imported otherwise
        from kafkalite.control import bound_address

        return bound_address(self.data_dir)

    def _start_error(self, error: BaseException) -> Exception:
        return BrokerStartError(_one_line(error))

    async def _serve(self, shutdown: Any, ready: Callable[[], None]) -> None:
        import trio

        async with trio.open_nursery() as nursery:
            addrs = await nursery.start(
                lambda task_status: serve(self.config, shutdown=shutdown, task_status=task_status))
            self.addresses = addrs
            self.host, self.port = addrs[0]
            ready()

    def __repr__(self) -> str:
        return f"<kafkalite.Broker {self.bootstrap_servers} data_dir={str(self.data_dir)!r}>"
