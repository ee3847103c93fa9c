"""The ``_schemas`` topic's records, as Confluent Schema Registry writes and reads them.

Every record's key and value are compact JSON (no spaces), UTF-8. The key names its type (``keytype``):

* ``SCHEMA``  ``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}`` -> a schema version:
  ``{"subject":S,"version":V,"id":N,"schemaType":T,"references":[...],"metadata":{...},"ruleSet":{...},
  "schema":"...","deleted":false}`` (empty references, absent metadata and rule set are left out). A null
  value (tombstone) is a permanent delete of that version. Key magic 0 (older registries) is read too.
* ``CONFIG``  ``{"keytype":"CONFIG","subject":S,"magic":0}`` (no ``subject``: the global config) ->
  ``{"subject":S,"compatibilityLevel":"BACKWARD",...}``; a tombstone deletes the subject's config.
* ``MODE``    ``{"keytype":"MODE","subject":S,"magic":0}`` -> ``{"subject":S,"mode":"READONLY"}``.
* ``DELETE_SUBJECT`` ``{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}`` -> ``{"subject":S,"version":V}``:
  a soft delete of every version up to V.
* ``CLEAR_SUBJECT`` ``{"keytype":"CLEAR_SUBJECT","subject":S,"magic":0}`` -> ``{"subject":S}``.
* ``NOOP``    ``{"keytype":"NOOP","magic":0}``: written by a registry to learn the log's end; carries nothing.

Field order follows the Java classes' ``@JsonPropertyOrder`` (keys) and their ``@JsonCreator`` parameter order
(values), which is how Jackson orders them; fields with empty values are left out (``@JsonInclude(NON_EMPTY)``),
while ``magic`` and ``deleted`` are always written. Readers ignore unknown fields (``ignoreUnknown = true``), so
do we. Pure: no I/O.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "SCHEMA"
CONFIG = "CONFIG"
MODE = "MODE"
NOOP = "NOOP"
DELETE_SUBJECT = "DELETE_SUBJECT"
CLEAR_SUBJECT = "CLEAR_SUBJECT"
CONTEXT = "CONTEXT"
KEY_TYPES = (SCHEMA, CONFIG, MODE, NOOP, DELETE_SUBJECT, CLEAR_SUBJECT, CONTEXT, "ASSOC")

# ConfigValue's fields in its @JsonCreator order (after "subject")
CONFIG_FIELDS = ("alias", "aliasForDeks", "normalize", "validateFields", "validateNewSchemas", "validateRules",
                 "compatibilityLevel", "compatibilityPolicy", "compatibilityGroup", "defaultMetadata",
                 "overrideMetadata", "defaultRuleSet", "overrideRuleSet")


class RecordError(ValueError):
    """A ``_schemas`` record this registry cannot read (skipped on load, with a warning)."""


def dumps(obj: Any) -> bytes:
    """Compact JSON as Jackson writes it (non-ASCII characters kept as UTF-8)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True)
class Key:
    keytype: str
    subject: str | None = None
    version: int | None = None   # SCHEMA only
    magic: int = 0


def schema_key(subject: str, version: int) -> Key:
    return Key(SCHEMA, subject, version, 1)


def config_key(subject: str | None) -> Key:
    return Key(CONFIG, subject)


def mode_key(subject: str | None) -> Key:
    return Key(MODE, subject)


def encode_key(key: Key) -> bytes:
    out: dict[str, Any] = {"keytype": key.keytype}
    if key.subject:   # NON_EMPTY: a null (global) subject is left out
        out["subject"] = key.subject
    if key.keytype == SCHEMA:
        out["version"] = key.version
    out["magic"] = key.magic
    return dumps(out)


def decode_key(data: bytes) -> Key:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"key is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RecordError("key is not a JSON object")
    keytype = obj.get("keytype")
    if keytype not in KEY_TYPES:
        raise RecordError(f"unknown keytype {keytype!r}")
    subject = obj.get("subject")
    magic = obj.get("magic", 0)
    if (subject is not None and not isinstance(subject, str)) or not isinstance(magic, int):
        raise RecordError("bad subject or magic in key")
    version = obj.get("version")
    if keytype == SCHEMA:
        if magic not in (0, 1):   # as SchemaRegistrySerializer.validateMagicByte
            raise RecordError(f"Can't deserialize schema for the magic byte {magic}")
        if not isinstance(version, int) or not isinstance(subject, str):
            raise RecordError("SCHEMA key without subject or version")
    return Key(keytype, subject, version if keytype == SCHEMA else None, magic)


@dataclass
class SchemaValue:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] | None = None
    rule_set: dict[str, Any] | None = None
    deleted: bool = False
    md5: str | None = None   # read and written back, never computed


def encode_schema_value(v: SchemaValue) -> bytes:
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.md5:
        out["md5"] = v.md5
    out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = v.references
    if v.metadata:
        out["metadata"] = v.metadata
    if v.rule_set:
        out["ruleSet"] = v.rule_set
    out["schema"] = v.schema
    out["deleted"] = v.deleted
    return dumps(out)


def _object(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RecordError(f"value is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise RecordError("value is not a JSON object")
    return obj


def decode_schema_value(data: bytes) -> SchemaValue:
    obj = _object(data)
    subject, version, sid, schema = obj.get("subject"), obj.get("version"), obj.get("id"), obj.get("schema")
    if not isinstance(subject, str) or not isinstance(version, int) or not isinstance(sid, int) \
            or not isinstance(schema, str):
        raise RecordError("SCHEMA value without subject, version, id or schema")
    refs = obj.get("references") or []
    if not isinstance(refs, list):
        raise RecordError("references is not a list")
    md = obj.get("metadata")
    rs = obj.get("ruleSet")
    return SchemaValue(subject, version, sid, schema, obj.get("schemaType") or "AVRO", refs,
                       md if isinstance(md, dict) else None, rs if isinstance(rs, dict) else None,
                       bool(obj.get("deleted", False)), obj.get("md5") if isinstance(obj.get("md5"), str) else None)


def encode_config_value(subject: str | None, config: dict[str, Any]) -> bytes:
    out: dict[str, Any] = {}
    if subject:
        out["subject"] = subject
    for name in CONFIG_FIELDS:
        if config.get(name) not in (None, "", {}, []):
            out[name] = config[name]
    return dumps(out)


def decode_config_value(data: bytes) -> dict[str, Any]:
    obj = _object(data)
    return {k: obj[k] for k in CONFIG_FIELDS if obj.get(k) is not None}


def encode_mode_value(subject: str | None, mode: str) -> bytes:
    return dumps({"subject": subject, "mode": mode} if subject else {"mode": mode})


def decode_mode_value(data: bytes) -> str:
    mode = _object(data).get("mode")
    if not isinstance(mode, str):
        raise RecordError("MODE value without mode")
    return mode


def encode_delete_subject_value(subject: str, version: int) -> bytes:
    return dumps({"subject": subject, "version": version})


def decode_delete_subject_value(data: bytes) -> tuple[str, int]:
    obj = _object(data)
    subject, version = obj.get("subject"), obj.get("version")
    if not isinstance(subject, str) or not isinstance(version, int):
        raise RecordError("DELETE_SUBJECT value without subject or version")
    return subject, version


def encode_clear_subject_value(subject: str) -> bytes:
    return dumps({"subject": subject})
