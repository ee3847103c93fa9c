"""Confluent's Protobuf compatibility rules: the differences between an original (writer) and an updated
(reader) schema, each with a kind, at a path (``#/Message/3``), and which kinds break compatibility.

The walk, as Confluent's ``SchemaDiff``: the package; top-level and nested messages and enums matched by name
(a message moved or reordered is fine: message indexes refer to the schema of the record's id); in a message,
every field by number, oneof members included, whatever oneof they sit in: a field added or removed is fine
unless it is ``required``; a renamed field is fine; its type may change only within one group of wire-
compatible scalars (int32/int64/uint32/uint64/bool and enums; sint32/sint64; string/bytes; fixed32/sfixed32;
fixed64/sfixed64; float; double), never between scalar, message and map; a numeric field's label may not
change (packed vs not), a string/bytes one's may; a message-typed field keeps its type's name (a type from
another referenced schema is compared field by field). Oneofs: members removed from a surviving oneof break
compatibility (a whole oneof removed does not); fields that were independent must not become mutually
exclusive (several top-level fields moved into a oneof, or one joining an existing oneof). Enum constants
may be added, removed and renamed. Pure.
"""
from __future__ import annotations

from kafkalite.registry.compat.protobuf.model import SCALAR_TYPES, Enum, Field, Message, ProtoFile
from kafkalite.registry.compat.protobuf.resolve import Symbols, TypeInfo

COMPATIBLE = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED", "ENUM_CONST_CHANGED",
    "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED",
    "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED", "ONEOF_FIELD_ADDED",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
})

# each message's two %s are (reader, writer): "new"/"old" for BACKWARD, "old"/"new" for FORWARD
_DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The package at '{p}' in the %s schema does not match the package in the %s schema",
    "MESSAGE_REMOVED": "The %s schema is missing a MESSAGE type at path '{p}' in the %s schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{p}' in the %s schema does not match the %s schema",
    "FIELD_SCALAR_KIND_CHANGED": "The kind of a SCALAR field at path '{p}' in the %s schema does not match its "
                                 "kind in the %s schema",
    "FIELD_NAMED_TYPE_CHANGED": "The type of a MESSAGE field at path '{p}' in the %s schema does not match its "
                                "type in the %s schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label for a NUMERIC field at path '{p}' in the %s schema does not match "
                                   "its label in the %s schema",
    "REQUIRED_FIELD_ADDED": "A required field  at path '{p}' in the %s schema is missing in the %s schema",
    "REQUIRED_FIELD_REMOVED": "The %s schema is missing a required field at path: '{p}' in the %s schema",
    "ONEOF_FIELD_REMOVED": "The %s schema is missing a oneof field at path '{p}' in the %s schema",
    "ONEOF_FIELD_MOVED_TO_TOP_LEVEL": "The oneof field at path '{p}' in the %s schema was moved out of its oneof "
                                      "to a top-level field in the %s schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '{p}' in the %s schema are outside a "
                                      "oneof in the %s schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field in the oneof at path '{p}' in the %s schema is outside an existing "
                                     "oneof in the %s schema",
}

_SCALAR_KINDS = {
    **dict.fromkeys(("int32", "int64", "uint32", "uint64", "bool"), "GENERAL_NUMBER"),
    **dict.fromkeys(("sint32", "sint64"), "SIGNED_NUMBER"),
    **dict.fromkeys(("string", "bytes"), "STRING_OR_BYTES"),
    **dict.fromkeys(("fixed32", "sfixed32"), "FIXED32"),
    **dict.fromkeys(("fixed64", "sfixed64"), "FIXED64"),
    "float": "FLOAT", "double": "DOUBLE",
}


def describe(kind: str, path: str, reader: str, writer: str) -> str:
    text = _DESCRIPTIONS.get(kind, "").replace("{p}", path)
    if text:
        text = text.replace("%s", reader, 1).replace("%s", writer, 1)
    return f'{{errorType:"{kind}", description:"{text}"}}'


class Context:
    def __init__(self, original: Symbols, update: Symbols, orig_pkg: str, upd_pkg: str) -> None:
        self.symbols = {True: original, False: update}
        self.pkg = {True: orig_pkg, False: upd_pkg}
        self.path: list[str] = []
        self.names: list[str] = []
        self.schemas: set[int] = set()
        self.diffs: list[tuple[str, str]] = []   # (kind, path)

    def sub(self) -> Context:
        c = Context(self.symbols[True], self.symbols[False], self.pkg[True], self.pkg[False])
        c.schemas = set(self.schemas)
        c.path = list(self.path)
        c.names = list(self.names)
        return c

    def scope(self, original: bool) -> str:
        return ".".join(x for x in [self.pkg[original], *self.names] if x)

    def resolve(self, name: str, original: bool) -> str | None:
        return self.symbols[original].resolve(name, self.scope(original))

    def get(self, name: str, original: bool) -> TypeInfo | None:
        full = self.resolve(name, original)
        return self.symbols[original].types.get(full) if full is not None else None

    def add(self, kind: str, *extra: str) -> None:
        self.diffs.append((kind, "#/" + "/".join([*self.path, *extra])))

    def compatible(self) -> bool:
        return all(k in COMPATIBLE for k, _ in self.diffs)


