"""Group configs (KIP-848 / KIP-932): the GROUP config resource (ConfigResource type 32) and its store.

What Kafka 4.3 does, and we do with it (``GroupConfig``, ``ConfigHelper``, ``ControllerConfigurationValidator``):
- A group's configs are per-group overrides of broker settings; a group need not exist to have them (they may
  be set before its first member joins) and DescribeConfigs on any group id answers every group config.
- DescribeConfigs: an override is reported with source DYNAMIC_GROUP_CONFIG (8), anything else with its broker
  default (``group.consumer.session.timeout.ms`` etc.) and source DEFAULT_CONFIG (5); never read-only, never
  sensitive; type INT or STRING. An empty group name is INVALID_REQUEST.
- Alter (Incremental or legacy): names outside the set answer INVALID_CONFIG "Unknown group config name: X";
  values are parsed as Kafka's ConfigDef does ("Invalid value V for configuration K: ..."); integers must lie
  in the broker's bounds, ``group.consumer.min/max.*`` and ``group.share.min/max.*`` ("K must be in the range
  MIN to MAX inclusive."); a session timeout must exceed its heartbeat interval, the broker default standing in
  for whichever of the two the group does not set ("K must be greater than H").
- Readers (the KIP-848 coordinator, the share coordinator) get the overrides through ``state.group_configs(id)``,
  clamped into the broker's current bounds as Kafka 4.3's ``GroupConfig.evaluate`` does (bounds may have
  changed since the value was set).
- Persisted in ``kafkalite-group-configs.json`` in the log dir, written whole then renamed (like the topic
  configs), once per request however many groups the request names.

The streams group ones (KIP-1071) are ``streams.session.timeout.ms``, ``streams.heartbeat.interval.ms`` and
``streams.num.standby.replicas`` (bounded by ``group.streams.max.standby.replicas``).
The share group dead-letter queue ones (Kafka 4.4, KIP-1191): ``errors.deadletterqueue.topic.name`` (STRING,
default blank: no DLQ; a name starting with ``__`` is INVALID_CONFIG "errors.deadletterqueue.topic.name: DLQ
topic name must not start with '__'", checked after the others, as ``GroupConfig.validate``; the broker's
``errors.deadletterqueue.topic.name.prefix`` is checked only when a record goes to the DLQ) and
``errors.deadletterqueue.copy.record.enable`` (BOOLEAN, default false). Neither has a broker synonym.
Not here (yet): Kafka 4.3's other streams.* names, *.assignment.interval.ms, *.assignor.offload.enable and
share.renew.acknowledge.enable (answered as unknown).
``share.auto.offset.reset`` takes Kafka 4.3's values exactly (``kafkalite.config.share_reset``).
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.config.entries import ConfigEntry
from kafkalite.config.share_reset import validation_error
from kafkalite.metadata import atomic_write
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

GROUP_RESOURCE = 32
DYNAMIC_GROUP_CONFIG = 8
DEFAULT_CONFIG = 5
_TYPE_BOOLEAN, _TYPE_STRING, _TYPE_INT = 1, 2, 3
DLQ_TOPIC, DLQ_COPY = "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable"
FILE = "kafkalite-group-configs.json"


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    broker_key: str | None      # the broker setting giving the default (Kafka's synonym)
    default: str                # Kafka's default when the broker has no such setting
    at_least: int | None = None  # Kafka's ConfigDef range (ints)
    bounds: tuple[str, int, str, int] | None = None   # (min key, its default, max key, its default)
    choices: tuple[str, ...] = ()
    doc: str = ""
    kind: str = ""              # "string" / "boolean"; else an INT, or a STRING of ``choices``

    @property
    def is_int(self) -> bool:
        return not self.choices and not self.kind


_C, _S, _T = "group.consumer.", "group.share.", "group.streams."
DEFS: dict[str, GroupConfigDef] = {d.name: d for d in (
    GroupConfigDef("consumer.session.timeout.ms", _C + "session.timeout.ms", "45000", 1,
                   (_C + "min.session.timeout.ms", 45000, _C + "max.session.timeout.ms", 60000),
                   doc="The timeout to detect client failures when using the consumer group protocol."),
    GroupConfigDef("consumer.heartbeat.interval.ms", _C + "heartbeat.interval.ms", "5000", 1,
                   (_C + "min.heartbeat.interval.ms", 5000, _C + "max.heartbeat.interval.ms", 15000),
                   doc="The heartbeat interval given to the members of a consumer group."),
    GroupConfigDef("share.session.timeout.ms", _S + "session.timeout.ms", "45000", 1,
                   (_S + "min.session.timeout.ms", 45000, _S + "max.session.timeout.ms", 60000),
                   doc="The timeout to detect client failures when using the share group protocol."),
    GroupConfigDef("share.heartbeat.interval.ms", _S + "heartbeat.interval.ms", "5000", 1,
                   (_S + "min.heartbeat.interval.ms", 5000, _S + "max.heartbeat.interval.ms", 15000),
                   doc="The heartbeat interval given to the members of a share group."),
    GroupConfigDef("share.record.lock.duration.ms", _S + "record.lock.duration.ms", "30000", 1000,
                   (_S + "min.record.lock.duration.ms", 15000, _S + "max.record.lock.duration.ms", 60000),
                   doc="The record acquisition lock duration in milliseconds for share groups."),
    GroupConfigDef("share.delivery.count.limit", _S + "delivery.count.limit", "5", 2,
                   (_S + "min.delivery.count.limit", 2, _S + "max.delivery.count.limit", 10),
                   doc="The maximum number of delivery attempts for a record delivered to a share group."),
    GroupConfigDef("share.partition.max.record.locks", _S + "partition.max.record.locks", "2000", 100,
                   (_S + "min.partition.max.record.locks", 100, _S + "max.partition.max.record.locks", 10000),
                   doc="Share-group record lock limit per share-partition."),
    GroupConfigDef("streams.session.timeout.ms", _T + "session.timeout.ms", "45000", 1,
                   (_T + "min.session.timeout.ms", 45000, _T + "max.session.timeout.ms", 60000),
                   doc="The timeout to detect client failures when using the streams group protocol."),
    GroupConfigDef("streams.heartbeat.interval.ms", _T + "heartbeat.interval.ms", "5000", 1,
                   (_T + "min.heartbeat.interval.ms", 5000, _T + "max.heartbeat.interval.ms", 15000),
                   doc="The heartbeat interval given to the members of a streams group."),
    GroupConfigDef("streams.num.standby.replicas", _T + "num.standby.replicas", "0", 0,
                   ("kafkalite.streams.min.standby.replicas", 0, _T + "max.standby.replicas", 2),
                   doc="The number of standby replicas for each task."),
    GroupConfigDef("share.auto.offset.reset", "kafkalite.share.auto.offset.reset", "latest",
                   choices=("earliest", "latest"),
                   doc="The strategy to initialize the share-partition start offset."),
    GroupConfigDef("share.isolation.level", "kafkalite.share.isolation.level", "read_uncommitted",
                   choices=("read_committed", "read_uncommitted"),
                   doc="Controls how to read records written transactionally."),
    GroupConfigDef(DLQ_TOPIC, None, "", kind="string",
                   doc="The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. "
                       "If blank (the default), the group does not have a DLQ topic."),
    GroupConfigDef(DLQ_COPY, None, "false", kind="boolean",
                   doc="When writing onto the dead-letter queue topic, whether to copy the original record onto the "
                       "DLQ topic, or just write a record containing the context information headers."),
)}

#: (session timeout, heartbeat interval) pairs Kafka checks against each other
_PAIRS = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
          ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
          ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))


class InvalidGroupConfig(ValueError):
    """INVALID_CONFIG, with Kafka's message."""


