"""Avro schemas: parsing (with the named types of referenced schemas), the canonical string a registry stores,
and Avro's schema-resolution rules as a compatibility check.

Parsing follows the Avro specification: primitive names, ``record``/``error``, ``enum``, ``fixed``, ``array``,
``map`` and unions; names and namespaces (a name with a dot is a full name; otherwise the enclosing namespace
applies); each named type is defined once and may then be used by name; field defaults must match the field's
type (a union's default, its first branch). ``canonical(schema)`` writes the schema back as Avro's Java
``Schema.toString()`` does: compact JSON, each named type in full at its first use and by name afterwards,
a namespace written only where it differs from the enclosing one. ``canonical(schema, normalize=True)`` writes
full names everywhere instead (``?normalize=true``): two spellings of one schema then compare equal.

``can_read(reader, writer)`` is Avro's ``SchemaCompatibility``: data written with ``writer`` can be read with
``reader``. Its rules, each a message when broken:

* same primitive type, or a promotion: int -> long, float, double; long -> float, double; float -> double;
  string <-> bytes;
* records: same (unqualified) name or a reader alias of it; every reader field either exists in the writer (by
  name or one of the reader field's aliases) with a readable type, or has a default;
* enums: same name; every writer symbol is a reader symbol, unless the reader has a default symbol;
* fixed: same name and size; arrays: items readable; maps: values readable;
* a writer union: every branch readable by the reader; a reader union: the writer (non-union) readable by
  some branch.

Pure, no I/O. Errors are :class:`AvroError` with a message for the user (HTTP 422, error 42201).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"), ("long", "double"),
               ("float", "double"), ("string", "bytes"), ("bytes", "string")}
_MAX_DEPTH = 200


class AvroError(ValueError):
    pass


@dataclass(eq=False)
class Schema:
    type: str                              # a primitive, record, error, enum, fixed, array, map, union
    name: str | None = None                # full name of a named type
    props: dict[str, Any] = field(default_factory=dict)   # other attributes (logicalType, doc, aliases...)
    fields: list[Field] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    size: int = 0
    items: Schema | None = None           # array items / map values
    branches: list[Schema] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)   # full names

    @property
    def short(self) -> str:
        return (self.name or "").rsplit(".", 1)[-1]

    @property
    def namespace(self) -> str | None:
        return self.name.rsplit(".", 1)[0] if self.name and "." in self.name else None


@dataclass(eq=False)
class Field:
    name: str
    type: Schema
    default: Any = None
    has_default: bool = False
    aliases: list[str] = field(default_factory=list)
    props: dict[str, Any] = field(default_factory=dict)   # doc, order, custom


def _full(name: str, space: str | None) -> str:
    if "." in name or not space:
        return name
    return f"{space}.{name}"


def _check_name(full: str) -> None:
    for part in full.split("."):
        if not _NAME.match(part):
            raise AvroError(f"Illegal name: {full}")


class _Parser:
    def __init__(self, named: dict[str, Schema]) -> None:
        self.named = named   # full name -> schema (includes those of referenced schemas)

    def parse(self, obj: Any, space: str | None, depth: int = 0) -> Schema:
        if depth > _MAX_DEPTH:
            raise AvroError("schema nested too deeply")
        if isinstance(obj, str):
            return self._by_name(obj, space)
        if isinstance(obj, list):
            return self._union(obj, space, depth)
        if not isinstance(obj, dict):
            raise AvroError(f"Not a schema: {json.dumps(obj)}")
        t = obj.get("type")
        if t is None:
            raise AvroError(f"No type: {json.dumps(obj)[:200]}")
        if isinstance(t, (dict, list)):
            return self.parse(t, space, depth + 1)   # {"type": {"type": ...}} nests a schema
        if not isinstance(t, str):
            raise AvroError(f"Not a schema type: {t!r}")
        if t in PRIMITIVES:
            return Schema(t, props={k: v for k, v in obj.items() if k != "type"})
        if t in ("record", "error", "enum", "fixed"):
            return self._named(t, obj, space, depth)
        if t == "array":
            if "items" not in obj:
                raise AvroError("Array has no items type")
            return Schema("array", items=self.parse(obj["items"], space, depth + 1),
                          props={k: v for k, v in obj.items() if k not in ("type", "items")})
        if t == "map":
            if "values" not in obj:
                raise AvroError("Map has no values type")
            return Schema("map", items=self.parse(obj["values"], space, depth + 1),
                          props={k: v for k, v in obj.items() if k not in ("type", "values")})
        return self._by_name(t, space)

    def _by_name(self, name: str, space: str | None) -> Schema:
        if name in PRIMITIVES:
            return Schema(name)
        for candidate in (_full(name, space), name):
            if candidate in self.named:
                return self.named[candidate]
        raise AvroError(f"Undefined name: \"{name}\"")

    def _union(self, items: list[Any], space: str | None, depth: int) -> Schema:
        branches = [self.parse(b, space, depth + 1) for b in items]
        seen: set[str] = set()
        for b in branches:
            if b.type == "union":
                raise AvroError("Nested union: " + json.dumps(items)[:200])
            key = b.name if b.name else b.type
            if key in seen:
                raise AvroError(f"Duplicate in union: {key}")
            seen.add(key)
        return Schema("union", branches=branches)

    def _named(self, t: str, obj: dict[str, Any], space: str | None, depth: int) -> Schema:
        name = obj.get("name")
        if not isinstance(name, str) or not name:
            raise AvroError(f"No name in schema: {json.dumps(obj)[:200]}")
        ns = obj.get("namespace")
        if ns is not None and not isinstance(ns, str):
            raise AvroError("namespace is not a string")
        own_space = name.rsplit(".", 1)[0] if "." in name else (ns if ns is not None else space)
        full = _full(name, own_space or None)
        _check_name(full)
        if full in PRIMITIVES or (full.rsplit(".", 1)[-1] in PRIMITIVES and "." not in full):
            raise AvroError(f"Schemas may not be named after primitives: {full}")
        if full in self.named:
            raise AvroError(f"Can't redefine: {full}")
        aliases = obj.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise AvroError("aliases must be a list of names")
        skip = {"type", "name", "namespace", "aliases", "fields", "symbols", "size", "default"}
        s = Schema(t, full, props={k: v for k, v in obj.items() if k not in skip},
                   aliases=[_full(a, own_space or None) for a in aliases])
        self.named[full] = s
        if t == "enum":
            symbols = obj.get("symbols")
            if not isinstance(symbols, list) or not all(isinstance(x, str) for x in symbols):
                raise AvroError("Enum symbols must be a list of strings")
            for x in symbols:
                if not _NAME.match(x):
                    raise AvroError(f"Illegal enum symbol: {x}")
            if len(set(symbols)) != len(symbols):
                raise AvroError(f"Duplicate enum symbol in {full}")
            s.symbols = list(symbols)
            if "default" in obj:
                if obj["default"] not in symbols:
                    raise AvroError(f"The Enum Default: {obj['default']} is not in the enum symbol set: {symbols}")
                s.props["default"] = obj["default"]
        elif t == "fixed":
            size = obj.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise AvroError(f"Invalid fixed size: {size!r}")
            s.size = size
        else:
            fields = obj.get("fields")
            if not isinstance(fields, list):
                raise AvroError(f"Record has no fields: {full}")
            names: set[str] = set()
            for f in fields:
                if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                    raise AvroError(f"No field name in {full}")
                fname = f["name"]
                if not _NAME.match(fname):
                    raise AvroError(f"Illegal field name: {fname}")
                if fname in names:
                    raise AvroError(f"Duplicate field {fname} in record {full}")
                names.add(fname)
                if "type" not in f:
                    raise AvroError(f"No field type: {fname}")
                ftype = self.parse(f["type"], own_space or None, depth + 1)
                faliases = f.get("aliases") or []
                if not isinstance(faliases, list):
                    raise AvroError("field aliases must be a list")
                fld = Field(fname, ftype, f.get("default"), "default" in f, [str(a) for a in faliases],
                            {k: v for k, v in f.items() if k not in ("name", "type", "default", "aliases")})
                if fld.has_default:
                    _check_default(ftype, fld.default, f"{full}.{fname}")
                s.fields.append(fld)
        return s


def _check_default(s: Schema, value: Any, where: str) -> None:
    if not _default_ok(s, value, 0):
        raise AvroError(f"Invalid default for field {where}: {json.dumps(value)} not a {_short_json(s)}")


def _short_json(s: Schema) -> str:
    return s.name or s.type


def _default_ok(s: Schema, v: Any, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return True
    t = s.type
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t in ("int", "long"):
        return isinstance(v, int) and not isinstance(v, bool)
    if t in ("float", "double"):
        return (isinstance(v, (int, float)) and not isinstance(v, bool)) or v in ("NaN", "Infinity", "-Infinity")
    if t in ("bytes", "string", "fixed"):
        return isinstance(v, str)
    if t == "enum":
        return isinstance(v, str) and v in s.symbols
    if t == "array":
        return isinstance(v, list) and all(_default_ok(s.items, x, depth + 1) for x in v)  # type: ignore[arg-type]
    if t == "map":
        return isinstance(v, dict) and all(_default_ok(s.items, x, depth + 1) for x in v.values())  # type: ignore[arg-type]
    if t == "union":
        return bool(s.branches) and _default_ok(s.branches[0], v, depth + 1)
    if t in ("record", "error"):
        if not isinstance(v, dict):
            return False
        return all((f.name in v and _default_ok(f.type, v[f.name], depth + 1)) or (f.name not in v and f.has_default)
                   for f in s.fields)
    return True


def parse(text: str, named: dict[str, Schema] | None = None) -> Schema:
    """Parse a schema's JSON text; ``named`` holds the named types of its references (full name -> schema),
    and receives this schema's own."""
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise AvroError(f"Invalid schema: {exc}") from None
    return _Parser(named if named is not None else {}).parse(obj, None)


