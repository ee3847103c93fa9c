"""JSON Schema: parsing, the canonical string, and compatibility as Confluent's JSON Schema rules decide it.

A reader schema can read a writer's data when every document the writer's schema accepts, the reader's
accepts too. Checked keyword by keyword, each break a message named as Confluent's ``Difference.Type`` names it:

* ``type``: the reader's types must cover the writer's (``integer`` is a ``number``): TYPE_CHANGED /
  TYPE_NARROWED;
* objects: a property the writer may write (declared, or any when its content model is open:
  ``additionalProperties`` absent or true) must be accepted by the reader: PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
  PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL; a property the reader requires must be required by the writer:
  REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL / REQUIRED_ATTRIBUTE_ADDED;
* enums: the reader's values must include the writer's: ENUM_ARRAY_NARROWED;
* bounds (``maxLength``, ``minLength``, ``maximum``, ``minimum``, ``maxItems``, ``minItems``,
  ``maxProperties``, ``minProperties``, ``exclusive*``): the reader's range must contain the writer's:
  MAX_LENGTH_DECREASED, MIN_LENGTH_INCREASED, MAXIMUM_DECREASED, ...; ``pattern``/``multipleOf``/``format``
  added or changed: PATTERN_CHANGED, MULTIPLE_OF_CHANGED, ...;
* arrays: items readable (ITEMS_...), additional items as for properties;
* ``oneOf``/``anyOf``: each writer branch readable by some reader branch (COMBINED_TYPE_SUBSCHEMAS_CHANGED);
* ``$ref`` to ``#/definitions/..``, ``#/$defs/..`` and to the schemas named in the references.

``true``/``{}`` accepts anything, ``false`` nothing. Pure, no I/O.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_MAX_DEPTH = 64
_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
_UPPER = {"maxLength": "MAX_LENGTH", "maximum": "MAXIMUM", "exclusiveMaximum": "EXCLUSIVE_MAXIMUM",
          "maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES"}
_LOWER = {"minLength": "MIN_LENGTH", "minimum": "MINIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM",
          "minItems": "MIN_ITEMS", "minProperties": "MIN_PROPERTIES"}
_EXACT = {"pattern": "PATTERN", "multipleOf": "MULTIPLE_OF", "format": "FORMAT"}


@dataclass
class Resolved:
    doc: Any
    refs: dict[str, Any]   # reference name -> its parsed document


def parse(text: str) -> Any:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"Invalid JSON Schema: {exc}") from None
    if not isinstance(doc, (dict, bool)):
        raise ValueError("Invalid JSON Schema: a schema is a JSON object or a boolean")
    _validate(doc, 0)
    return doc


def _validate(s: Any, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("Invalid JSON Schema: nested too deeply")
    if isinstance(s, bool):
        return
    if not isinstance(s, dict):
        raise ValueError(f"Invalid JSON Schema: {json.dumps(s)[:100]} is not a schema")
    t = s.get("type")
    for name in (t if isinstance(t, list) else [t] if t is not None else []):
        if name not in _TYPES:
            raise ValueError(f"Invalid JSON Schema: unknown type {name!r}")
    for key in ("properties", "definitions", "$defs", "patternProperties"):
        sub = s.get(key)
        if sub is not None:
            if not isinstance(sub, dict):
                raise ValueError(f"Invalid JSON Schema: {key} must be an object")
            for v in sub.values():
                _validate(v, depth + 1)
    for key in ("items", "additionalProperties", "additionalItems", "not", "contains"):
        sub = s.get(key)
        if isinstance(sub, list):
            for v in sub:
                _validate(v, depth + 1)
        elif sub is not None:
            _validate(sub, depth + 1)
    for key in ("oneOf", "anyOf", "allOf"):
        sub = s.get(key)
        if sub is not None:
            if not isinstance(sub, list):
                raise ValueError(f"Invalid JSON Schema: {key} must be an array")
            for v in sub:
                _validate(v, depth + 1)
    req = s.get("required")
    if req is not None and not (isinstance(req, list) and all(isinstance(x, str) for x in req)):
        raise ValueError("Invalid JSON Schema: required must be an array of strings")


def canonical(doc: Any, normalize: bool = False) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, sort_keys=normalize)


class _Ctx:
    def __init__(self, reader: Resolved, writer: Resolved) -> None:
        self.reader = reader
        self.writer = writer
        self.out: list[str] = []
        self.busy: set[tuple[int, int]] = set()

    def add(self, kind: str, path: str) -> None:
        self.out.append(f"{{errorType:'{kind}', description:'A change at path '{path or '#/'}' in the new schema is "
                        f"incompatible with the old schema'}}")


def can_read(reader: Resolved, writer: Resolved) -> list[str]:
    ctx = _Ctx(reader, writer)
    _check(ctx, reader.doc, writer.doc, "#", 0)
    return ctx.out


def _deref(s: Any, side: Resolved, depth: int = 0) -> Any:
    while isinstance(s, dict) and isinstance(s.get("$ref"), str) and depth < 16:
        ref = s["$ref"]
        target: Any = None
        if ref.startswith("#"):
            target = side.doc
            for part in [p for p in ref[1:].split("/") if p]:
                target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
        else:
            doc_name, _, frag = ref.partition("#")
            target = side.refs.get(doc_name) if doc_name in side.refs else side.refs.get(ref)
            for part in [p for p in frag.split("/") if p]:
                target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            return s
        rest = {k: v for k, v in s.items() if k != "$ref"}
        s = {**target, **rest} if rest and isinstance(target, dict) else target
        depth += 1
    return s


def _types(s: dict[str, Any]) -> set[str] | None:
    t = s.get("type")
    if t is None:
        return None
    return set(t) if isinstance(t, list) else {t}


def _check(ctx: _Ctx, r: Any, w: Any, path: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    r, w = _deref(r, ctx.reader), _deref(w, ctx.writer)
    pair = (id(r), id(w))
    if pair in ctx.busy:
        return
    ctx.busy.add(pair)
    try:
        _check_pair(ctx, r, w, path, depth)
    finally:
        ctx.busy.discard(pair)


def _accepts_all(s: Any) -> bool:
    return s is True or s == {}


def _check_pair(ctx: _Ctx, r: Any, w: Any, path: str, depth: int) -> None:  # noqa: C901 (one rule per keyword)
    if w is False or _accepts_all(r):
        return
    if r is False:
        ctx.add("SCHEMA_REMOVED" if w is not False else "TYPE_CHANGED", path)
        return
    if w is True:
        w = {}
    if not isinstance(r, dict) or not isinstance(w, dict):
        return
    for comb in ("oneOf", "anyOf"):
        if isinstance(w.get(comb), list):   # every writer branch is read by the reader
            base = {k: v for k, v in w.items() if k != comb}
            for i, b in enumerate(w[comb]):
                merged = {**base, **b} if isinstance(b, dict) else b
                _check(ctx, r, merged, f"{path}/{comb}/{i}", depth + 1)
            return
    for comb in ("oneOf", "anyOf"):
        if isinstance(r.get(comb), list):   # some reader branch reads the writer
            for b in r[comb]:
                trial = _Ctx(ctx.reader, ctx.writer)
                _check(trial, b, w, path, depth + 1)
                if not trial.out:
                    break
            else:
                ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path)
                return
    rt, wt = _types(r), _types(w)
    if rt is not None:
        wanted = wt if wt is not None else set(_TYPES)
        covered = rt | ({"integer"} if "number" in rt else set())
        if not wanted <= covered:
            ctx.add("TYPE_NARROWED" if wt is not None and rt & wt else "TYPE_CHANGED", f"{path}/type")
            return
    if "enum" in r and ("enum" not in w or any(v not in r["enum"] for v in w["enum"])):
        ctx.add("ENUM_ARRAY_NARROWED" if "enum" in w else "ENUM_ARRAY_CHANGED", f"{path}/enum")
    if "const" in r and w.get("const", object()) != r["const"]:
        ctx.add("CONST_CHANGED", f"{path}/const")
    for key, name in _UPPER.items():
        if key in r and isinstance(r[key], (int, float)):
            wv = w.get(key)
            if not isinstance(wv, (int, float)):
                ctx.add(f"{name}_ADDED", f"{path}/{key}")
            elif r[key] < wv:
                ctx.add(f"{name}_DECREASED", f"{path}/{key}")
    for key, name in _LOWER.items():
        if key in r and isinstance(r[key], (int, float)):
            wv = w.get(key)
            if not isinstance(wv, (int, float)):
                ctx.add(f"{name}_ADDED", f"{path}/{key}")
            elif r[key] > wv:
                ctx.add(f"{name}_INCREASED", f"{path}/{key}")
    for key, name in _EXACT.items():
        if key in r and r[key] != w.get(key):
            ctx.add(f"{name}_ADDED" if key not in w else f"{name}_CHANGED", f"{path}/{key}")
    types = wt if wt is not None else set(_TYPES)
    if "object" in types and (rt is None or "object" in rt):
        _check_object(ctx, r, w, path, depth)
    if "array" in types and (rt is None or "array" in rt):
        _check_array(ctx, r, w, path, depth)


def _check_object(ctx: _Ctx, r: dict[str, Any], w: dict[str, Any], path: str, depth: int) -> None:
    rprops = r.get("properties") or {}
    wprops = w.get("properties") or {}
    radd = r.get("additionalProperties", True)
    wadd = w.get("additionalProperties", True)
    wreq = set(w.get("required") or [])
    for name in r.get("required") or []:
        if name not in wreq:
            ctx.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" if name not in wprops
                    else "REQUIRED_ATTRIBUTE_ADDED", f"{path}/required")
    for name, ws in wprops.items():   # what the writer declares, the reader reads
        if name in rprops:
            _check(ctx, rprops[name], ws, f"{path}/properties/{name}", depth + 1)
        elif radd is False:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"{path}/properties/{name}")
        elif not _accepts_all(radd):
            _check(ctx, radd, ws, f"{path}/additionalProperties", depth + 1)
    if wadd is not False:   # an open writer may write any other property
        for name, rs in rprops.items():
            if name not in wprops:
                extra = _Ctx(ctx.reader, ctx.writer)
                _check(extra, rs, wadd, f"{path}/properties/{name}", depth + 1)
                if extra.out:
                    ctx.add("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", f"{path}/properties/{name}")
        if radd is False:
            ctx.add("ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties")
        elif not _accepts_all(radd):
            _check(ctx, radd, wadd, f"{path}/additionalProperties", depth + 1)


def _check_array(ctx: _Ctx, r: dict[str, Any], w: dict[str, Any], path: str, depth: int) -> None:
    ri, wi = r.get("items", True), w.get("items", True)
    if isinstance(ri, list) or isinstance(wi, list):   # tuples: position by position
        rl = ri if isinstance(ri, list) else []
        wl = wi if isinstance(wi, list) else []
        for i, ws in enumerate(wl):
            rs = rl[i] if i < len(rl) else r.get("additionalItems", True)
            _check(ctx, rs, ws, f"{path}/items/{i}", depth + 1)
        return
    _check(ctx, ri, wi, f"{path}/items", depth + 1)
    if r.get("uniqueItems") and not w.get("uniqueItems"):
        ctx.add("UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems")
