"""What a ``.proto`` file declares, as the registry needs it: the elements of Square Wire's parser (which
Confluent's registry uses), kept in declaration order, since a record's message indexes count messages in the
order the schema lists them.

A field's ``type`` is the name as written (``int32``, ``Address``, ``.com.example.Address``, or
``map<string, Address>`` for a map field written as such); a schema read from a serialized
``FileDescriptorProto`` has fully qualified names with a leading dot and its map entries as nested messages
with ``option map_entry = true``, as Confluent reads one. Pure data.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCALARS = ("double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string", "group",
           "message", "bytes", "uint32", "enum", "sfixed32", "sfixed64", "sint32", "sint64")
# descriptor.proto's FieldDescriptorProto.Type numbers, by scalar name (group, message and enum are not scalars)
TYPE_NUMBERS = {name: i + 1 for i, name in enumerate(SCALARS)}
SCALAR_TYPES = frozenset(n for n in SCALARS if n not in ("group", "message", "enum"))
MAX_TAG = (1 << 29) - 1


@dataclass
class Option:
    """``option name = value`` (or ``[name = value]`` on a field). ``kind``: string, bool, enum, number, map
    (a message literal: a dict, repeated keys as lists) or list."""
    name: str
    kind: str
    value: Any
    paren: bool = False


@dataclass
class Field:
    label: str | None          # optional, required, repeated, or None (proto3 singular, map, oneof member)
    type: str
    name: str
    number: int
    default: str | None = None
    json_name: str | None = None
    options: list[Option] = field(default_factory=list)

    @property
    def is_map(self) -> bool:
        return self.type.startswith("map<")


@dataclass
class OneOf:
    name: str
    fields: list[Field] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)


@dataclass
class EnumValue:
    name: str
    number: int
    options: list[Option] = field(default_factory=list)


# reserved: an int range (start, end inclusive) or a name; extensions: ranges
Reserved = tuple[int, int] | str


@dataclass
class Enum:
    name: str
    values: list[EnumValue] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    reserved: list[list[Reserved]] = field(default_factory=list)   # one list per ``reserved`` statement


@dataclass
class Extend:
    name: str
    fields: list[Field] = field(default_factory=list)


@dataclass
class Message:
    name: str
    fields: list[Field] = field(default_factory=list)
    oneofs: list[OneOf] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    enums: list[Enum] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    reserved: list[list[Reserved]] = field(default_factory=list)
    extensions: list[list[tuple[int, int]]] = field(default_factory=list)
    extends: list[Extend] = field(default_factory=list)
    # a map field's entry message goes where protoc puts it: after the nested messages declared before the field
    map_slots: dict[str, int] = field(default_factory=dict)

    @property
    def is_map_entry(self) -> bool:
        return any(o.name == "map_entry" and o.value in (True, "true") for o in self.options)

    def all_fields(self) -> list[Field]:
        return self.fields + [f for o in self.oneofs for f in o.fields]


@dataclass
class Rpc:
    name: str
    request: str
    response: str
    request_stream: bool = False
    response_stream: bool = False
    options: list[Option] = field(default_factory=list)


@dataclass
class Service:
    name: str
    rpcs: list[Rpc] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)


@dataclass
class ProtoFile:
    syntax: str | None = None          # proto2, proto3 (None: not declared, read as proto2)
    package: str | None = None
    imports: list[str] = field(default_factory=list)
    public_imports: list[str] = field(default_factory=list)
    weak_imports: list[str] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    enums: list[Enum] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    extends: list[Extend] = field(default_factory=list)
    edition: str | None = None

    @property
    def proto3(self) -> bool:
        return self.syntax == "proto3"

    def all_imports(self) -> list[str]:
        return self.imports + self.public_imports + self.weak_imports