# -- the canonical string ------------------------------------------------------------------------------------

def canonical(s: Schema, normalize: bool = False, known: set[str] | frozenset[str] = frozenset()) -> str:
    """The schema as a registry stores it; ``known``: names defined by references (written by name only)."""
    return json.dumps(_to_json(s, set(known), None, normalize), separators=(",", ":"), ensure_ascii=False)


def _name_fields(s: Schema, space: str | None, normalize: bool) -> dict[str, Any]:
    if normalize:
        return {"name": s.name}
    out: dict[str, Any] = {"name": s.short}
    if s.namespace is not None:
        if s.namespace != space:
            out["namespace"] = s.namespace
    elif space is not None:
        out["namespace"] = ""
    return out


def _ref_name(s: Schema, space: str | None, normalize: bool) -> str:
    if not normalize and s.namespace is not None and s.namespace == space:
        return s.short
    return s.name or ""


def _to_json(s: Schema, seen: set[str], space: str | None, normalize: bool) -> Any:
    t = s.type
    if t in PRIMITIVES:
        if not s.props:
            return t
        return {"type": t, **s.props}
    if t == "union":
        return [_to_json(b, seen, space, normalize) for b in s.branches]
    if t == "array":
        return {"type": "array", "items": _to_json(s.items, seen, space, normalize), **s.props}  # type: ignore[arg-type]
    if t == "map":
        return {"type": "map", "values": _to_json(s.items, seen, space, normalize), **s.props}  # type: ignore[arg-type]
    assert s.name is not None
    if s.name in seen:
        return _ref_name(s, space, normalize)
    seen.add(s.name)
    out: dict[str, Any] = {"type": t, **_name_fields(s, space, normalize)}
    inner = s.namespace
    props = dict(s.props)
    if "doc" in props:
        out["doc"] = props.pop("doc")
    if t == "enum":
        out["symbols"] = s.symbols
        default = props.pop("default", None)
        out.update(props)
        if default is not None:
            out["default"] = default
    elif t == "fixed":
        out["size"] = s.size
        out.update(props)
    else:
        fields = []
        for f in s.fields:
            fo: dict[str, Any] = {"name": f.name, "type": _to_json(f.type, seen, inner, normalize)}
            fprops = dict(f.props)
            if "doc" in fprops:
                fo["doc"] = fprops.pop("doc")
            if f.has_default:
                fo["default"] = f.default
            if "order" in fprops:
                order = fprops.pop("order")
                if order != "ascending":
                    fo["order"] = order
            fo.update(fprops)
            if f.aliases:
                fo["aliases"] = f.aliases
            fields.append(fo)
        out["fields"] = fields
        out.update(props)
    if s.aliases:
        out["aliases"] = [a if normalize else (a.rsplit(".", 1)[-1] if a.rsplit(".", 1)[0] == inner else a)
                          for a in s.aliases]
    return out


