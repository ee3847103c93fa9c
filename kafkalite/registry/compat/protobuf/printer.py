"""A schema written back as ``.proto`` text the way Confluent's registry writes it (its canonical string, what
it stores and returns), and its normalized form (``?normalize=true``).

Canonical: ``syntax``, ``package``, imports, file options, then messages before enums (declaration order kept
within each: a record's message indexes count messages in that order), extends, services; in a message:
reserved, options, fields, oneofs, extension ranges, extends, nested messages then enums; two-space indents;
a field's ``default`` and ``json_name`` written as its last options.

Normalized, in addition: ``syntax`` written only for proto3; imports sorted; options sorted by name; fields
and enum values by number, oneofs by their first field; every message or enum type fully qualified with a
leading dot; map entry messages folded back into ``map<K, V>`` fields. Two spellings of one schema then
compare equal. Pure.
"""
from __future__ import annotations

from typing import Any

from kafkalite.registry.compat.protobuf.model import (
    MAX_TAG,
    SCALAR_TYPES,
    Enum,
    EnumValue,
    Extend,
    Field,
    Message,
    OneOf,
    Option,
    ProtoFile,
    Reserved,
    Rpc,
    Service,
)
from kafkalite.registry.compat.protobuf.resolve import Symbols

_NUMBER_TYPES = {"bytes", "double", "float", "fixed32", "fixed64", "int32", "int64", "sfixed32", "sfixed64",
                 "sint32", "sint64", "uint32", "uint64"}


def escape(text: str) -> str:
    out = []
    for c in text:
        out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                    "\\": "\\\\", "'": "\\'", '"': '\\"'}.get(c, c))
    return "".join(out)


def _indent(text: str) -> str:
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "".join(f"  {line}\n" for line in lines)


