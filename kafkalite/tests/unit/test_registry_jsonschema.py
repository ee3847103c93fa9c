"""JSON Schema compatibility in the registry (kafkalite.registry.compat.jsonschema): one case per rule; the
reader is the new schema under BACKWARD."""
from __future__ import annotations

import json

import pytest

from kafkalite.registry.compat import jsonschema as J


def errors(reader: object, writer: object, refs: dict[str, object] | None = None) -> list[str]:
    return J.can_read(J.Resolved(reader, refs or {}), J.Resolved(writer, refs or {}))


def obj(props: dict[str, object], *, required: list[str] | None = None, closed: bool = False) -> dict[str, object]:
    out: dict[str, object] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if closed:
        out["additionalProperties"] = False
    return out


S, INT, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def kinds(msgs: list[str]) -> list[str]:
    return [m.split("errorType:'")[1].split("'")[0] for m in msgs]


def test_type_widening_and_narrowing() -> None:
    assert errors(N, INT) == []
    assert kinds(errors(INT, N)) == ["TYPE_CHANGED"]
    assert kinds(errors({"type": "string"}, {"type": ["string", "null"]})) == ["TYPE_NARROWED"]
    assert errors({"type": ["string", "null"]}, S) == []


def test_open_and_closed_content_models() -> None:
    assert kinds(errors(obj({"a": S, "b": INT}), obj({"a": S}))) == ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]
    assert errors(obj({"a": S, "b": INT}), obj({"a": S}, closed=True)) == []       # optional add, closed writer
    assert errors(obj({"a": S}), obj({"a": S, "b": INT})) == []                      # removed, open reader
    assert kinds(errors(obj({"a": S}, closed=True), obj({"a": S, "b": INT}))) == \
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "ADDITIONAL_PROPERTIES_REMOVED"]   # the writer was open
    assert kinds(errors(obj({"a": S}, closed=True), obj({"a": S, "b": INT}, closed=True))) == \
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"]


def test_required_added() -> None:
    assert kinds(errors(obj({"a": S, "b": INT}, required=["b"]), obj({"a": S}, closed=True))) == \
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"]
    assert kinds(errors(obj({"a": S}, required=["a"]), obj({"a": S}))) == ["REQUIRED_ATTRIBUTE_ADDED"]
    assert errors(obj({"a": S}), obj({"a": S}, required=["a"])) == []


def test_enums_and_bounds() -> None:
    assert kinds(errors({"enum": ["a"]}, {"enum": ["a", "b"]})) == ["ENUM_ARRAY_NARROWED"]
    assert errors({"enum": ["a", "b", "c"]}, {"enum": ["a", "b"]}) == []
    assert kinds(errors({"type": "string", "maxLength": 5}, {"type": "string", "maxLength": 10})) == \
        ["MAX_LENGTH_DECREASED"]
    assert kinds(errors({"type": "string", "minLength": 3}, S)) == ["MIN_LENGTH_ADDED"]
    assert errors({"type": "integer", "maximum": 10}, {"type": "integer", "maximum": 5}) == []
    assert kinds(errors({"type": "string", "pattern": "^a"}, S)) == ["PATTERN_ADDED"]


def test_arrays_combinations_and_refs() -> None:
    assert errors({"type": "array", "items": N}, {"type": "array", "items": INT}) == []
    assert kinds(errors({"type": "array", "items": INT}, {"type": "array", "items": N})) == ["TYPE_CHANGED"]
    assert errors({"oneOf": [S, INT]}, S) == []
    assert kinds(errors({"oneOf": [S, INT]}, {"type": "boolean"})) == ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"]
    assert errors(S, {"anyOf": [S, {"type": "string", "maxLength": 3}]}) == []
    local = {"definitions": {"x": INT}, "type": "object", "properties": {"a": {"$ref": "#/definitions/x"}}}
    assert errors(local, obj({"a": INT})) == []
    assert errors(obj({"a": {"$ref": "other.json"}}), obj({"a": INT}), {"other.json": N}) == []


@pytest.mark.parametrize("bad", ["[1]", '"x"', '{"type":"nope"}', '{"properties":[]}', '{"required":"a"}', "{"])
def test_invalid_json_schemas(bad: str) -> None:
    with pytest.raises(ValueError):
        J.parse(bad)


def test_canonical_keeps_order_and_normalize_sorts() -> None:
    doc = J.parse(json.dumps({"type": "object", "properties": {"b": S, "a": INT}}))
    assert J.canonical(doc) == '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}'
    assert J.canonical(doc, normalize=True) == \
        '{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}'