def compare(original: ProtoFile, update: ProtoFile, orig_symbols: Symbols, upd_symbols: Symbols) -> list[tuple[str, str]]:
    """Every difference (kind, path) from ``original`` to ``update``."""
    ctx = Context(orig_symbols, upd_symbols, original.package or "", update.package or "")
    if (original.package or None) != (update.package or None):
        ctx.add("PACKAGE_CHANGED")
    compare_types(ctx, original.messages, original.enums, update.messages, update.enums)
    return ctx.diffs


def incompatible(diffs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [d for d in diffs if d[0] not in COMPATIBLE]


def compare_types(ctx: Context, orig_msgs: list[Message], orig_enums: list[Enum], upd_msgs: list[Message],
                  upd_enums: list[Enum]) -> None:
    om = {m.name: (i, m) for i, m in enumerate(orig_msgs)}
    um = {m.name: (i, m) for i, m in enumerate(upd_msgs)}
    for name in sorted(set(om) | set(um)):
        ctx.path.append(name)
        ctx.names.append(name)
        try:
            if name not in um:
                info = ctx.get(name, True)
                if info is not None and not info.is_map:
                    ctx.add("MESSAGE_REMOVED")
            elif name not in om:
                info = ctx.get(name, False)
                if info is not None and not info.is_map:
                    ctx.add("MESSAGE_ADDED")
            else:
                compare_messages(ctx, om[name][1], um[name][1])
                if om[name][0] != um[name][0]:
                    ctx.add("MESSAGE_MOVED")
        finally:
            ctx.path.pop()
            ctx.names.pop()
    oe = {e.name: e for e in orig_enums}
    ue = {e.name: e for e in upd_enums}
    for name in sorted(set(oe) | set(ue)):
        ctx.path.append(name)
        try:
            if name not in ue:
                ctx.add("ENUM_REMOVED")
            elif name not in oe:
                ctx.add("ENUM_ADDED")
            else:
                _compare_enums(ctx, oe[name], ue[name])
        finally:
            ctx.path.pop()


def _compare_enums(ctx: Context, original: Enum, update: Enum) -> None:
    ob = {v.number: v for v in original.values}
    ub = {v.number: v for v in update.values}
    for n in sorted(set(ob) | set(ub)):
        if n not in ub:
            ctx.add("ENUM_CONST_REMOVED", str(n))
        elif n not in ob:
            ctx.add("ENUM_CONST_ADDED", str(n))
        elif ob[n].name != ub[n].name:
            ctx.add("ENUM_CONST_CHANGED", str(n))


def _collect(m: Message) -> tuple[dict[int, Field], dict[int, str], dict[str, list[Field]]]:
    by_tag = {f.number: f for f in m.fields}
    tag_oneof: dict[int, str] = {}
    oneofs: dict[str, list[Field]] = {}
    for o in m.oneofs:
        oneofs[o.name] = o.fields
        for f in o.fields:
            by_tag[f.number] = f
            tag_oneof[f.number] = o.name
    return by_tag, tag_oneof, oneofs


def compare_messages(ctx: Context, original: Message, update: Message) -> None:
    if id(original) not in ctx.schemas:
        ctx.schemas.add(id(original))
        try:
            _compare_fields(ctx, original, update)
        finally:
            ctx.schemas.discard(id(original))
    compare_types(ctx, original.messages, original.enums, update.messages, update.enums)


def _compare_fields(ctx: Context, original: Message, update: Message) -> None:
    o_tags, o_oneof, o_oneofs = _collect(original)
    u_tags, u_oneof, u_oneofs = _collect(update)
    deleted = {name for name, fields in o_oneofs.items()
               if name not in u_oneofs and not any(f.number in u_tags for f in fields)}
    for o in update.oneofs:   # fields that were independent and now exclude each other
        groups: set[str] = set()
        moved_in = 0
        for f in o.fields:
            if f.number in o_oneof:
                groups.add("oneof:" + o_oneof[f.number])
            elif f.number in o_tags:
                groups.add(f"field:{f.number}")
                moved_in += 1
        if len(groups) > 1:
            ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF", o.name)
    for name in sorted(set(o_oneofs) | set(u_oneofs)):
        if name not in u_oneofs:
            ctx.add("ONEOF_REMOVED", name)
        elif name not in o_oneofs:
            ctx.add("ONEOF_ADDED", name)
    for tag in sorted(set(o_tags) | set(u_tags)):
        of, uf = o_tags.get(tag), u_tags.get(tag)
        oo, uo = o_oneof.get(tag), u_oneof.get(tag)
        if uf is None:
            assert of is not None
            if oo is not None:
                if oo not in deleted:
                    ctx.add("ONEOF_FIELD_REMOVED", oo, str(tag))
            else:
                ctx.add("REQUIRED_FIELD_REMOVED" if of.label == "required" else "FIELD_REMOVED", str(tag))
        elif of is None:
            if uo is not None:
                ctx.add("ONEOF_FIELD_ADDED", uo, str(tag))
            else:
                ctx.add("REQUIRED_FIELD_ADDED" if uf.label == "required" else "FIELD_ADDED", str(tag))
        else:
            if oo is not None and uo is None:
                ctx.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", str(tag))
            where = [uo, str(tag)] if uo is not None else [str(tag)]
            ctx.path.extend(where)
            try:
                compare_field(ctx, of, uf)
            finally:
                del ctx.path[-len(where):]


def compare_field(ctx: Context, original: Field, update: Field) -> None:
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED")
    _labels_and_types(ctx, original.label, update.label, original.type, update.type)


def _kind(ctx: Context, type_: str, original: bool) -> str:
    if type_ in SCALAR_TYPES:
        return "SCALAR"
    if type_.startswith("map<"):
        return "MAP"
    info = ctx.get(type_, original)
    return "SCALAR" if info is not None and isinstance(info.element, Enum) else "MESSAGE"


def _scalar_kind(ctx: Context, type_: str, original: bool) -> str:
    info = ctx.get(type_, original) if type_ not in SCALAR_TYPES else None
    if info is not None and isinstance(info.element, Enum):
        return "GENERAL_NUMBER"
    return _SCALAR_KINDS.get(type_, "ANY")


def _as_map(ctx: Context, type_: str, original: bool) -> str:
    if type_ in SCALAR_TYPES or type_.startswith("map<"):
        return type_
    info = ctx.get(type_, original)
    mt = info.map_type() if info is not None else None
    return mt if mt is not None else type_


def _labels_and_types(ctx: Context, olabel: str | None, ulabel: str | None, otype: str, utype: str) -> None:
    otype = _as_map(ctx, otype, True)
    utype = _as_map(ctx, utype, False)
    ok, uk = _kind(ctx, otype, True), _kind(ctx, utype, False)
    if ok != uk:
        ctx.add("FIELD_KIND_CHANGED")
    elif ok == "SCALAR":
        osk, usk = _scalar_kind(ctx, otype, True), _scalar_kind(ctx, utype, False)
        if osk != usk:
            ctx.add("FIELD_SCALAR_KIND_CHANGED")
        elif olabel is not None and ulabel is not None and olabel != ulabel:
            if osk == "STRING_OR_BYTES":
                ctx.add("FIELD_STRING_OR_BYTES_LABEL_CHANGED")
            elif osk != "ANY":
                ctx.add("FIELD_NUMERIC_LABEL_CHANGED")
    elif ok == "MESSAGE":
        _message_types(ctx, otype, utype)
    elif ok == "MAP":
        okey, ovalue = (x.strip() for x in otype[4:-1].split(",", 1))
        ukey, uvalue = (x.strip() for x in utype[4:-1].split(",", 1))
        _labels_and_types(ctx, None, None, okey, ukey)
        _labels_and_types(ctx, None, None, ovalue, uvalue)


def _local(full: str, pkg: str) -> str:
    return full[len(pkg) + 1:] if pkg and full.startswith(pkg + ".") else full


def _message_types(ctx: Context, otype: str, utype: str) -> None:
    ofull, ufull = ctx.resolve(otype, True), ctx.resolve(utype, False)
    if ofull is None or ufull is None:
        if otype != utype:
            ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    oinfo, uinfo = ctx.symbols[True].types[ofull], ctx.symbols[False].types[ufull]
    olocal, ulocal = _local(ofull, oinfo.package), _local(ufull, uinfo.package)
    if olocal != ulocal:
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
        return
    if oinfo.ref == uinfo.ref:
        return   # both local, or both from the same referenced schema version: compared as types already
    if not isinstance(oinfo.element, Message) or not isinstance(uinfo.element, Message):
        return
    sub = ctx.sub()
    sub.pkg = {True: oinfo.package, False: uinfo.package}
    sub.names = olocal.split(".")
    sub.path = olocal.split(".")
    compare_messages(sub, oinfo.element, uinfo.element)
    ctx.diffs.extend(sub.diffs)
    if not sub.compatible():
        ctx.add("FIELD_NAMED_TYPE_CHANGED")