def _broker_int(conf: Any, key: str, default: int) -> int:
    try:
        val = conf.get(key) if conf is not None else None
        return default if val in (None, "") else int(val)
    except (TypeError, ValueError):
        return default


def default_value(conf: Any, d: GroupConfigDef) -> str:
    """The value a group without an override has: the broker's setting, else Kafka's default."""
    val = conf.get(d.broker_key) if conf is not None and d.broker_key else None
    return d.default if val in (None, "") else str(val)


def _bounds(conf: Any, d: GroupConfigDef) -> tuple[int, int]:
    assert d.bounds is not None
    lo_key, lo, hi_key, hi = d.bounds
    return _broker_int(conf, lo_key, lo), _broker_int(conf, hi_key, hi)


def _java_trim(raw: str) -> str:
    return raw.strip("".join(map(chr, range(33))))   # java.lang.String.trim, as ConfigDef parses a STRING


def _parse(d: GroupConfigDef, raw: str) -> str:
    value = raw.strip()
    if d.kind == "string":
        return _java_trim(raw)
    if d.kind == "boolean":   # ConfigDef.parseType BOOLEAN: true/false in any case, trimmed
        low = _java_trim(raw).lower()
        if low not in ("true", "false"):
            raise InvalidGroupConfig(f"Invalid value {raw} for configuration {d.name}: Expected value to be either "
                                     "true or false")
        return low
    if d.is_int:
        try:
            n = int(value)
        except ValueError:
            raise InvalidGroupConfig(
                f"Invalid value {raw} for configuration {d.name}: Not a number of type INT") from None
        if not -2**31 <= n < 2**31:
            raise InvalidGroupConfig(f"Invalid value {raw} for configuration {d.name}: Not a number of type INT")
        if d.at_least is not None and n < d.at_least:
            raise InvalidGroupConfig(f"Invalid value {n} for configuration {d.name}: Value must be at least "
                                     f"{d.at_least}")
        return str(n)
    if d.name == "share.auto.offset.reset":   # earliest, latest, by_duration:<ISO-8601> (KIP-1106), exactly
        value = raw.strip("".join(map(chr, range(33))))   # java.lang.String.trim, as ConfigDef parses a STRING
        if (message := validation_error(value)) is not None:
            raise InvalidGroupConfig(message)
        return value
    if value not in d.choices:   # Kafka's ValidString is case-sensitive
        raise InvalidGroupConfig(f"Invalid value {raw} for configuration {d.name}: String must be one of: "
                                 + ", ".join(d.choices))
    return value


