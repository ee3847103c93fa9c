"""Broker configuration, with Kafka's own property names and meanings.

Sources, lowest precedence first:

1. built-in defaults (Kafka's, except where noted: we listen on ``127.0.0.1:9092``, keep data in
   ``./kafkalite-data`` and default ``group.initial.rebalance.delay.ms`` to 0),
2. a ``server.properties`` file (Java properties syntax: ``key=value``, ``key: value`` or ``key value``;
   ``#``/``!`` comments; backslash line continuation),
3. environment variables ``KAFKALITE_<KEY>`` where the key's dots become underscores
   (``KAFKALITE_ADVERTISED_LISTENERS`` -> ``advertised.listeners``; our own ``kafkalite.*`` settings drop the
   repeated prefix: ``KAFKALITE_EMULATE_KAFKA`` -> ``kafkalite.emulate.kafka``),
4. ``--override key=value`` options, then the CLI shortcuts (``--listen``, ``--data-dir``).

Values are kept as strings (as in a properties file) and converted by the typed accessors.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULTS: dict[str, str] = {
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "advertised.listeners": "",
    "log.dirs": "",
    "log.dir": "./kafkalite-data",
    "node.id": "1",
    "broker.id": "",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "delete.topic.enable": "true",
    "log.segment.bytes": str(1024 * 1024 * 1024),
    "log.roll.ms": "",
    "log.roll.hours": "168",
    "log.retention.ms": "",
    "log.retention.minutes": "",
    "log.retention.hours": "168",
    "log.retention.bytes": "-1",
    "log.retention.check.interval.ms": "300000",
    "log.cleaner.backoff.ms": "15000",
    "log.flush.offset.checkpoint.interval.ms": "60000",
    "log.index.interval.bytes": "4096",
    "log.index.size.max.bytes": str(10 * 1024 * 1024),
    "log.cleanup.policy": "delete",
    "log.flush.interval.messages": str(2**63 - 1),
    "log.flush.interval.ms": "",
    "log.message.timestamp.type": "CreateTime",
    "compression.type": "producer",
    "message.max.bytes": "1048588",
    "socket.request.max.bytes": str(100 * 1024 * 1024),
    # Kafka's default is -1 (no bound); we bound request bytes buffered across all connections by default
    "queued.max.request.bytes": str(256 * 1024 * 1024),
    "connections.max.idle.ms": "600000",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "6000",
    "group.max.session.timeout.ms": "1800000",
    "offsets.topic.num.partitions": "50",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.segment.bytes": str(100 * 1024 * 1024),
    "offsets.retention.minutes": "10080",
    "transaction.state.log.num.partitions": "50",
    "transaction.state.log.replication.factor": "1",
    "transactional.id.expiration.ms": "604800000",
    "transaction.max.timeout.ms": "900000",
    # kafkalite-only settings
    "kafkalite.emulate.kafka": "3.9",
    "kafkalite.shutdown.drain.ms": "5000",
    # storage files kept open at once (LRU of descriptors); 0: half of the soft RLIMIT_NOFILE, which the
    # broker first raises to the hard limit (the other half is for client sockets)
    "kafkalite.storage.max.open.files": "0",
}

ENV_PREFIX = "KAFKALITE_"
# Environment variables with our prefix that are not broker settings.
_ENV_IGNORED = {"KAFKALITE_REFERENCE"}

_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d+)$")


class ConfigError(ValueError):
    """A setting is malformed (bad listener, non-integer number, ...)."""


@dataclass(frozen=True, slots=True)
class Listener:
    """One entry of ``listeners`` / ``advertised.listeners``: ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(value: str) -> list[Listener]:
    out: list[Listener] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        m = _LISTENER_RE.match(item)
        if not m:
            raise ConfigError(f"invalid listener {item!r}: expected NAME://host:port")
        host = m["host"].strip("[]")
        out.append(Listener(m["name"].upper(), host, int(m["port"])))
    return out


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (the subset Kafka's server.properties uses)."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line = pending + line
        pending = ""
        m = re.match(r"^((?:[^\\=: \t]|\\.)+)\s*[=:\s]\s*(.*)$", line)
        if m:
            key, value = m.group(1), m.group(2)
        else:
            key, value = line, ""
        props[key.replace("\\", "")] = value.strip()
    if pending:
        props.setdefault(pending.strip(), "")
    return props


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX) and name not in _ENV_IGNORED:
            key = name[len(ENV_PREFIX):].lower().replace("_", ".")
            if key and key not in DEFAULTS and f"kafkalite.{key}" in DEFAULTS:
                key = f"kafkalite.{key}"    # KAFKALITE_EMULATE_KAFKA -> kafkalite.emulate.kafka
            if key:
                out[key] = value
    return out


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid override {item!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out


class BrokerConfig:
    """String-valued settings plus typed accessors. ``values`` holds only what was set explicitly."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values: dict[str, str] = dict(values or {})
        # validate eagerly so a bad config fails at startup, not on the first request
        self.listeners()
        self.advertised_listeners()
        for key in ("node.id", "num.partitions", "message.max.bytes", "socket.request.max.bytes"):
            self.get_int(key)

    # -- construction -------------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        config_file: str | os.PathLike[str] | None = None,
        overrides: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        values: dict[str, str] = {}
        if config_file is not None:
            values.update(parse_properties(Path(config_file).read_text(encoding="utf-8")))
        values.update(env_overrides(os.environ if environ is None else environ))
        values.update(overrides or {})
        return cls(values)

    def with_overrides(self, overrides: Mapping[str, str]) -> BrokerConfig:
        return BrokerConfig({**self.values, **overrides})

    # -- accessors --------------------------------------------------------------------------------
    def get(self, key: str, default: str | None = None) -> str | None:
        if key in self.values:
            return self.values[key]
        if key in DEFAULTS:
            return DEFAULTS[key]
        return default

    def get_str(self, key: str) -> str:
        value = self.get(key)
        return "" if value is None else value

    def get_int(self, key: str, default: int | None = None) -> int:
        value = self.get(key)
        if value is None or value == "":
            if default is None:
                raise ConfigError(f"{key} is not set")
            return default
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"{key}={value!r} is not an integer") from None

    def get_bool(self, key: str) -> bool:
        value = self.get_str(key).strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"{key}={value!r} is not a boolean")
        return value == "true"

    # -- derived settings -----------------------------------------------------------------------
    def listeners(self) -> list[Listener]:
        listeners = parse_listeners(self.get_str("listeners"))
        if not listeners:
            raise ConfigError("listeners is empty")
        return listeners

    def advertised_listeners(self) -> list[Listener]:
        """Explicit ``advertised.listeners`` (may be empty: then the bound addresses are advertised)."""
        return parse_listeners(self.get_str("advertised.listeners"))

    @property
    def log_dir(self) -> Path:
        dirs = self.get_str("log.dirs") or self.get_str("log.dir")
        first = dirs.split(",")[0].strip()
        return Path(first or "./kafkalite-data")

    @property
    def node_id(self) -> int:
        if self.values.get("node.id"):
            return self.get_int("node.id")
        if self.values.get("broker.id"):
            return self.get_int("broker.id")
        return self.get_int("node.id")

    @property
    def num_partitions(self) -> int:
        return self.get_int("num.partitions")

    @property
    def auto_create_topics(self) -> bool:
        return self.get_bool("auto.create.topics.enable")

    @property
    def max_frame_size(self) -> int:
        return self.get_int("socket.request.max.bytes")

    @property
    def message_max_bytes(self) -> int:
        return self.get_int("message.max.bytes")

    @property
    def emulate_kafka(self) -> str:
        return self.get_str("kafkalite.emulate.kafka")

    def retention_ms(self) -> int:
        for key, factor in (("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                            ("log.retention.hours", 3_600_000)):
            if self.get_str(key):
                value = self.get_int(key)
                return -1 if value < 0 else value * factor
        return 168 * 3_600_000

    def roll_ms(self) -> int:
        if self.get_str("log.roll.ms"):
            return self.get_int("log.roll.ms")
        return self.get_int("log.roll.hours") * 3_600_000

    def __repr__(self) -> str:
        return f"BrokerConfig({self.values!r})"
