"""Names across a schema and its imports: every message and enum by full name (package + nesting), where it
came from (the reference that brought its file in), whether it is a map entry, and Protobuf's scoping rule
for a name used inside a message (innermost scope first, then outwards; a leading dot: fully qualified).

A schema's imports are resolved against its references (name = the import path, as Confluent's clients
name them) and the well-known files (:mod:`.known`); an import neither names is an invalid schema, as is a
field type that resolves to nothing. Pure.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkalite.registry.compat.protobuf.model import Enum, Field, Message, ProtoFile


@dataclass
class TypeInfo:
    package: str
    ref: str | None            # the import path of the file that defines it (None: the schema itself)
    element: Message | Enum
    full: str

    @property
    def is_map(self) -> bool:
        return isinstance(self.element, Message) and self.element.is_map_entry

    def map_type(self) -> str | None:
        if not isinstance(self.element, Message) or not self.element.is_map_entry:
            return None
        by = {f.name: f for f in self.element.fields}
        if "key" not in by or "value" not in by:
            return None
        return f"map<{by['key'].type}, {by['value'].type}>"


@dataclass
class ExtendInfo:
    package: str
    field: Field


class Symbols:
    """Full name -> TypeInfo for one schema and everything it imports (transitively)."""

    def __init__(self) -> None:
        self.types: dict[str, TypeInfo] = {}
        self.extends: dict[str, ExtendInfo] = {}
        self.files: dict[str | None, ProtoFile] = {}

    def add_file(self, f: ProtoFile, ref: str | None) -> None:
        if ref in self.files:
            return
        self.files[ref] = f
        pkg = f.package or ""
        for ext in f.extends:
            for fld in ext.fields:
                self.extends[_join(pkg, fld.name)] = ExtendInfo(pkg, fld)
        for m in f.messages:
            self._add_message(m, pkg, pkg, ref)
        for e in f.enums:
            full = _join(pkg, e.name)
            self.types[full] = TypeInfo(pkg, ref, e, full)

    def _add_message(self, m: Message, pkg: str, scope: str, ref: str | None) -> None:
        full = _join(scope, m.name)
        self.types[full] = TypeInfo(pkg, ref, m, full)
        for ext in m.extends:
            for fld in ext.fields:
                self.extends[_join(full, fld.name)] = ExtendInfo(pkg, fld)
        for n in m.messages:
            self._add_message(n, pkg, full, ref)
        for e in m.enums:
            efull = _join(full, e.name)
            self.types[efull] = TypeInfo(pkg, ref, e, efull)

    def resolve(self, name: str, scope: str) -> str | None:
        """The full name (no leading dot) ``name`` means when used inside ``scope`` (a package or message full
        name), or None."""
        return _resolve(self.types, name, scope)

    def resolve_extend(self, name: str, scope: str) -> str | None:
        return _resolve(self.extends, name, scope)

    def get(self, name: str, scope: str) -> TypeInfo | None:
        full = self.resolve(name, scope)
        return self.types.get(full) if full is not None else None


def _resolve(table: dict[str, object] | dict[str, TypeInfo] | dict[str, ExtendInfo], name: str,
             scope: str) -> str | None:
    """As Confluent's resolver: ``scope.name``, then each enclosing scope's, then ``name`` itself."""
    if name.startswith("."):
        return name[1:] if name[1:] in table else None
    parts = scope.split(".") if scope else []
    while parts:
        full = ".".join(parts) + "." + name
        if full in table:
            return full
        parts.pop()
    return name if name in table else None


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name