def validate(conf: Any, overrides: Mapping[str, str]) -> dict[str, str]:
    """The normalised overrides, or InvalidGroupConfig with Kafka 4.3's message (``GroupConfig.validate``:
    names first, then each value's parse and range, then bounds, then session > heartbeat)."""
    for name in overrides:
        if name not in DEFS:
            raise InvalidGroupConfig(f"Unknown group config name: {name}")
    parsed = {name: _parse(DEFS[name], str(raw)) for name, raw in overrides.items()}
    for name, value in parsed.items():
        d = DEFS[name]
        if d.bounds is not None:
            lo, hi = _bounds(conf, d)
            if not lo <= int(value) <= hi:
                raise InvalidGroupConfig(f"{name} must be in the range {lo} to {hi} inclusive.")
    for session, heartbeat in _PAIRS:
        if session in parsed or heartbeat in parsed:
            s = int(parsed.get(session, default_value(conf, DEFS[session])))
            h = int(parsed.get(heartbeat, default_value(conf, DEFS[heartbeat])))
            if s <= h:
                raise InvalidGroupConfig(f"{session} must be greater than {heartbeat}")
    if parsed.get(DLQ_TOPIC, "").startswith("__"):
        raise InvalidGroupConfig(f"{DLQ_TOPIC}: DLQ topic name must not start with '__'")
    return parsed


def describe(conf: Any, overrides: Mapping[str, str]) -> list[tuple[GroupConfigDef, str, int]]:
    """(definition, value, source) of every group config, in name order (Kafka's ConfigDef order is by name)."""
    out = []
    for name in sorted(DEFS):
        d = DEFS[name]
        if name in overrides:
            out.append((d, overrides[name], DYNAMIC_GROUP_CONFIG))
        else:
            out.append((d, default_value(conf, d), DEFAULT_CONFIG))
    return out