class Printer:
    def __init__(self, f: ProtoFile, symbols: Symbols | None = None, normalize: bool = False) -> None:
        self.f = f
        self.symbols = symbols
        self.normalize = normalize and symbols is not None
        self.scope: list[str] = [f.package] if f.package else []

    # -- values and options ---------------------------------------------------------------------------
    def _value(self, v: Any) -> str:
        if isinstance(v, str):
            return v
        if isinstance(v, dict):
            return "{\n" + self._map(v) + "}"
        if isinstance(v, list):
            if self.normalize and len(v) == 1:
                return self._value(v[0])
            body = "".join(_indent(self._value(x) + ("," if i < len(v) - 1 else "")) for i, x in enumerate(v))
            return "[\n" + body + "]"
        return str(v)

    def _literal(self, v: Any) -> str:
        """A value inside a message literal: strings quoted, the rest as written."""
        if isinstance(v, _Quoted):
            return f'"{escape(v.text)}"'
        return self._value(v)

    def _map(self, m: dict[str, Any]) -> str:
        items = sorted(m.items()) if self.normalize else list(m.items())
        out = []
        for i, (k, v) in enumerate(items):
            out.append(_indent(f"{k}: {self._literal(_quote_strings(v))}" + ("," if i < len(items) - 1 else "")))
        return "".join(out)

    def option(self, o: Option) -> str:
        name = f"({o.name})" if o.paren and not o.name.startswith("(") else o.name
        if o.kind == "string":
            return f'{name} = "{escape(str(o.value))}"'
        if o.kind == "map":
            return f"{name} = {{\n{self._map(o.value)}}}"
        if o.kind == "list":
            return f"{name} = {self._options_list([self._literal(_quote_strings(x)) for x in o.value])}"
        return f"{name} = {o.value}"

    def _options_list(self, parts: list[str]) -> str:
        if len(parts) == 1:
            return f"[{parts[0]}]"
        return "[\n" + "".join(_indent(p + ("," if i < len(parts) - 1 else "")) for i, p in enumerate(parts)) + "]"

    def _opts(self, options: list[Option]) -> list[Option]:
        return sorted(options, key=lambda o: o.name) if self.normalize else options

    def _option_lines(self, options: list[Option]) -> str:
        return "".join(f"option {self.option(o)};\n" for o in self._opts(options))

    # -- names ----------------------------------------------------------------------------------------
    def _resolve(self, name: str) -> str:
        assert self.symbols is not None
        full = self.symbols.resolve(name, ".".join(self.scope))
        if full is None:
            raise ValueError(f"Could not resolve type: {name}")
        return "." + full

    def _field_type(self, fld: Field) -> tuple[str, bool]:
        """(type as written, is a map)."""
        t = fld.type
        if not self.normalize:
            return t, fld.is_map
        assert self.symbols is not None
        if fld.is_map:
            key, value = (x.strip() for x in t[4:-1].split(",", 1))
        elif t in SCALAR_TYPES:
            return t, False
        else:
            full = self._resolve(t)
            info = self.symbols.types.get(full[1:])
            mt = info.map_type() if info is not None else None
            if mt is None:
                return full, False
            key, value = (x.strip() for x in mt[4:-1].split(",", 1))
            saved = self.scope
            self.scope = [full[1:]]   # the entry's own field types resolve inside the entry
            try:
                return self._map_type(key, value), True
            finally:
                self.scope = saved
        return self._map_type(key, value), True

    def _map_type(self, key: str, value: str) -> str:
        if value not in SCALAR_TYPES:
            value = self._resolve(value)
        return f"map<{key}, {value}>"

    # -- elements -------------------------------------------------------------------------------------
    def field(self, fld: Field) -> str:
        type_, is_map = self._field_type(fld)
        label = None if (self.normalize and is_map) else fld.label
        out = (f"{label} " if label else "") + f"{type_} {fld.name} = {fld.number}"
        opts = list(fld.options)
        if fld.default is not None:
            base = type_.lstrip(".")
            kind = ("bool" if base == "bool" else "string" if base == "string" else
                    "number" if base in _NUMBER_TYPES else "enum")
            opts.append(Option("default", kind, fld.default))
        if fld.json_name is not None:
            opts.append(Option("json_name", "string", fld.json_name))
        if opts:
            out += " " + self._options_list([self.option(o) for o in self._opts(opts)])
        return out + ";\n"

    def _reserved(self, groups: list[list[Reserved]], keyword: str = "reserved") -> str:
        if self.normalize:
            flat = [[r] for g in groups for r in g]
            flat.sort(key=lambda g: (g[0][0] if isinstance(g[0], tuple) else MAX_TAG + 1, str(g[0])))
            groups = flat
        out = ""
        for g in groups:
            parts = []
            for r in g:
                if isinstance(r, str):
                    parts.append(f'"{r}"')
                elif r[0] == r[1]:
                    parts.append(str(r[0]))
                else:
                    parts.append(f"{r[0]} to {r[1] if r[1] < MAX_TAG else 'max'}")
            out += _indent(f"{keyword} {', '.join(parts)};")
        return out

    def message(self, m: Message) -> str:
        self.scope.append(m.name)
        try:
            out = f"message {m.name} {{"
            if m.reserved:
                out += "\n" + self._reserved(m.reserved)
            if m.options:
                out += "\n" + _indent(self._option_lines(m.options))
            fields = sorted(m.fields, key=lambda x: x.number) if self.normalize else m.fields
            if fields:
                out += "\n" + "".join(_indent(self.field(x)) for x in fields)
            oneofs = m.oneofs
            if self.normalize:
                oneofs = [OneOf(o.name, sorted(o.fields, key=lambda x: x.number), o.options) for o in oneofs if o.fields]
                oneofs.sort(key=lambda o: o.fields[0].number)
            if oneofs:
                out += "\n" + "".join(_indent(self.oneof(o)) for o in oneofs)
            if m.extensions:
                out += "\n" + self._reserved([list(g) for g in m.extensions], "extensions")
            if m.extends:
                out += "\n" + "".join(_indent(self.extend(e)) for e in m.extends)
            messages = [x for x in m.messages if not (self.normalize and x.is_map_entry)]
            if messages or m.enums:
                out += "\n" + "".join(_indent(self.message(x)) for x in messages)
                out += "".join(_indent(self.enum(x)) for x in m.enums)
            return out + "}\n"
        finally:
            self.scope.pop()

    def oneof(self, o: OneOf) -> str:
        out = f"oneof {o.name} {{"
        if o.options:
            out += "\n" + _indent(self._option_lines(o.options))
        if o.fields:
            out += "\n" + "".join(_indent(self.field(x)) for x in o.fields)
        return out + "}\n"

    def enum(self, e: Enum) -> str:
        out = f"enum {e.name} {{"
        if e.reserved:
            out += "\n" + self._reserved(e.reserved)
        elif e.options or e.values:
            out += "\n"
        if e.options:
            out += _indent(self._option_lines(e.options))
        values = sorted(e.values, key=lambda v: (v.number, v.name)) if self.normalize else e.values
        out += "".join(_indent(self.enum_value(v)) for v in values)
        return out + "}\n"

    def enum_value(self, v: EnumValue) -> str:
        out = f"{v.name} = {v.number}"
        if v.options:
            out += " " + self._options_list([self.option(o) for o in self._opts(v.options)])
        return out + ";\n"

    def extend(self, e: Extend) -> str:
        name = e.name
        if self.normalize and self.symbols is not None:
            full = self.symbols.resolve(name, ".".join(self.scope))
            name = "." + full if full is not None else name
        fields = sorted(e.fields, key=lambda x: x.number) if self.normalize else e.fields
        out = f"extend {name} {{"
        if fields:
            out += "\n" + "".join(_indent(self.field(x)) for x in fields)
        return out + "}\n"

    def rpc(self, r: Rpc) -> str:
        req = self._resolve(r.request) if self.normalize else r.request
        resp = self._resolve(r.response) if self.normalize else r.response
        out = (f"rpc {r.name} ({'stream ' if r.request_stream else ''}{req}) returns "
               f"({'stream ' if r.response_stream else ''}{resp})")
        if r.options:
            out += " {\n" + _indent(self._option_lines(r.options)) + "}"
        return out + ";\n"

    def service(self, s: Service) -> str:
        out = f"service {s.name} {{"
        if s.options:
            out += "\n" + _indent(self._option_lines(s.options))
        if s.rpcs:
            out += "\n" + "".join(_indent(self.rpc(r)) for r in s.rpcs)
        return out + "}\n"

    def file(self) -> str:
        f = self.f
        out = ""
        if f.syntax in ("proto2", "proto3") and (not self.normalize or f.syntax == "proto3"):
            out += f'syntax = "{f.syntax}";\n'
        elif f.edition is not None:
            out += f'edition = "{f.edition}";\n'
        if f.package:
            out += f"package {f.package};\n"
        if f.imports or f.public_imports:
            imports = sorted(set(f.imports)) if self.normalize else f.imports
            public = sorted(set(f.public_imports)) if self.normalize else f.public_imports
            out += "\n" + "".join(f'import "{i}";\n' for i in imports)
            out += "".join(f'import public "{i}";\n' for i in public)
        if f.options:
            out += "\n" + self._option_lines(f.options)
        messages = [m for m in f.messages if not (self.normalize and m.is_map_entry)]
        if messages or f.enums:
            out += "\n" + "".join(self.message(m) for m in messages) + "".join(self.enum(e) for e in f.enums)
        if f.extends:
            out += "\n" + "".join(self.extend(e) for e in f.extends)
        if f.services:
            out += "\n" + "".join(self.service(s) for s in f.services)
        return out


class _Quoted:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _quote_strings(v: Any) -> Any:
    """Message-literal values keep their kind: the parser stores strings of a literal as ``("s", text)``."""
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "s":
        return _Quoted(v[1])
    if isinstance(v, dict):
        return {k: _quote_strings(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_quote_strings(x) for x in v]
    return v


def canonical(f: ProtoFile) -> str:
    return Printer(f).file()


def normalized(f: ProtoFile, symbols: Symbols) -> str:
    return Printer(f, symbols, normalize=True).file()
