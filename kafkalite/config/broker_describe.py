"""DescribeConfigs of the BROKER resource, as Kafka's ``ConfigHelper.createBrokerConfigEntry`` builds it.

* Which configs: for resource ``"<node id>"`` every broker config the profile's Kafka release defines
  (non-internal; Kafka 3.9's table is ``kafkalite.config.kafka39``, 4.3's and 4.4's were captured from the real
  brokers: ``kafkalite.config.kafka_releases``), every kafkalite setting (``config_defs.broker_defs``, e.g.
  ``kafkalite.*``; those Kafka lists only when set, :data:`UNLISTED`, likewise), every name set statically or
  dynamically; for resource ``""`` only the cluster-wide dynamic defaults.
* Value: the config's own value through Kafka's precedence (dynamic per-broker, dynamic cluster default,
  static ``server.properties`` / overrides, default), null where none; a password -- and a name with no
  definition, whose type is unknown -- is sensitive: value null, ``is_sensitive`` true. Booleans and lists
  read back as Kafka renders them (``true``, ``a,b``).
* Synonyms (``DynamicBrokerConfig.brokerConfigSynonyms``): ``log.roll.ms``/``.hours``,
  ``log.roll.jitter.ms``/``.hours``, ``log.retention.ms``/``.minutes``/``.hours``, ``log.flush.interval.ms``
  with ``log.flush.scheduler.interval.ms``, a ``listener.name.<l>.<config>`` with ``<config>``. Listed
  level by level (dynamic per-broker, dynamic default, static, default) and then cut before the config's
  own name (``dropWhile``), so ``log.retention.ms`` left unset has no synonyms and DEFAULT_CONFIG, while
  ``log.retention.hours`` shows ``log.retention.ms`` above it when that one is set. The source is the first
  synonym's, DEFAULT_CONFIG when there is none.
* Read-only: every config that Kafka release cannot change without a restart (its update mode ``read-only``);
  kafkalite's own settings are read-only unless kafkalite changes them dynamically.
* ConfigType (v3+) from the definition; Documentation (v3+, when asked) is kafkalite's doc line for the
  settings it reads and, for the Kafka settings it accepts without acting on them, a sentence saying so.

Defaults are the values kafkalite uses: Kafka's, except where ``config_defs`` gives kafkalite's own (noted
in its doc line, e.g. ``group.initial.rebalance.delay.ms`` 0). ``broker.id`` follows ``node.id`` when it
is not set (Kafka's ``populateSynonyms``).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kafkalite.config.defs import ConfigDef, broker_defs
from kafkalite.config.entries import ConfigEntry
from kafkalite.config.kafka39 import KafkaBrokerConfig
from kafkalite.config.kafka_releases import broker_table, dynamic_broker_configs
from kafkalite.config.listeners import is_sensitive

DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 2, 3, 4, 5
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7, "class": 8,
                "password": 9}
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
#: settings kafkalite reads that Kafka's DescribeConfigs lists only when set: Kafka's internal ones
#: (``defineInternal``) and the authorizer's own (not KafkaConfig's)
UNLISTED = frozenset({"share.coordinator.state.topic.prune.interval.ms",
                      "share.coordinator.cold.partition.snapshot.interval.ms",
                      "log.initial.task.delay.ms", "super.users", "allow.everyone.if.no.acl.found"})
_LISTENER = re.compile(r"^listener\.name\.[^.]*\.(.*)$")
_MECHANISM_CONFIGS = ("sasl.jaas.config", "sasl.login.class", "sasl.login.callback.handler.class",
                      "sasl.server.callback.handler.class", "connections.max.reauth.ms",
                      "sasl.server.max.receive.size")


def synonyms_of(name: str) -> tuple[str, ...]:
    """Kafka's ``brokerConfigSynonyms(name, matchListenerOverride = true)``."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            return group
    if name == "log.flush.interval.ms":
        return (name, "log.flush.scheduler.interval.ms")
    m = _LISTENER.match(name)
    if m:
        base = m.group(1)
        return (name, next((c for c in _MECHANISM_CONFIGS if base.endswith(c)), base))
    return (name,)