def config_type(d: GroupConfigDef) -> int:
    return _TYPE_INT if d.is_int else _TYPE_BOOLEAN if d.kind == "boolean" else _TYPE_STRING


class GroupConfigStore:
    """Per-group overrides, persisted in the log dir. ``put`` changes memory; ``await flush()`` writes the file
    (once per request: a request may name a great many groups)."""

    def __init__(self, log_dir: str | Path) -> None:
        self.path = Path(log_dir) / FILE
        import trio

        self._groups: dict[str, dict[str, str]] = {}
        self._dirty = False
        self._generation = self._written = 0
        self._lock = trio.Lock()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            log.warning("ignoring unreadable %s", self.path)
            return
        if isinstance(data, dict):
            self._groups = {str(g): {str(k): str(v) for k, v in c.items() if str(k) in DEFS}
                            for g, c in data.items() if isinstance(c, dict) and c}

    def get(self, group_id: str) -> dict[str, str]:
        return self._groups.get(group_id, {})

    def all(self) -> dict[str, dict[str, str]]:
        """Every group's overrides (a copy)."""
        return {g: dict(c) for g, c in self._groups.items()}

    def put(self, group_id: str, overrides: Mapping[str, str]) -> None:
        if overrides:
            self._groups[group_id] = dict(overrides)
        elif self._groups.pop(group_id, None) is None:
            return
        self._dirty = True

    async def flush(self) -> None:
        """Write the file if anything changed: serialised here, written and fsynced in a worker thread, one
        writer at a time and never an older state over a newer one; the caller answers once it is on disk."""
        import trio

        if not self._dirty:
            return
        self._dirty = False
        self._generation += 1
        gen, data = self._generation, json.dumps(self._groups, sort_keys=True, indent=1).encode()
        async with self._lock:
            if gen > self._written:
                await trio.to_thread.run_sync(atomic_write, self.path, data)
                self._written = gen

    def effective(self, conf: Any, group_id: str) -> Mapping[str, str]:
        """The group's overrides clamped into the broker's current bounds (Kafka 4.3's GroupConfig.evaluate)."""
        overrides = self._groups.get(group_id)
        if not overrides:
            return {}
        out = dict(overrides)
        for name, value in overrides.items():
            d = DEFS.get(name)
            if d is not None and d.bounds is not None:
                lo, hi = _bounds(conf, d)
                n = int(value)
                if not lo <= n <= hi:
                    out[name] = str(min(max(n, lo), hi))
        return out


# -- the handlers' side (DescribeConfigs, IncrementalAlterConfigs, AlterConfigs) ----------------------------------
def describe_group(state: BrokerState, group_id: str) -> tuple[int, str | None, list[Any] | None]:
    """(error code, message, entries as ``topic_configs.ConfigEntry``) for a DescribeConfigs GROUP resource."""
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "Group name must not be empty", None
    conf = state.configs.effective()
    entries = [ConfigEntry(d.name, value, source, config_type(d), documentation=d.doc or None)
               for d, value, source in describe(conf, state.group_config_store.get(group_id))]
    return ErrorCode.NONE, None, entries


def alter_group(state: BrokerState, group_id: str, overrides: Mapping[str, str] | None, validate_only: bool,
                apply: Any = None) -> tuple[int, str | None]:
    """Check and (unless ``validate_only``) store a group's new overrides: ``overrides`` replaces them all (legacy
    AlterConfigs), or ``apply(current) -> (code, message)`` edits a copy of them (IncrementalAlterConfigs).
    The caller flushes the store once the whole request is done."""
    if not group_id:
        return ErrorCode.INVALID_REQUEST, "Group name must not be empty"
    store: GroupConfigStore = state.group_config_store
    if overrides is None:
        updated = dict(store.get(group_id))
        code, msg = apply(updated)
        if code:
            return code, msg
    else:
        updated = dict(overrides)
    try:
        checked = validate(state.configs.effective(), updated)
    except InvalidGroupConfig as exc:
        return ErrorCode.INVALID_CONFIG, str(exc)
    if not validate_only:
        store.put(group_id, checked)
    return ErrorCode.NONE, None
