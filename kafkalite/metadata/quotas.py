"""Client quota configuration: what AlterClientQuotas sets and DescribeClientQuotas lists, persisted.

An entity is a set of (entity type, name) pairs with types ``user`` and ``client-id`` (a name of None is the
type's default, Kafka's ``<default>``); ``ip`` entities (connection_creation_rate) are not served. Keys and
their checks are Kafka's (QuotaConfigs): ``producer_byte_rate``, ``consumer_byte_rate`` and
``controller_mutation_rate`` are rates (the byte rates whole numbers), ``request_percentage`` a percentage
of one thread; every value must be > 0.

Resolution (Kafka's DefaultQuotaCallback, for each key on its own), most specific first:
user+client-id, user+default client-id, user, default user+client-id, default user+default client-id,
default user, client-id, default client-id. The winning entity also says who shares the measurement: a
quota on a user (or the default user) is measured per user, on a client id per client id, on both per pair.

Persistence: ``kafkalite-client-quotas.json`` in the data directory, rewritten (tmp + fsync + rename) before
a change is applied, so an acknowledged AlterClientQuotas survives a crash.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from kafkalite_storage.checkpoints import write_atomic

QUOTAS_FILE = "kafkalite-client-quotas.json"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER, CONSUMER, REQUEST, MUTATION = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
                                         "controller_mutation_rate")
KEYS = (PRODUCER, CONSUMER, REQUEST, MUTATION)
_WHOLE = frozenset({PRODUCER, CONSUMER})

Entity = tuple[tuple[str, "str | None"], ...]   # sorted (type, name) pairs


def entity_of(pairs: list[tuple[str, str | None]]) -> Entity:
    return tuple(sorted(pairs))


def invalid_entity(pairs: list[tuple[str, str | None]]) -> str | None:
    """Why an entity is refused, in Kafka's words (``ClientQuotaControlManager.validateEntity``)."""
    if not pairs:
        return "Invalid empty client quota entity"
    seen: set[str] = set()
    for t, name in pairs:
        if t in seen:
            return f"Invalid client quota entity, duplicate entity entry {t}"
        seen.add(t)
        if t == IP:
            return "IP quotas (connection_creation_rate) are not supported by kafkalite"
        if t not in (USER, CLIENT_ID):
            return f"Unhandled client quota entity type: {t}"
        if name is not None and not name:
            return f"Empty {t} not supported"
    return None


def invalid_value(key: str, value: float) -> str | None:
    """Why a quota value is refused, in Kafka's words (``ClientQuotaControlManager.validateQuotaKeyValue``)."""
    if key not in KEYS:
        return f"Invalid configuration key {key}"
    if value <= 0:
        return f"Quota {key} must be greater than 0"
    if not math.isfinite(value):
        return f"Invalid value {value} for configuration {key}: value must be finite"
    if key in _WHOLE and abs(value % 1.0) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


class QuotaStore:
    def __init__(self, data_dir: Path | str | None) -> None:
        self.path = Path(data_dir) / QUOTAS_FILE if data_dir is not None else None
        self.entries: dict[Entity, dict[str, float]] = {}
        #: called after every change (each broker's quota manager: whether any quota is set at all)
        self.listeners: list[Callable[[], None]] = []
        if self.path is not None:
            try:
                rows = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                rows = {"entries": []}
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"cannot read the client quota file {self.path}: {exc}") from exc
            for row in rows.get("entries", []):
                ent = entity_of([(str(t), None if n is None else str(n)) for t, n in row["entity"]])
                self.entries[ent] = {str(k): float(v) for k, v in row["values"].items()}

    def apply(self, changes: list[tuple[Entity, list[tuple[str, float, bool]]]]) -> None:
        """Set / remove values (validated by the caller) and persist; OSError leaves everything unchanged."""
        trial = {e: dict(v) for e, v in self.entries.items()}
        for ent, ops in changes:
            values = trial.setdefault(ent, {})
            for key, value, remove in ops:
                if remove:
                    values.pop(key, None)
                else:
                    values[key] = value
            if not values:
                del trial[ent]
        if self.path is not None:
            data = {"version": 1, "entries": [{"entity": [list(p) for p in e], "values": v}
                                              for e, v in trial.items()]}
            write_atomic(str(self.path), json.dumps(data, separators=(",", ":")).encode())
        self.entries = trial
        for fn in self.listeners:
            fn()

    def resolve(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """(bound, measurement tags) for ``key``, or None when no quota applies (Kafka's precedence)."""
        e = self.entries
        for ent, tags in (
            (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
            (((CLIENT_ID, None), (USER, user)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
            (((CLIENT_ID, None), (USER, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        ):
            values = e.get(ent)
            if values is not None and key in values:
                return values[key], tags
        return None
