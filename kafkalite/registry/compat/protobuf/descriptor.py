"""``FileDescriptorProto`` bytes <-> :mod:`.model`, on our own Protobuf wire codec (varints and
length-delimited fields; ``descriptor.proto``'s field numbers).

Clients send and fetch Protobuf schemas in two forms: ``.proto`` text, and the base64 of a serialized
``FileDescriptorProto`` (confluent-kafka's Python and Go serializers register that form, and read schemas with
``?format=serialized``). Decoding follows what Confluent's ``ProtobufSchema`` makes of a descriptor: type names
stay fully qualified (``.pkg.Msg``), map entries stay nested messages with ``option map_entry = true``, a
proto3 ``optional`` field is a labelled field (its synthetic oneof gone), labels are left out in proto3, and
defaults are kept only in proto2. Encoding resolves every type (``TYPE_MESSAGE``/``TYPE_ENUM`` with a full
``type_name``), writes ``map<K, V>`` fields as a repeated ``…Entry`` message and proto3 ``optional`` fields with
their synthetic oneof, as protoc does. The standard options are carried both ways; custom options (extensions
of the option messages) are left out of the serialized form. Pure.
"""
from __future__ import annotations

from kafkalite.registry.compat.protobuf.model import (
    MAX_TAG,
    SCALAR_TYPES,
    TYPE_NUMBERS,
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

_TYPE_NAMES = {v: k for k, v in TYPE_NUMBERS.items()}
_LABELS = {"optional": 1, "required": 2, "repeated": 3}
_MAX_DEPTH = 64

# standard options: name -> (field number, kind, enum names by number)
_OptSpec = dict[str, tuple[int, str, dict[int, str] | None]]
FILE_OPTIONS: _OptSpec = {
    "java_package": (1, "string", None), "java_outer_classname": (8, "string", None),
    "java_multiple_files": (10, "bool", None), "java_generate_equals_and_hash": (20, "bool", None),
    "java_string_check_utf8": (27, "bool", None),
    "optimize_for": (9, "enum", {1: "SPEED", 2: "CODE_SIZE", 3: "LITE_RUNTIME"}),
    "go_package": (11, "string", None), "cc_generic_services": (16, "bool", None),
    "java_generic_services": (17, "bool", None), "py_generic_services": (18, "bool", None),
    "deprecated": (23, "bool", None), "cc_enable_arenas": (31, "bool", None),
    "objc_class_prefix": (36, "string", None), "csharp_namespace": (37, "string", None),
    "swift_prefix": (39, "string", None), "php_class_prefix": (40, "string", None),
    "php_namespace": (41, "string", None), "php_metadata_namespace": (44, "string", None),
    "ruby_package": (45, "string", None),
}
MESSAGE_OPTIONS: _OptSpec = {
    "message_set_wire_format": (1, "bool", None), "no_standard_descriptor_accessor": (2, "bool", None),
    "deprecated": (3, "bool", None), "map_entry": (7, "bool", None),
}
FIELD_OPTIONS: _OptSpec = {
    "ctype": (1, "enum", {0: "STRING", 1: "CORD", 2: "STRING_PIECE"}), "packed": (2, "bool", None),
    "deprecated": (3, "bool", None), "lazy": (5, "bool", None),
    "jstype": (6, "enum", {0: "JS_NORMAL", 1: "JS_STRING", 2: "JS_NUMBER"}), "weak": (10, "bool", None),
    "unverified_lazy": (15, "bool", None), "debug_redact": (16, "bool", None),
}
ENUM_OPTIONS: _OptSpec = {"allow_alias": (2, "bool", None), "deprecated": (3, "bool", None)}
ENUM_VALUE_OPTIONS: _OptSpec = {"deprecated": (1, "bool", None), "debug_redact": (3, "bool", None)}
SERVICE_OPTIONS: _OptSpec = {"deprecated": (33, "bool", None)}
METHOD_OPTIONS: _OptSpec = {
    "deprecated": (33, "bool", None),
    "idempotency_level": (34, "enum", {0: "IDEMPOTENCY_UNKNOWN", 1: "NO_SIDE_EFFECTS", 2: "IDEMPOTENT"}),
}
ONEOF_OPTIONS: _OptSpec = {}


class DescriptorError(ValueError):
    pass


# -- the wire codec -----------------------------------------------------------------------------------
def _varint(v: int) -> bytes:
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def varint(self, num: int, v: int) -> None:
        self.buf += _varint(num << 3) + _varint(v)

    def chunk(self, num: int, v: bytes) -> None:
        self.buf += _varint((num << 3) | 2) + _varint(len(v)) + v

    def text(self, num: int, v: str) -> None:
        self.chunk(num, v.encode("utf-8"))


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise DescriptorError("truncated or overlong varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field: an int for varints and fixed widths, bytes for length-delimited."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = _read_varint(data, pos)
            out.append((num, v))
        elif wt == 2:
            n, pos = _read_varint(data, pos)
            if pos + n > len(data):
                raise DescriptorError("truncated length-delimited field")
            out.append((num, data[pos:pos + n]))
            pos += n
        elif wt == 1:
            pos += 8
            out.append((num, 0))
        elif wt == 5:
            pos += 4
            out.append((num, 0))
        else:
            raise DescriptorError(f"unsupported wire type {wt}")
        if pos > len(data):
            raise DescriptorError("truncated field")
    return out


def _s(v: int | bytes) -> str:
    if not isinstance(v, bytes):
        raise DescriptorError("expected a string field")
    try:
        return v.decode("utf-8")
    except UnicodeDecodeError:
        raise DescriptorError("a string field is not UTF-8") from None


def _b(v: int | bytes) -> bytes:
    if not isinstance(v, bytes):
        raise DescriptorError("expected a message field")
    return v


def _i(v: int | bytes) -> int:
    if isinstance(v, bytes):
        raise DescriptorError("expected a varint field")
    return v - (1 << 64) if v >= 1 << 63 else v


def _i32(v: int | bytes) -> int:
    n = _i(v) & 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


# -- decode -------------------------------------------------------------------------------------------
def decode(data: bytes) -> ProtoFile:
    f = ProtoFile()
    deps: list[str] = []
    public: set[int] = set()
    weak: set[int] = set()
    raw_messages: list[bytes] = []
    for num, v in _fields(data):
        if num == 2:
            f.package = _s(v) or None
        elif num == 3:
            deps.append(_s(v))
        elif num == 4:
            raw_messages.append(_b(v))
        elif num == 5:
            f.enums.append(_decode_enum(_b(v)))
        elif num == 6:
            f.services.append(_decode_service(_b(v)))
        elif num == 7:
            _add_extension(f.extends, _b(v), None)
        elif num == 8:
            f.options = _decode_options(_b(v), FILE_OPTIONS)
        elif num == 10:
            public.add(_i(v))
        elif num == 11:
            weak.add(_i(v))
        elif num == 12:
            syntax = _s(v)
            f.syntax = syntax if syntax in ("proto2", "proto3") else None
    for raw in raw_messages:   # syntax decides labels and defaults, and may come after the messages
        f.messages.append(_decode_message(raw, f.proto3, 0))
    for i, d in enumerate(deps):
        (f.public_imports if i in public else f.weak_imports if i in weak else f.imports).append(d)
    return f


def _decode_options(data: bytes, spec: _OptSpec) -> list[Option]:
    by_num = {n: (name, kind, enums) for name, (n, kind, enums) in spec.items()}
    out: list[Option] = []
    for num, v in _fields(data):
        known = by_num.get(num)
        if known is None:
            continue   # a custom option (an extension): not carried
        name, kind, enums = known
        if kind == "string":
            out.append(Option(name, "string", _s(v)))
        elif kind == "bool":
            out.append(Option(name, "bool", "true" if _i(v) else "false"))
        else:
            out.append(Option(name, "enum", (enums or {}).get(_i(v), str(_i(v)))))
    return out


def _decode_field(data: bytes, proto3: bool) -> tuple[Field, int | None, bool, str]:
    """(field, oneof index, proto3_optional, extendee)."""
    name, number, label, type_num, type_name = "", 0, 1, 0, ""
    default: str | None = None
    json_name: str | None = None
    options: list[Option] = []
    oneof: int | None = None
    p3opt = False
    extendee = ""
    for num, v in _fields(data):
        if num == 1:
            name = _s(v)
        elif num == 2:
            extendee = _s(v)
        elif num == 3:
            number = _i32(v)
        elif num == 4:
            label = _i(v)
        elif num == 5:
            type_num = _i(v)
        elif num == 6:
            type_name = _s(v)
        elif num == 7:
            default = _s(v)
        elif num == 8:
            options = _decode_options(_b(v), FIELD_OPTIONS)
        elif num == 9:
            oneof = _i(v)
        elif num == 10:
            json_name = _s(v)
        elif num == 17:
            p3opt = bool(_i(v))
    if type_name:
        type_ = type_name
    elif type_num in _TYPE_NAMES and _TYPE_NAMES[type_num] in SCALAR_TYPES:
        type_ = _TYPE_NAMES[type_num]
    else:
        raise DescriptorError(f"field {name!r} has no type")
    lab: str | None
    if p3opt:
        lab = "optional"
    elif label == 3:
        lab = "repeated"
    elif label == 2:
        lab = None if proto3 else "required"
    else:
        lab = None if proto3 else "optional"
    fld = Field(lab, type_, name, number, None if proto3 else default, json_name, options)
    return fld, oneof, p3opt, extendee


def _add_extension(extends: list[Extend], data: bytes, proto3: bool | None) -> None:
    fld, _, _, extendee = _decode_field(data, bool(proto3))
    for ext in extends:
        if ext.name == extendee:
            ext.fields.append(fld)
            return
    extends.append(Extend(extendee, [fld]))


def _decode_message(data: bytes, proto3: bool, depth: int) -> Message:
    if depth > _MAX_DEPTH:
        raise DescriptorError("messages nested too deeply")
    m = Message("")
    oneof_decls: list[tuple[str, list[Option]]] = []
    members: dict[int, list[Field]] = {}
    for num, v in _fields(data):
        if num == 1:
            m.name = _s(v)
        elif num == 2:
            fld, oneof, p3opt, _ = _decode_field(_b(v), proto3)
            if oneof is not None and not p3opt:
                fld.label = None
                members.setdefault(oneof, []).append(fld)
            else:
                m.fields.append(fld)
        elif num == 3:
            m.messages.append(_decode_message(_b(v), proto3, depth + 1))
        elif num == 4:
            m.enums.append(_decode_enum(_b(v)))
        elif num == 5:
            m.extensions.append([_range(_b(v), exclusive=True)])
        elif num == 6:
            _add_extension(m.extends, _b(v), proto3)
        elif num == 7:
            m.options = _decode_options(_b(v), MESSAGE_OPTIONS)
        elif num == 8:
            oname, oopts = "", []
            for n2, v2 in _fields(_b(v)):
                if n2 == 1:
                    oname = _s(v2)
                elif n2 == 2:
                    oopts = _decode_options(_b(v2), ONEOF_OPTIONS)
            oneof_decls.append((oname, oopts))
        elif num == 9:
            m.reserved.append([_range(_b(v), exclusive=True)])
        elif num == 10:
            m.reserved.append([_s(v)])
    for i, (oname, oopts) in enumerate(oneof_decls):
        if members.get(i):
            m.oneofs.append(OneOf(oname, members[i], oopts))
    return m


def _range(data: bytes, exclusive: bool) -> tuple[int, int]:
    start = end = 0
    for num, v in _fields(data):
        if num == 1:
            start = _i32(v)
        elif num == 2:
            end = _i32(v)
    return start, (end - 1 if exclusive else end)


def _decode_enum(data: bytes) -> Enum:
    e = Enum("")
    for num, v in _fields(data):
        if num == 1:
            e.name = _s(v)
        elif num == 2:
            ev = EnumValue("", 0)
            for n2, v2 in _fields(_b(v)):
                if n2 == 1:
                    ev.name = _s(v2)
                elif n2 == 2:
                    ev.number = _i32(v2)
                elif n2 == 3:
                    ev.options = _decode_options(_b(v2), ENUM_VALUE_OPTIONS)
            e.values.append(ev)
        elif num == 3:
            e.options = _decode_options(_b(v), ENUM_OPTIONS)
        elif num == 4:
            e.reserved.append([_range(_b(v), exclusive=False)])
        elif num == 5:
            e.reserved.append([_s(v)])
    return e


def _decode_service(data: bytes) -> Service:
    s = Service("")
    for num, v in _fields(data):
        if num == 1:
            s.name = _s(v)
        elif num == 2:
            rpc = Rpc("", "", "")
            for n2, v2 in _fields(_b(v)):
                if n2 == 1:
                    rpc.name = _s(v2)
                elif n2 == 2:
                    rpc.request = _s(v2)
                elif n2 == 3:
                    rpc.response = _s(v2)
                elif n2 == 4:
                    rpc.options = _decode_options(_b(v2), METHOD_OPTIONS)
                elif n2 == 5:
                    rpc.request_stream = bool(_i(v2))
                elif n2 == 6:
                    rpc.response_stream = bool(_i(v2))
            s.rpcs.append(rpc)
        elif num == 3:
            s.options = _decode_options(_b(v), SERVICE_OPTIONS)
    return s


# -- encode -------------------------------------------------------------------------------------------
def encode(f: ProtoFile, symbols: Symbols, name: str = "default") -> bytes:
    """The ``FileDescriptorProto`` of ``f`` (types resolved through ``symbols``, which holds ``f`` itself
    and its imports)."""
    w = _Writer()
    w.text(1, name)
    pkg = f.package or ""
    if pkg:
        w.text(2, pkg)
    deps = f.imports + f.public_imports + f.weak_imports
    for d in deps:
        w.text(3, d)
    for m in f.messages:
        w.chunk(4, _encode_message(m, f, symbols, pkg))
    for e in f.enums:
        w.chunk(5, _encode_enum(e))
    for s in f.services:
        w.chunk(6, _encode_service(s, symbols, pkg))
    for ext in f.extends:
        for fld in ext.fields:
            w.chunk(7, _encode_field(fld, f, symbols, pkg, None, False, _extendee(ext, symbols, pkg)))
    opts = _encode_options(f.options, FILE_OPTIONS)
    if opts:
        w.chunk(8, opts)
    for i in range(len(f.imports), len(f.imports) + len(f.public_imports)):
        w.varint(10, i)
    for i in range(len(f.imports) + len(f.public_imports), len(deps)):
        w.varint(11, i)
    if f.syntax == "proto3":
        w.text(12, "proto3")
    return bytes(w.buf)


def _extendee(ext: Extend, symbols: Symbols, scope: str) -> str:
    full = symbols.resolve(ext.name, scope)
    return "." + (full if full is not None else ext.name.lstrip("."))


def _encode_options(options: list[Option], spec: _OptSpec) -> bytes:
    w = _Writer()
    for o in options:
        known = spec.get(o.name) if not o.paren else None
        if known is None:
            continue
        num, kind, enums = known
        if kind == "string" and o.kind == "string":
            w.text(num, str(o.value))
        elif kind == "bool" and o.kind == "bool":
            w.varint(num, 1 if o.value in ("true", True) else 0)
        elif kind == "enum":
            by_name = {v: k for k, v in (enums or {}).items()}
            if str(o.value) in by_name:
                w.varint(num, by_name[str(o.value)])
    return bytes(w.buf)


def map_entry_name(field_name: str) -> str:
    """protoc's name for a map field's entry message: ``my_field`` -> ``MyFieldEntry``."""
    out: list[str] = []
    upper = True
    for c in field_name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out) + "Entry"


def _split_map(type_: str) -> tuple[str, str]:
    key, value = type_[4:-1].split(",", 1)
    return key.strip(), value.strip()


def _encode_field(fld: Field, f: ProtoFile, symbols: Symbols, scope: str, oneof: int | None, p3opt: bool,
                  extendee: str | None = None, type_override: str | None = None) -> bytes:
    w = _Writer()
    w.text(1, fld.name)
    if extendee is not None:
        w.text(2, extendee)
    w.varint(3, fld.number)
    label = 3 if fld.is_map else _LABELS.get(fld.label or "", 1)
    w.varint(4, label)
    type_ = type_override or fld.type
    if type_ in SCALAR_TYPES:
        w.varint(5, TYPE_NUMBERS[type_])
    else:
        if type_override is not None:
            full: str | None = type_override.lstrip(".")
            kind = 11
        else:
            info = symbols.get(type_, scope)
            if info is None:
                raise DescriptorError(f"Could not resolve type: {type_}")
            full = info.full
            kind = 14 if isinstance(info.element, Enum) else 11
        w.varint(5, kind)
        w.text(6, "." + str(full))
    if fld.default is not None and not f.proto3:
        w.text(7, fld.default)
    opts = _encode_options(fld.options, FIELD_OPTIONS)
    if opts:
        w.chunk(8, opts)
    if oneof is not None:
        w.varint(9, oneof)
    if fld.json_name is not None:
        w.text(10, fld.json_name)
    if p3opt:
        w.varint(17, 1)
    return bytes(w.buf)


def _encode_message(m: Message, f: ProtoFile, symbols: Symbols, scope: str) -> bytes:
    full = f"{scope}.{m.name}" if scope else m.name
    w = _Writer()
    w.text(1, m.name)
    entries: list[tuple[int, Message]] = []
    synthetic_next = len(m.oneofs)
    for fld in m.fields:
        p3opt = f.proto3 and fld.label == "optional"
        if fld.is_map:
            entry = Message(map_entry_name(fld.name), options=[Option("map_entry", "bool", "true")])
            key, value = _split_map(fld.type)
            entry.fields = [Field("optional", key, "key", 1), Field("optional", value, "value", 2)]
            entries.append((m.map_slots.get(fld.name, len(m.messages)), entry))
            w.chunk(2, _encode_field(fld, f, symbols, full, None, False, type_override=f".{full}.{entry.name}"))
        else:
            synthetic = None
            if p3opt:
                synthetic = synthetic_next
                synthetic_next += 1
            w.chunk(2, _encode_field(fld, f, symbols, full, synthetic, p3opt))
    for i, o in enumerate(m.oneofs):
        for fld in o.fields:
            w.chunk(2, _encode_field(fld, f, symbols, full, i, False))
    for i in range(len(m.messages) + 1):
        for slot, entry in entries:
            if slot == i:
                w.chunk(3, _encode_message(entry, _as_proto2(f), symbols, full))
        if i < len(m.messages):
            w.chunk(3, _encode_message(m.messages[i], f, symbols, full))
    for e in m.enums:
        w.chunk(4, _encode_enum(e))
    for group in m.extensions:
        for start, end in group:
            r = _Writer()
            r.varint(1, start)
            r.varint(2, min(end, MAX_TAG) + 1)
            w.chunk(5, bytes(r.buf))
    for ext in m.extends:
        for fld in ext.fields:
            w.chunk(6, _encode_field(fld, f, symbols, full, None, False, _extendee(ext, symbols, full)))
    opts = _encode_options(m.options, MESSAGE_OPTIONS)
    if opts:
        w.chunk(7, opts)
    for o in m.oneofs:
        w.chunk(8, _name_only(o.name))
    if f.proto3:
        for fld in m.fields:
            if fld.label == "optional" and not fld.is_map:
                w.chunk(8, _name_only("_" + fld.name))
    _encode_reserved(w, m.reserved, 9, 10, exclusive=True)
    return bytes(w.buf)


def _as_proto2(f: ProtoFile) -> ProtoFile:
    """A map entry's key and value are plain optional fields, never proto3 ``optional`` ones."""
    return ProtoFile(syntax="proto2", package=f.package)


def _name_only(name: str) -> bytes:
    w = _Writer()
    w.text(1, name)
    return bytes(w.buf)


def _encode_reserved(w: _Writer, reserved: list[list[Reserved]], range_num: int, name_num: int,
                     exclusive: bool) -> None:
    for group in reserved:
        for r in group:
            if isinstance(r, str):
                w.text(name_num, r)
            else:
                rw = _Writer()
                rw.varint(1, r[0])
                rw.varint(2, r[1] + 1 if exclusive else r[1])
                w.chunk(range_num, bytes(rw.buf))


def _encode_enum(e: Enum) -> bytes:
    w = _Writer()
    w.text(1, e.name)
    for v in e.values:
        vw = _Writer()
        vw.text(1, v.name)
        vw.varint(2, v.number)
        opts = _encode_options(v.options, ENUM_VALUE_OPTIONS)
        if opts:
            vw.chunk(3, opts)
        w.chunk(2, bytes(vw.buf))
    opts = _encode_options(e.options, ENUM_OPTIONS)
    if opts:
        w.chunk(3, opts)
    _encode_reserved(w, e.reserved, 4, 5, exclusive=False)
    return bytes(w.buf)


def _encode_service(s: Service, symbols: Symbols, scope: str) -> bytes:
    w = _Writer()
    w.text(1, s.name)
    for rpc in s.rpcs:
        rw = _Writer()
        rw.text(1, rpc.name)
        for num, type_ in ((2, rpc.request), (3, rpc.response)):
            full = symbols.resolve(type_, scope)
            if full is None:
                raise DescriptorError(f"Could not resolve type: {type_}")
            rw.text(num, "." + full)
        opts = _encode_options(rpc.options, METHOD_OPTIONS)
        if opts:
            rw.chunk(4, opts)
        if rpc.request_stream:
            rw.varint(5, 1)
        if rpc.response_stream:
            rw.varint(6, 1)
        w.chunk(2, bytes(rw.buf))
    opts = _encode_options(s.options, SERVICE_OPTIONS)
    if opts:
        w.chunk(3, opts)
    return bytes(w.buf)
