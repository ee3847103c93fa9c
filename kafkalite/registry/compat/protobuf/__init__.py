"""Protobuf schemas, as Confluent's registry handles them.

A schema arrives as ``.proto`` text or as the base64 of a serialized ``FileDescriptorProto`` (what
confluent-kafka's Python serializer registers); either way it is parsed into :mod:`.model` elements, its imports
resolved against its references (reference name = import path) and the well-known files, every type checked,
and stored as Confluent's canonical text (:mod:`.printer`). ``?format=serialized`` gives the descriptor form
back (:mod:`.descriptor`). Compatibility is Confluent's set of rules (:mod:`.diff`).

Rooms: :mod:`.parser` (text), :mod:`.descriptor` (binary), :mod:`.resolve` (names), :mod:`.known`
(well-known files), :mod:`.printer` (canonical and normalized text), :mod:`.diff` (compatibility). Pure.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from kafkalite.registry.compat.protobuf import descriptor, diff, known, parser, printer
from kafkalite.registry.compat.protobuf.model import SCALAR_TYPES, Field, Message, ProtoFile
from kafkalite.registry.compat.protobuf.resolve import Symbols

_MAX_DEPTH = 32


@dataclass
class Schema:
    file: ProtoFile
    symbols: Symbols

    @property
    def package(self) -> str:
        return self.file.package or ""


def _parse_file(text: str) -> ProtoFile:
    try:
        return parser.parse(text)
    except ValueError as first:
        stripped = "".join(text.split())
        if stripped and len(stripped) % 4 == 0 and "{" not in stripped:
            try:
                data = base64.b64decode(stripped, validate=True)
            except (binascii.Error, ValueError):
                data = b""
            if data:
                try:
                    return descriptor.decode(data)
                except ValueError:
                    pass
        raise ValueError(f"Could not parse Protobuf - {first}") from None


def parse(text: str, references: list[Any] | None = None) -> Schema:
    """``references``: (import name, schema text, its own references), as :func:`kafkalite.registry.compat.parse`
    resolves them. A ValueError says why the schema is not valid."""
    f = _parse_file(text)
    symbols = Symbols()
    symbols.add_file(f, None)
    _add_imports(symbols, f, references or [], 0)
    _check_types(f, symbols)
    return Schema(f, symbols)


def _add_imports(symbols: Symbols, f: ProtoFile, references: list[Any], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValueError("imports nested too deeply")
    by_name = {r[0]: r for r in references}
    for path in f.all_imports():
        ref = by_name.get(path)
        if ref is not None:
            _name, text, inner = ref
            key = f"{path}@{hashlib.sha1(text.encode('utf-8')).hexdigest()}"
            if key in symbols.files:
                continue
            dep = _parse_file(text)
            symbols.add_file(dep, key)
            _add_imports(symbols, dep, inner, depth + 1)
        elif known.is_known(path):
            dep_known = known.known(path)
            assert dep_known is not None
            if path not in symbols.files:
                symbols.add_file(dep_known, path)
                _add_imports(symbols, dep_known, [], depth + 1)
        else:
            raise ValueError(f"No reference found for the import \"{path}\" (a reference's name is the "
                             "imported file's path)")


def _check_types(f: ProtoFile, symbols: Symbols) -> None:
    pkg = f.package or ""

    def check_field(fld: Field, scope: str) -> None:
        types = [fld.type]
        if fld.is_map:
            types = [x.strip() for x in fld.type[4:-1].split(",", 1)]
        for t in types:
            if t not in SCALAR_TYPES and symbols.resolve(t, scope) is None:
                raise ValueError(f"Could not resolve type: {t} (field \"{fld.name}\")")

    def walk(m: Message, scope: str) -> None:
        full = f"{scope}.{m.name}" if scope else m.name
        for fld in m.all_fields():
            check_field(fld, full)
        for ext in m.extends:
            for fld in ext.fields:
                check_field(fld, full)
        for n in m.messages:
            walk(n, full)

    for m in f.messages:
        walk(m, pkg)
    for ext in f.extends:
        for fld in ext.fields:
            check_field(fld, pkg)
    for s in f.services:
        for rpc in s.rpcs:
            for t in (rpc.request, rpc.response):
                if symbols.resolve(t, pkg) is None:
                    raise ValueError(f"Could not resolve type: {t} (rpc \"{rpc.name}\")")


def canonical(schema: Schema) -> str:
    return printer.canonical(schema.file)


def normalized(schema: Schema) -> str:
    return printer.normalized(schema.file, schema.symbols)


def serialized(schema: Schema) -> str:
    """``?format=serialized``: the base64 of the schema's ``FileDescriptorProto``."""
    return base64.b64encode(descriptor.encode(schema.file, schema.symbols)).decode("ascii")


def can_read(reader: Schema, writer: Schema, reader_name: str = "new", writer_name: str = "old") -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (Confluent's messages), empty: it can."""
    found = diff.compare(writer.file, reader.file, writer.symbols, reader.symbols)
    return [diff.describe(kind, path, reader_name, writer_name) for kind, path in diff.incompatible(found)]


def message_names(schema: Schema) -> list[str]:
    """Full names of the top-level messages, in order (index 0 is what a record's ``[0]`` indexes mean)."""
    pkg = schema.package
    return [f"{pkg}.{m.name}" if pkg else m.name for m in schema.file.messages]
