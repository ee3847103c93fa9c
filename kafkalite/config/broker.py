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
from pathlib import Path

from kafkalite.config.addresses import Listener, parse_listeners, parse_protocol_map
from kafkalite.config.defs import BROKER, InvalidConfig, broker_defs
from kafkalite.config.listeners import (
    check_listener,
    is_listener_setting,
    is_sensitive,
    unmapped_listeners,
)
from kafkalite.config.releases import config_release
from kafkalite.errors import ConfigError

# kafkalite's defaults under Kafka 3.9's table, as properties strings ("" = unset), from the one definition table;
# a BrokerConfig's own ``defaults`` are those of the release its profile follows (``defs.broker_defs``)
DEFAULTS: dict[str, str] = {name: d.default or "" for name, d in BROKER.items()}
_DEFAULTS_BY_RELEASE: dict[str, dict[str, str]] = {}


def defaults_for(release: str) -> dict[str, str]:
    out = _DEFAULTS_BY_RELEASE.get(release)
    if out is None:
        out = _DEFAULTS_BY_RELEASE[release] = {n: d.default or "" for n, d in broker_defs(release).items()}
    return out


# Kafka's GroupCoordinatorConfig.checkConstraints and ShareGroupConfig: a broker with these out of order does not
# start
_GROUP_RULES: tuple[tuple[str, str, str], ...] = (
    *((a.replace("@", p), op, b.replace("@", p)) for p in ("group.consumer.", "group.share.") for a, op, b in (
        ("@max.heartbeat.interval.ms", ">=", "@min.heartbeat.interval.ms"),
        ("@heartbeat.interval.ms", ">=", "@min.heartbeat.interval.ms"),
        ("@heartbeat.interval.ms", "<=", "@max.heartbeat.interval.ms"),
        ("@max.session.timeout.ms", ">=", "@min.session.timeout.ms"),
        ("@session.timeout.ms", ">=", "@min.session.timeout.ms"),
        ("@session.timeout.ms", "<=", "@max.session.timeout.ms"),
        ("@heartbeat.interval.ms", "<", "@session.timeout.ms"),
    )),
    # ShareGroupConfig's
    ("group.share.record.lock.duration.ms", ">=", "group.share.min.record.lock.duration.ms"),
    ("group.share.max.record.lock.duration.ms", ">=", "group.share.record.lock.duration.ms"),
    ("group.share.max.share.sessions", ">=", "group.share.max.size"),
)
_WORDS = {">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}

ENV_PREFIX = "KAFKALITE_"
# Environment variables with our prefix that are not broker settings: those of the project's own test, bench and
# build tooling (the compat harness, the reference broker, benches, fuzzers, the client builds, the console's
# browser tests), so a broker started under them does not take them for settings.
_ENV_IGNORED = ("KAFKALITE_REFERENCE", "KAFKALITE_COMPAT_", "KAFKALITE_BENCH_", "KAFKALITE_FUZZ_",
                "KAFKALITE_ADMIN_FUZZ_", "KAFKALITE_JAVA", "KAFKALITE_CONSOLE_SCREENSHOTS", "KAFKALITE_CHROMIUM",
                "KAFKALITE_SCALA_LIBRARY", "KAFKALITE_ECO_JARS", "KAFKALITE_GO_DRIVER", "KAFKALITE_RUST_DRIVER",
                "KAFKALITE_GROUPS_CACHE", "KAFKALITE_SPARK_MASTER", "KAFKALITE_TESTS")


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


def read_config_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """The properties of a server.properties file; ConfigError (one line) if it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path}: is a directory") from None
    except PermissionError:
        raise ConfigError(f"config file {path}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not a properties file (not UTF-8 text at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: {exc.strerror or exc}") from None
    if "\0" in text:
        raise ConfigError(f"config file {path}: not a properties file (binary data)")
    return parse_properties(text)


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX) and not name.startswith(_ENV_IGNORED):
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
        self.values: dict[str, str] = {str(k): str(v) for k, v in (values or {}).items()}
        #: the Kafka release whose configs the emulated profile follows, its definitions and defaults
        self.release = config_release((self.values.get("kafkalite.emulate.kafka") or "").strip() or None)
        self.defs = broker_defs(self.release)
        self.defaults = defaults_for(self.release)
        # validate eagerly so a bad config fails at startup, not on the first request
        errors = self.problems()
        if errors:
            raise ConfigError("\n".join(errors))

    # -- validation ---------------------------------------------------------------------------------
    def problems(self) -> list[str]:
        """One line per invalid setting: every key kafkalite reads is checked against its definition
        (``kafkalite.config.defs``), then the rules that involve more than one key."""
        errors: list[str] = []
        for key, raw in self.values.items():
            d = self.defs.get(key)
            if d is None or (raw.strip() == "" and d.type not in ("string", "list")):
                continue            # unknown keys are warnings; an empty number means "unset"
            try:
                d.parse(raw)
            except InvalidConfig as exc:
                errors.append(str(exc))
        if errors:
            return errors
        try:
            listeners = self.listeners()
            self.advertised_listeners()
            protocols = parse_protocol_map(self.get_str("listener.security.protocol.map"))
        except ConfigError as exc:
            return [str(exc)]
        for lst in listeners:
            errors += check_listener(self, lst, protocols)
        inter = self.get_str("inter.broker.listener.name").strip().upper()
        if inter and inter not in {lst.name for lst in listeners}:
            errors.append(f"inter.broker.listener.name must be a listener name defined in listeners "
                          f"(got {inter})")
        retention = self.get_str("log.retention.ms").strip()
        if retention and int(retention) == 0:
            errors.append("Invalid value 0 for configuration log.retention.ms: must be unlimited (-1) or at least 1")
        for a, op, b in _GROUP_RULES:
            x, y = self.get_int(a), self.get_int(b)
            if not (x >= y if op == ">=" else x <= y if op == "<=" else x < y):
                errors.append(f"{a} must be {_WORDS[op]} {b}")
        return errors

    def startup_warnings(self) -> list[str]:
        """One line each for keys nobody knows and for Kafka settings kafkalite accepts but does not act on."""
        out = []
        own = [k for k in self.values if k not in self.defs]
        own = [k for k in own if not is_listener_setting(k)]
        kafka: list[str] = []
        if own:
            # only for settings kafkalite does not define: the release's table (and 3.9's) tells Kafka's own
            # settings from unknown names
            from kafkalite.config.kafka39 import KAFKA_39_BROKER_CONFIGS  # big tables: loaded when needed
            from kafkalite.config.kafka_releases import broker_table  # big tables: loaded when needed

            known = broker_table(self.release)
            kafka = sorted(k for k in own if k in known or k in KAFKA_39_BROKER_CONFIGS
                           or k.startswith("listener.name."))
        unknown = sorted(k for k in own if k not in kafka)
        if unknown:
            out.append(f"unknown config keys, ignored: {', '.join(unknown)}")
        if kafka:
            out.append(f"Kafka settings kafkalite does not implement, ignored: {', '.join(kafka)}")
        unmapped = unmapped_listeners(self)
        if unmapped:
            out.append(f"listeners {', '.join(unmapped)} are not in listener.security.protocol.map: served as "
                       "PLAINTEXT (Kafka would refuse to start)")
        return out

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
            values.update(read_config_file(config_file))
        values.update(env_overrides(os.environ if environ is None else environ))
        values.update(overrides or {})
        return cls(values)

    def with_overrides(self, overrides: Mapping[str, str]) -> BrokerConfig:
        return BrokerConfig({**self.values, **overrides})

    # -- accessors --------------------------------------------------------------------------------
    def get(self, key: str, default: str | None = None) -> str | None:
        if key in self.values:
            return self.values[key]
        if key in self.defaults:
            return self.defaults[key]
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

    def __repr__(self) -> str:   # passwords, keys and JAAS configs are never shown
        return f"BrokerConfig({ {k: '[hidden]' if is_sensitive(k) else v for k, v in self.values.items()}!r})"
