"""The registry itself: subjects, their versions, schema ids, configs and modes, as Confluent Schema Registry
keeps them, rebuilt from and written to the ``_schemas`` records (:mod:`kafkalite.registry.records`).

Every change is a list of records handed to ``write`` (the service appends them to ``_schemas``; a failure raises
and nothing changes) and then applied with :meth:`Registry.apply`, the same function that replays the topic on
start: memory follows the log exactly, and a registry started on the log reads back what was acknowledged.

Ids are allocated as Confluent's ``IncrementalIdGenerator`` does: one counter per context (``:.ctx:subject``;
the default context is ``.``), the highest id seen plus one, skipping ids in use. A schema already registered in
the context (same type, canonical text, references, metadata and rule set) keeps its id under a new subject.
Versions count from 1 past the highest version the subject ever had, soft-deleted ones included. A soft delete
rewrites the version with ``deleted: true`` (a subject: one DELETE_SUBJECT record); a permanent delete writes
tombstones. Errors are :class:`RegistryError` with Confluent's HTTP status and ``error_code``.

Pure: no I/O, no trio.
"""
from __future__ import annotations

import functools
import json
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from kafkalite.registry import compat
from kafkalite.registry import records as R

DEFAULT_CONTEXT = "."
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1
_PARSE_CACHE = 4096

Write = Callable[[list[tuple[bytes, bytes | None]]], None]


class RegistryError(Exception):
    """An answer other than 200, as Confluent gives it: HTTP ``status``, ``error_code`` and ``message``."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: Any) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(sid: Any = None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if sid is None else f"Schema {sid} not found")


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema {detail}")


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def context_of(subject: str | None) -> str:
    """``:.ctx:name`` -> ``.ctx``; anything else is in the default context ``.``."""
    if subject and subject.startswith(":.") and subject.count(":") >= 2:
        return subject[1:subject.index(":", 1)]
    return DEFAULT_CONTEXT


def parse_version(text: str, *, allow_latest: bool = True) -> int:
    """A version path segment: 1..2^31-1, or ``latest``/-1 (returned as -1); anything else is 42202."""
    if allow_latest and text in ("latest", "-1"):
        return -1
    try:
        v = int(text)
    except ValueError:
        v = 0
    if not 1 <= v <= MAX_VERSION or not text.lstrip("+").isdigit():
        raise RegistryError(422, 42202, f"The specified version '{text}' is not a valid version id. Allowed values "
                                        "are between [1, 2^31-1] and the string \"latest\"")
    return v


def schema_json(v: R.SchemaValue, *, subject: bool = True) -> dict[str, Any]:
    """A version as the REST API shows it (``schemaType`` left out for Avro, as Confluent's responses do)."""
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id} if subject else {}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = v.references
    if v.metadata:
        out["metadata"] = v.metadata
    if v.rule_set:
        out["ruleSet"] = v.rule_set
    out["schema"] = v.schema
    return out