def config_type(name: str, release: str = "3.9") -> str | None:
    k = broker_table(release).get(name)
    if k is not None:
        return k.type
    d = broker_defs(release).get(name) or _listener_base_def(name, release)
    return d.type if d is not None else None


def _listener_base_def(name: str, release: str) -> KafkaBrokerConfig | None:
    m = _LISTENER.match(name)
    if m is None:
        return None
    return broker_table(release).get(synonyms_of(name)[1])


def default_of(name: str, release: str = "3.9") -> str | None:
    """The default kafkalite uses for a broker setting: its own definition's, else the Kafka release's."""
    d: ConfigDef | KafkaBrokerConfig | None = broker_defs(release).get(name)
    if d is None:
        d = broker_table(release).get(name)
    return d.default if d is not None else None


def _render(name: str, raw: str | None, release: str) -> str | None:
    if raw is None:
        return None
    t = config_type(name, release)
    if t == "boolean":
        return raw.strip().lower()
    if t == "list":
        return ",".join(x.strip() for x in raw.split(",") if x.strip())
    return raw


def documentation(name: str, release: str = "3.9") -> str | None:
    d = broker_defs(release).get(name)
    if d is not None:
        return d.doc
    k = broker_table(release).get(name)
    if k is not None:
        return (f"Kafka {release} broker setting ({k.type}); kafkalite accepts it and does not act on it (one "
                "node, no replication).")
    return None


def describe_broker_configs(node_id: int, static: Mapping[str, str], dynamic: Mapping[str, Mapping[str, str]],
                            kafkalite_dynamic: frozenset[str], *, per_broker: bool = True,
                            release: str = "3.9") -> list[Any]:
    """Entries (``kafkalite.config.entries.ConfigEntry``) for BROKER ``str(node_id)`` (or ``""``), as the
    Kafka release ``release`` ("3.9", "4.3", "4.4") lists them."""
    table, ours = broker_table(release), broker_defs(release)
    per_node, cluster = dynamic.get(str(node_id), {}), dynamic.get("", {})
    defaults = {n: v for n in (*table, *ours) if (v := default_of(n, release)) is not None}
    static = dict(static)
    if "broker.id" not in static and "node.id" in static:
        static["broker.id"] = static["node.id"]
    if "broker.id" not in static and "node.id" in defaults:
        defaults["broker.id"] = defaults["node.id"]
    levels = ((per_node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
              (static, STATIC_BROKER_CONFIG), (defaults, DEFAULT_CONFIG))
    if per_broker:
        names = sorted({*table, *(n for n in ours if n not in UNLISTED), *static, *per_node, *cluster})
    else:
        names = sorted(cluster)
    out = []
    for name in names:
        ctype = config_type(name, release)
        sensitive = ctype is None or ctype == "password" or is_sensitive(name)
        syn: list[tuple[str, str | None, int]] = []
        for values, source in levels:
            for n in synonyms_of(name):
                if n in values:
                    syn.append((n, None if sensitive else _render(n, values[n], release), source))
        while syn and syn[0][0] != name:        # Kafka's dropWhile: listener overrides, stronger units
            syn.pop(0)
        if not per_broker:
            syn = [s for s in syn if s[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        own = next((s for s in syn if s[0] == name), None)
        value = None if sensitive or own is None else own[1]
        if name in table:
            read_only = name not in dynamic_broker_configs(release)
        else:
            read_only = name not in kafkalite_dynamic
        out.append(ConfigEntry(name, value, syn[0][2] if syn else DEFAULT_CONFIG,
                               CONFIG_TYPES.get(ctype or "", 0), read_only=read_only, sensitive=sensitive,
                               synonyms=tuple(syn), documentation=documentation(name, release)))
    return out