# -- compatibility (schema resolution) ------------------------------------------------------------------------

def can_read(reader: Schema, writer: Schema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (empty: it can)."""
    out: list[str] = []
    _check(reader, writer, "", out, set())
    return out


def _names_match(reader: Schema, writer: Schema) -> bool:
    if reader.short == writer.short:
        return True
    return writer.name in reader.aliases or writer.short in {a.rsplit(".", 1)[-1] for a in reader.aliases}


def _check(r: Schema, w: Schema, path: str, out: list[str], busy: set[tuple[int, int]]) -> None:
    pair = (id(r), id(w))
    if pair in busy:
        return   # a recursive type: assumed compatible while being checked
    busy.add(pair)
    try:
        _check_pair(r, w, path, out, busy)
    finally:
        busy.discard(pair)


def _check_pair(r: Schema, w: Schema, path: str, out: list[str], busy: set[tuple[int, int]]) -> None:
    where = path or "/"
    if w.type == "union":
        for i, b in enumerate(w.branches):
            _check(r, b, f"{path}/{i}", out, busy)
        return
    if r.type == "union":
        for b in r.branches:
            trial: list[str] = []
            _check(b, w, path, trial, busy)
            if not trial:
                return
        out.append(f"{{errorType:'MISSING_UNION_BRANCH', description:'The new schema is missing a type inside a "
                   f"union field at path '{where}' in the old schema', additionalInfo:'reader union lacking writer "
                   f"type: {w.type.upper()}'}}")
        return
    if r.type != w.type:
        if (w.type, r.type) in _PROMOTIONS:
            return
        out.append(f"{{errorType:'TYPE_MISMATCH', description:'The type (path '{where}') of a field in the new "
                   f"schema does not match with the old schema', additionalInfo:'reader type: {r.type.upper()} not "
                   f"compatible with writer type: {w.type.upper()}'}}")
        return
    t = r.type
    if t in PRIMITIVES:
        return
    if t in ("record", "error", "enum", "fixed") and not _names_match(r, w):
        out.append(f"{{errorType:'NAME_MISMATCH', description:'The name of the schema has changed (path "
                   f"'{path}/name')', additionalInfo:'expected: {w.name}'}}")
        return
    if t == "fixed":
        if r.size != w.size:
            out.append(f"{{errorType:'FIXED_SIZE_MISMATCH', description:'The size of FIXED type field at path "
                       f"'{path}/size' in the new schema does not match with the old schema', additionalInfo:"
                       f"'expected: {w.size}, found: {r.size}'}}")
    elif t == "enum":
        missing = [x for x in w.symbols if x not in r.symbols]
        if missing and "default" not in r.props:
            out.append(f"{{errorType:'MISSING_ENUM_SYMBOLS', description:'The new schema is missing enum symbols "
                       f"'{missing}' at path '{path}/symbols' in the old schema', additionalInfo:'enum reader "
                       f"lacking symbols: {missing}'}}")
    elif t in ("array", "map"):
        _check(r.items, w.items, f"{path}/{'items' if t == 'array' else 'values'}", out, busy)  # type: ignore[arg-type]
    else:
        by_name = {f.name: f for f in w.fields}
        for i, rf in enumerate(r.fields):
            wf = by_name.get(rf.name)
            if wf is None:
                wf = next((by_name[a] for a in rf.aliases if a in by_name), None)
            if wf is None:
                if not rf.has_default:
                    out.append(f"{{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field "
                               f"'{rf.name}' at path '{path}/fields/{i}' in the new schema has no default value "
                               f"and is missing in the old schema', additionalInfo:'{rf.name}'}}")
            else:
                _check(rf.type, wf.type, f"{path}/fields/{i}/type", out, busy)