class Registry:
    def __init__(self, write: Write | None = None) -> None:
        self._write = write or (lambda records: None)
        self.versions: dict[str, dict[int, R.SchemaValue]] = {}       # subject -> version -> value (+ soft-deleted)
        self.by_id: dict[tuple[str, int], dict[tuple[str, int], R.SchemaValue]] = {}   # (ctx, id) -> its versions
        self.by_identity: dict[tuple[str, str], int] = {}               # (ctx, identity) -> id
        self.max_id: dict[str, int] = {}
        self.configs: dict[str | None, dict[str, Any]] = {}
        self.modes: dict[str | None, str] = {}
        self.records = 0   # applied, for the start-up log line
        self.skipped = 0
        self._parsed: OrderedDict[tuple[str, str, str], compat.Parsed] = OrderedDict()

    # -- applying records (replay, and after each write) ---------------------------------------------------
    def apply(self, key_bytes: bytes, value_bytes: bytes | None) -> None:
        """One ``_schemas`` record, in log order. An unreadable record is counted and skipped (a registry of a
        later release may write key types this one does not know)."""
        try:
            key = R.decode_key(key_bytes)
            self._apply(key, value_bytes)
            self.records += 1
        except (R.RecordError, UnicodeDecodeError):
            self.skipped += 1

    def _apply(self, key: R.Key, value: bytes | None) -> None:
        kt = key.keytype
        if kt == R.SCHEMA:
            assert key.subject is not None and key.version is not None
            if value is None:
                self._drop(key.subject, key.version)
            else:
                self._put(R.decode_schema_value(value))
        elif kt == R.CONFIG:
            if value is None:
                self.configs.pop(key.subject, None)
            else:
                self.configs[key.subject] = R.decode_config_value(value)
        elif kt == R.MODE:
            if value is None:
                self.modes.pop(key.subject, None)
            else:
                self.modes[key.subject] = R.decode_mode_value(value)
        elif kt == R.DELETE_SUBJECT and value is not None:
            subject, upto = R.decode_delete_subject_value(value)
            for version, v in self.versions.get(subject, {}).items():
                if version <= upto:
                    v.deleted = True
        elif kt == R.CLEAR_SUBJECT and value is not None:
            subject = json.loads(value).get("subject")
            for version in list(self.versions.get(subject, {})):
                self._drop(subject, version)

    def _put(self, v: R.SchemaValue) -> None:
        old = self.versions.get(v.subject, {}).get(v.version)
        if old is not None:
            self._unindex(old)
        self.versions.setdefault(v.subject, {})[v.version] = v
        ctx = context_of(v.subject)
        self.by_id.setdefault((ctx, v.id), {})[(v.subject, v.version)] = v
        self.by_identity.setdefault((ctx, _identity(v)), v.id)
        if v.id > self.max_id.get(ctx, 0):
            self.max_id[ctx] = v.id

    def _drop(self, subject: str, version: int) -> None:
        per = self.versions.get(subject)
        v = per.pop(version, None) if per is not None else None
        if v is not None:
            self._unindex(v)
        if per is not None and not per:
            del self.versions[subject]

    def _unindex(self, v: R.SchemaValue) -> None:
        ctx = context_of(v.subject)
        users = self.by_id.get((ctx, v.id))
        if users is not None:
            users.pop((v.subject, v.version), None)
            if not users:
                del self.by_id[(ctx, v.id)]
                ident = (ctx, _identity(v))
                if self.by_identity.get(ident) == v.id:
                    del self.by_identity[ident]

    def _commit(self, records: list[tuple[R.Key, bytes | None]]) -> None:
        """Write, then apply: a failed write raises (50001) and leaves memory as it was."""
        encoded = [(R.encode_key(k), v) for k, v in records]
        try:
            self._write(encoded)
        except RegistryError:
            raise
        except Exception as exc:
            raise RegistryError(500, 50001, f"Error while writing to the backend Kafka store: {exc}") from exc
        for k, v in records:
            self._apply(k, v)
            self.records += 1

    # -- lookups ------------------------------------------------------------------------------------------
    def live(self, subject: str) -> list[R.SchemaValue]:
        return [v for _, v in sorted(self.versions.get(subject, {}).items()) if not v.deleted]

    def all_versions(self, subject: str) -> list[R.SchemaValue]:
        return [v for _, v in sorted(self.versions.get(subject, {}).items())]

    def subjects(self, prefix: str = "", deleted: bool = False) -> list[str]:
        out = []
        for s, per in self.versions.items():
            if prefix and prefix != ":*:" and not s.startswith(prefix):
                continue
            if deleted or any(not v.deleted for v in per.values()):
                out.append(s)
        return sorted(out)

    def version(self, subject: str, text: str, deleted: bool = False) -> R.SchemaValue:
        """GET /subjects/{s}/versions/{v}: 40401 for an unknown (or wholly soft-deleted) subject, 40402 for a
        version that is not there (or soft-deleted, unless ``deleted``), 42202 for a bad version."""
        v = parse_version(text)
        per = self.versions.get(subject)
        if not per or (not deleted and not any(not x.deleted for x in per.values())):
            raise subject_not_found(subject)
        if v == -1:
            candidates = self.all_versions(subject) if deleted else self.live(subject)
            if not candidates:
                raise version_not_found(text)
            return candidates[-1]
        found = per.get(v)
        if found is None or (found.deleted and not deleted):
            raise version_not_found(v)
        return found

    def by_schema_id(self, sid: int, subject: str | None = None) -> R.SchemaValue:
        users = self.by_id.get((context_of(subject), sid))
        if not users:
            raise schema_not_found(sid)
        live = [v for v in users.values() if not v.deleted]
        return min(live or users.values(), key=lambda v: (v.subject, v.version))

    def id_versions(self, sid: int, subject: str | None = None, deleted: bool = False) -> list[R.SchemaValue]:
        users = self.by_id.get((context_of(subject), sid))
        if not users:
            raise schema_not_found(sid)
        return sorted((v for v in users.values() if deleted or not v.deleted), key=lambda v: (v.subject, v.version))

    def referenced_by(self, subject: str, version: int, deleted: bool = False) -> list[R.SchemaValue]:
        out = []
        for per in self.versions.values():
            for v in per.values():
                if (deleted or not v.deleted) and any(r.get("subject") == subject and r.get("version") == version
                                                      for r in v.references):
                    out.append(v)
        return out

    # -- config and mode ----------------------------------------------------------------------------------
    def config_in_scope(self, subject: str | None) -> dict[str, Any]:
        merged: dict[str, Any] = {"compatibilityLevel": "BACKWARD"}
        merged.update(self.configs.get(None, {}))
        if subject is not None:
            merged.update(self.configs.get(subject, {}))
        return merged

    def mode_in_scope(self, subject: str | None) -> str:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, "READWRITE")

    def get_config(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        if subject is None:
            return self.config_in_scope(None)
        if subject in self.configs:
            return {**({} if not default_to_global else self.configs.get(None, {})), **self.configs[subject]}
        if default_to_global:
            return self.config_in_scope(None)
        raise RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")

    def set_config(self, subject: str | None, body: dict[str, Any]) -> dict[str, Any]:
        level = body.get("compatibility", body.get("compatibilityLevel"))
        if level is not None:
            if not isinstance(level, str) or level.upper() not in compat.LEVELS:
                raise RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, "
                                                "forward, full, backward_transitive, forward_transitive, and "
                                                "full_transitive")
            level = level.upper()
        self._check_writable(subject)
        new = dict(self.configs.get(subject, {}))
        for name in R.CONFIG_FIELDS:
            if name in body and name != "compatibilityLevel":
                new[name] = body[name]
        if level is not None:
            new["compatibilityLevel"] = level
        self._commit([(R.config_key(subject), R.encode_config_value(subject, new))])
        out = {k: v for k, v in body.items() if k != "compatibilityLevel" and v is not None}
        if level is not None:
            out["compatibility"] = level
        return out

    def delete_config(self, subject: str | None) -> dict[str, Any]:
        if subject is not None and subject not in self.versions and subject not in self.configs:
            raise subject_not_found(subject)
        old = self.get_config(subject, default_to_global=subject is None)
        self._check_writable(subject)
        if (subject in self.configs) or (subject is None and None in self.configs):
            self._commit([(R.config_key(subject), None)])
        return old

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        if subject is None or default_to_global:
            return {"mode": self.mode_in_scope(subject)}
        if subject in self.modes:
            return {"mode": self.modes[subject]}
        raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")

    def set_mode(self, subject: str | None, mode: Any, force: bool = False) -> dict[str, Any]:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, "
                                            "READONLY_OVERRIDE, and IMPORT.")
        mode = mode.upper()
        if mode == "IMPORT" and not force:
            has = self.subjects() if subject is None else self.live(subject)
            if has:
                raise not_permitted("Cannot import since found existing subjects")
        self._commit([(R.mode_key(subject), R.encode_mode_value(subject, mode))])
        return {"mode": mode}

    def delete_mode(self, subject: str) -> dict[str, Any]:
        if subject not in self.modes:
            if subject not in self.versions:
                raise subject_not_found(subject)
            raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
        old = self.modes[subject]
        self._commit([(R.mode_key(subject), None)])
        return {"mode": old}

    def _check_writable(self, subject: str | None) -> None:
        if self.mode_in_scope(subject) == "READONLY":
            raise not_permitted(f"Subject {subject} in context {context_of(subject)} is in read-only mode")

    # -- schemas ------------------------------------------------------------------------------------------
    def _request(self, subject: str, body: dict[str, Any], normalize: bool) -> tuple[R.SchemaValue, compat.Parsed]:
        """The schema of a register/lookup/compatibility body, parsed and canonical (422 when it is not)."""
        text = body.get("schema")
        stype = body.get("schemaType") or "AVRO"
        refs = body.get("references") or []
        if not isinstance(text, str) or not text.strip():
            raise RegistryError(422, 42201, "Empty schema")
        if not isinstance(stype, str) or stype.upper() not in compat.TYPES:
            raise RegistryError(422, 42201, f"Invalid schema type {stype}")
        stype = stype.upper()
        if not isinstance(refs, list) or not all(isinstance(r, dict) for r in refs):
            raise RegistryError(422, 42201, "Invalid schema references")
        references = [{"name": r.get("name"), "subject": r.get("subject"), "version": r.get("version")}
                      for r in refs]
        parsed = self._parse(stype, text, references)
        normalize = normalize or bool(self.config_in_scope(subject).get("normalize"))
        md = body.get("metadata") if isinstance(body.get("metadata"), dict) else None
        rs = body.get("ruleSet") if isinstance(body.get("ruleSet"), dict) else None
        stored = parsed.normalized if normalize else parsed.canonical
        return R.SchemaValue(subject, 0, -1, stored, stype, references, md, rs), parsed

    def _parse(self, stype: str, text: str, references: list[dict[str, Any]]) -> compat.Parsed:
        key = (stype, text, json.dumps(references, sort_keys=True))
        hit = self._parsed.get(key)
        if hit is not None:
            self._parsed.move_to_end(key)
            return hit
        resolved = self._resolve(references, 0)
        try:
            parsed = compat.parse(stype, text, resolved)
        except compat.InvalidSchema as exc:
            raise invalid_schema(f"{text[:1000]}, details: {exc}") from None
        self._parsed[key] = parsed
        if len(self._parsed) > _PARSE_CACHE:
            self._parsed.popitem(last=False)
        return parsed

    def _resolve(self, references: list[dict[str, Any]], depth: int) -> list[compat.Resolved]:
        if depth > 32:
            raise invalid_schema("references nested too deeply")
        out: list[compat.Resolved] = []
        for ref in references:
            name, subject, version = ref.get("name"), ref.get("subject"), ref.get("version")
            if not isinstance(name, str) or not isinstance(subject, str) or not isinstance(version, int):
                raise RegistryError(422, 42201, "Invalid schema reference: name, subject and version are required")
            live = self.live(subject)
            target = self.versions.get(subject, {}).get(version) if version != -1 else (live[-1] if live else None)
            if target is None:
                raise invalid_schema(f"references a missing schema: {subject} version {version}")
            out.append((name, target.schema, self._resolve(target.references, depth + 1)))
        return out

    def parsed(self, v: R.SchemaValue) -> compat.Parsed:
        return self._parse(v.schema_type, v.schema, v.references)

    def formatted(self, v: R.SchemaValue, fmt: str | None) -> R.SchemaValue:
        """``v`` with its schema in ``?format=fmt`` (``serialized``: a Protobuf schema's descriptor, base64);
        other formats, and other types, as stored."""
        if not fmt or v.schema_type != "PROTOBUF":
            return v
        text = compat.formatted(self.parsed(v), fmt)
        if text is None:
            return v
        return R.SchemaValue(v.subject, v.version, v.id, text, v.schema_type, v.references, v.metadata,
                             v.rule_set, v.deleted, v.md5)

    def register(self, subject: str, body: dict[str, Any], normalize: bool = False) -> dict[str, Any]:
        """POST /subjects/{s}/versions: the schema's id (an existing version's, or a new version's)."""
        _check_subject(subject)
        mode = self.mode_in_scope(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise not_permitted(f"Subject {subject} in context {context_of(subject)} is in read-only mode")
        want_id = body.get("id")
        want_version = body.get("version")
        if want_id is not None and (not isinstance(want_id, int) or want_id < 0):
            raise RegistryError(422, 42201, f"Invalid id {want_id}")
        if want_id is not None and want_id >= 0 and mode != "IMPORT":
            raise not_permitted(f"Subject {subject} is not in import mode")
        if mode == "IMPORT" and want_id is None:
            raise RegistryError(422, 42201, f"Subject {subject} is in import mode: a schema id is required")
        new, parsed = self._request(subject, body, normalize)
        ctx = context_of(subject)
        ident = _identity(new)
        existing_id = self.by_identity.get((ctx, ident))
        if want_id is not None and existing_id is not None and existing_id != want_id:
            existing_id = None
        versions = self.all_versions(subject)
        live = [v for v in versions if not v.deleted]
        if want_version in (None, 0, -1):
            for v in reversed(live):
                if _identity(v) == ident and (want_id is None or v.id == want_id):
                    return {"id": v.id}
        if mode != "IMPORT":
            level = str(self.config_in_scope(subject).get("compatibilityLevel", "BACKWARD"))
            msgs = compat.check(level, parsed, self._loaders(live))
            if msgs:
                raise RegistryError(409, 409, "Schema being registered is incompatible with an earlier schema for "
                                              f"subject \"{subject}\", details: [{', '.join(msgs)}]")
        next_version = max([v.version for v in versions], default=0) + 1
        if isinstance(want_version, int) and want_version > 0:
            if mode != "IMPORT" and want_version != next_version:
                raise RegistryError(422, 42201, "Version is not one more than previous version")
            if want_version in self.versions.get(subject, {}):
                raise not_permitted(f"Overwrite new schema with version {want_version} is not permitted.")
            new.version = want_version
        else:
            new.version = next_version
        if want_id is not None:
            users = self.by_id.get((ctx, want_id))
            if users and _identity(next(iter(users.values()))) != ident:
                raise not_permitted(f"Overwrite new schema with id {want_id} is not permitted.")
            new.id = want_id
        elif existing_id is not None:
            new.id = existing_id
        else:
            nid = self.max_id.get(ctx, 0) + 1
            while (ctx, nid) in self.by_id:
                nid += 1
            new.id = nid
        batch: list[tuple[R.Key, bytes | None]] = []
        for old in versions:   # a soft-deleted older version with this id is tombstoned, as Confluent does
            if old.deleted and old.id == new.id and old.version < new.version \
                    and not self.referenced_by(subject, old.version, deleted=True):
                batch.append((R.schema_key(subject, old.version), None))
        batch.append((R.schema_key(subject, new.version), R.encode_schema_value(new)))
        self._commit(batch)
        return {"id": new.id}

    def lookup(self, subject: str, body: dict[str, Any], normalize: bool = False,
               deleted: bool = False) -> R.SchemaValue:
        """POST /subjects/{s}: the version of ``subject`` holding this schema (40401, 40403 otherwise)."""
        per = self.versions.get(subject)
        if not per or (not deleted and not any(not v.deleted for v in per.values())):
            raise subject_not_found(subject)
        new, _ = self._request(subject, body, normalize)
        ident = _identity(new)
        for v in sorted(per.values(), key=lambda v: v.version):
            if (deleted or not v.deleted) and _identity(v) == ident:
                return v
        raise schema_not_found()

    def check_compatibility(self, subject: str, version: str | None, body: dict[str, Any],
                            normalize: bool = False) -> list[str]:
        """POST /compatibility/subjects/{s}/versions[/{v}]: the reasons it is not compatible (empty: it is)."""
        _new, parsed = self._request(subject, body, normalize)
        live = self.live(subject)
        level = str(self.config_in_scope(subject).get("compatibilityLevel", "BACKWARD"))
        if version is None:
            targets = live
        else:
            v = parse_version(version)
            if not self.versions.get(subject):
                raise subject_not_found(subject)
            if v == -1:
                targets = live[-1:]
            else:
                one = self.versions[subject].get(v)
                if one is None or one.deleted:
                    raise version_not_found(v)
                targets = [one]
        return compat.check(level, parsed, self._loaders(targets))

    def _loaders(self, versions: list[R.SchemaValue]) -> list[tuple[int, str, Callable[[], compat.Parsed]]]:
        """(version, text, parse) of each, parsed only if the level needs it."""
        return [(v.version, v.schema, functools.partial(self.parsed, v)) for v in versions]

    def delete_version(self, subject: str, text: str, permanent: bool = False) -> int:
        """DELETE /subjects/{s}/versions/{v}[?permanent=true]: the version deleted."""
        self._check_writable(subject)
        v = parse_version(text)
        per = self.versions.get(subject)
        if not per:
            raise subject_not_found(subject)
        if v == -1:
            candidates = self.all_versions(subject) if permanent else self.live(subject)
            if not candidates:
                raise version_not_found(text)
            target = candidates[-1]
        else:
            found = per.get(v)
            if found is None:
                raise version_not_found(v)
            target = found
        if not permanent and target.deleted:
            raise RegistryError(404, 40406, f"Subject '{subject}' Version {target.version} was soft deleted. Set "
                                            "permanent=true to delete permanently")
        if permanent and not target.deleted:
            raise RegistryError(404, 40407, f"Subject '{subject}' Version {target.version} was not deleted first "
                                            "before being permanently deleted")
        if self.referenced_by(subject, target.version, deleted=permanent):
            raise RegistryError(422, 42206, f"One or more references exist to the schema {{magic=1,keytype=SCHEMA,"
                                            f"subject={subject},version={target.version}}}.")
        if permanent:
            batch: list[tuple[R.Key, bytes | None]] = [(R.schema_key(subject, target.version), None)]
            if len(per) == 1:   # the subject's last version: its config and mode go too
                if subject in self.modes:
                    batch.append((R.mode_key(subject), None))
                if subject in self.configs:
                    batch.append((R.config_key(subject), None))
            self._commit(batch)
        else:
            soft = R.SchemaValue(target.subject, target.version, target.id, target.schema, target.schema_type,
                                 target.references, target.metadata, target.rule_set, True, target.md5)
            self._commit([(R.schema_key(subject, target.version), R.encode_schema_value(soft))])
        return target.version

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """DELETE /subjects/{s}[?permanent=true]: the versions deleted."""
        per = self.versions.get(subject)
        if not per:
            raise subject_not_found(subject)
        live = self.live(subject)
        if not permanent and not live:
            raise RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                                            "permanently")
        self._check_writable(subject)
        if permanent and live:
            raise RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently "
                                            "deleted")
        targets = self.all_versions(subject) if permanent else live
        for t in targets:
            others = [v for v in self.referenced_by(subject, t.version, deleted=permanent) if v.subject != subject]
            if others:
                raise RegistryError(422, 42206, f"One or more references exist to the schema {{magic=1,keytype=SCHEMA,"
                                                f"subject={subject},version={t.version}}}.")
        versions = [t.version for t in targets]
        if permanent:
            batch: list[tuple[R.Key, bytes | None]] = [(R.schema_key(subject, v), None) for v in reversed(versions)]
            if subject in self.modes:
                batch.append((R.mode_key(subject), None))
            if subject in self.configs:
                batch.append((R.config_key(subject), None))
            self._commit(batch)
        else:
            self._commit([(R.Key(R.DELETE_SUBJECT, subject),
                           R.encode_delete_subject_value(subject, max(versions)))])
        return versions


def _identity(v: R.SchemaValue) -> str:
    """What makes two registrations the same schema (Confluent hashes the same parts into its MD5)."""
    return json.dumps([v.schema_type, v.schema, v.references, v.metadata, v.rule_set], sort_keys=True,
                      separators=(",", ":"))


def _check_subject(subject: str) -> None:
    if not subject or any(ord(c) < 32 for c in subject) or (subject.strip() != subject and not subject.strip()):
        raise RegistryError(422, 42208, f"The specified subject '{subject}' is not a valid.")
