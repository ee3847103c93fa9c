"""A ``.proto`` text parser (proto2 and proto3; editions are read as far as their syntax goes) into
:mod:`.model` elements, checking what protoc checks of one file on its own: names and numbers unique per
scope, field numbers in 1..2^29-1 outside 19000..19999, proto3's rules (no ``required``, no defaults, an
enum's first value 0), map keys an integral or string type. Types are checked later, against the file's
imports (:mod:`.resolve`).

Tokens: identifiers (dotted names are put together by the grammar), integers (decimal, hex, octal), floats,
strings (single or double quoted, C escapes, adjacent strings concatenated), punctuation; ``//`` and
``/* */`` comments are skipped. Proto2 groups are refused (Confluent's registry drops them too).
Every error is :class:`ProtoError` (a ValueError) naming the line.
"""
from __future__ import annotations

import re
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

MAX_TEXT = 1 << 20
_MAX_DEPTH = 64
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>-?(?:0[xX][0-9A-Fa-f]+|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fF]?|inf|nan)(?![A-Za-z0-9_]))
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<sym>[{}\[\]()<>;,=.:/+-])
""", re.VERBOSE | re.DOTALL)
_ESC = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'",
        '"': '"', "?": "?"}
_MAP_KEYS = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32",
             "sfixed64", "bool", "string"}
_INT = re.compile(r"^-?(0[xX][0-9A-Fa-f]+|0[0-7]*|[1-9]\d*)$")


class ProtoError(ValueError):
    pass


def _unquote(tok: str) -> str:
    body = tok[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        e = body[i] if i < len(body) else ""
        if e in _ESC:
            out.append(_ESC[e])
            i += 1
        elif e in "xX":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 1:])
            if not m:
                raise ProtoError("bad \\x escape in a string")
            out.append(chr(int(m.group(), 16)))
            i += 1 + len(m.group())
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i:])
            assert m is not None
            out.append(chr(int(m.group(), 8)))
            i += len(m.group())
        elif e == "u":
            out.append(chr(int(body[i + 1:i + 5], 16)))
            i += 5
        else:
            raise ProtoError(f"bad escape \\{e} in a string")
    return "".join(out)


def parse_int(text: str) -> int:
    if not _INT.match(text):
        raise ProtoError(f"expected an integer, got {text!r}")
    neg = text.startswith("-")
    t = text.lstrip("-")
    v = int(t, 16) if t[:2] in ("0x", "0X") else int(t, 8) if len(t) > 1 and t[0] == "0" else int(t)
    return -v if neg else v


class _Tokens:
    def __init__(self, text: str) -> None:
        if len(text) > MAX_TEXT:
            raise ProtoError("schema text too large")
        self.toks: list[tuple[str, str, int]] = []   # (kind, text, line)
        pos, line = 0, 1
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ProtoError(f"line {line}: unexpected character {text[pos]!r}")
            kind = m.lastgroup or ""
            tok = m.group()
            if kind != "ws":
                self.toks.append((kind, tok, line))
            line += tok.count("\n")
            pos = m.end()
        self.i = 0

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.toks[j][1] if j < len(self.toks) else ""

    def kind(self) -> str:
        return self.toks[self.i][0] if self.i < len(self.toks) else ""

    def line(self) -> int:
        return self.toks[min(self.i, len(self.toks) - 1)][2] if self.toks else 1

    def error(self, what: str) -> ProtoError:
        got = self.peek() or "end of input"
        return ProtoError(f"line {self.line()}: {what}, found {got!r}")

    def next(self) -> str:
        if self.i >= len(self.toks):
            raise ProtoError("unexpected end of input")
        tok = self.toks[self.i][1]
        self.i += 1
        return tok

    def accept(self, tok: str) -> bool:
        if self.peek() == tok and self.kind() != "str":
            self.i += 1
            return True
        return False

    def expect(self, tok: str) -> None:
        if not self.accept(tok):
            raise self.error(f"expected {tok!r}")

    def ident(self) -> str:
        if self.kind() != "id":
            raise self.error("expected a name")
        return self.next()

    def dotted(self) -> str:
        """A type or package name: ``a.b.C`` or ``.a.b.C``."""
        parts = []
        if self.accept("."):
            parts.append("")
        parts.append(self.ident())
        while self.peek() == "." and self.kind() == "sym":
            self.next()
            parts.append(self.ident())
        return ".".join(parts)

    def string(self) -> str:
        if self.kind() != "str":
            raise self.error("expected a string")
        out = _unquote(self.next())
        while self.kind() == "str":
            out += _unquote(self.next())
        return out

    def integer(self) -> int:
        sign = "-" if self.accept("-") else ""
        self.accept("+")
        if self.kind() != "num":
            raise self.error("expected an integer")
        return parse_int(sign + self.next())


def parse(text: str) -> ProtoFile:
    t = _Tokens(text)
    f = ProtoFile()
    first = True
    while t.i < len(t.toks):
        if t.accept(";"):
            continue
        word = t.ident()
        if word == "syntax" and first:
            t.expect("=")
            f.syntax = t.string()
            if f.syntax not in ("proto2", "proto3"):
                raise ProtoError(f"unknown syntax {f.syntax!r}")
            t.expect(";")
        elif word == "edition" and first:
            t.expect("=")
            f.edition = t.string()
            f.syntax = "editions"
            t.expect(";")
        elif word == "package":
            if f.package is not None:
                raise ProtoError(f"line {t.line()}: more than one package statement")
            f.package = t.dotted()
            t.expect(";")
        elif word == "import":
            kind = t.next() if t.peek() in ("public", "weak") and t.kind() == "id" else ""
            path = t.string()
            t.expect(";")
            (f.public_imports if kind == "public" else f.weak_imports if kind == "weak" else f.imports).append(path)
        elif word == "option":
            f.options.append(_option_statement(t))
        elif word == "message":
            f.messages.append(_message(t, f, 0))
        elif word == "enum":
            f.enums.append(_enum(t, f))
        elif word == "service":
            f.services.append(_service(t))
        elif word == "extend":
            f.extends.append(_extend(t, f, 0))
        else:
            t.i -= 1
            raise t.error("expected syntax, package, import, option, message, enum, service or extend")
        first = False
    _check_names(f)
    return f


def _check_names(f: ProtoFile) -> None:
    seen: set[str] = set()
    for name in [m.name for m in f.messages] + [e.name for e in f.enums] + [s.name for s in f.services]:
        if name in seen:
            raise ProtoError(f"\"{name}\" is already defined")
        seen.add(name)


# -- options -------------------------------------------------------------------------------------------
def _option_name(t: _Tokens) -> tuple[str, bool]:
    """The name as written back: ``java_package``, ``my.opt`` (parenthesized: paren=True), or a path into a
    custom option's message, ``(my.opt).sub.field``."""
    paren = False
    if t.accept("("):
        name = t.dotted()
        t.expect(")")
        paren = True
    else:
        name = t.ident()
    path = ""
    while t.peek() == "." and t.kind() == "sym":   # (foo).bar.baz: a path inside the option's message
        t.next()
        if t.accept("("):
            path += ".(" + t.dotted() + ")"
            t.expect(")")
        else:
            path += "." + t.ident()
    if path:
        return (f"({name})" if paren else name) + path, paren
    return name, paren


def _option_value(t: _Tokens, depth: int = 0) -> tuple[str, Any]:
    if depth > _MAX_DEPTH:
        raise ProtoError("option value nested too deeply")
    kind = t.kind()
    if kind == "str":
        return "string", t.string()
    if t.peek() == "{":
        t.next()
        return "map", _message_literal(t, "}", depth + 1)
    if t.peek() == "[":
        t.next()
        items: list[Any] = []
        while not t.accept("]"):
            items.append(_literal(*_option_value(t, depth + 1)))
            t.accept(",")
        return "list", items
    if t.peek() in ("-", "+") and t.kind() == "sym":
        sign = t.next()
        if t.kind() == "num":
            return "number", ("-" if sign == "-" else "") + t.next()
        word = t.ident()   # -inf, -nan
        return "number", ("-" if sign == "-" else "") + word
    if kind == "num":
        return "number", t.next()
    if kind == "id":
        word = t.next()
        if word in ("true", "false"):
            return "bool", word
        if word in ("inf", "nan"):
            return "number", word
        return "enum", word
    raise t.error("expected an option value")


def _literal(kind: str, value: Any) -> Any:
    """A value inside a message literal or list: strings marked ``("s", text)`` so they are quoted back."""
    return ("s", value) if kind == "string" else value


def _message_literal(t: _Tokens, close: str, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while not t.accept(close):
        if t.accept("["):   # an extension or Any type URL
            key = "[" + t.dotted()
            while t.accept("/"):
                key += "/" + t.dotted()
            t.expect("]")
            key += "]"
        else:
            key = t.ident()
        if t.accept(":"):
            if t.peek() in ("{", "<"):
                opener = t.next()
                _k, value = "map", _message_literal(t, "}" if opener == "{" else ">", depth + 1)
            else:
                value = _literal(*_option_value(t, depth + 1))
        elif t.peek() in ("{", "<"):
            opener = t.next()
            value = _message_literal(t, "}" if opener == "{" else ">", depth + 1)
        else:
            raise t.error("expected ':' or '{' in a message literal")
        if key in out:
            prev = out[key]
            out[key] = (prev if isinstance(prev, list) else [prev]) + (value if isinstance(value, list) else [value])
        else:
            out[key] = value
        if not t.accept(","):
            t.accept(";")
    return out


def _option_statement(t: _Tokens) -> Option:
    name, paren = _option_name(t)
    t.expect("=")
    kind, value = _option_value(t)
    t.expect(";")
    return Option(name, kind, value, paren)


def _field_options(t: _Tokens) -> list[Option]:
    out: list[Option] = []
    if not t.accept("["):
        return out
    while True:
        name, paren = _option_name(t)
        t.expect("=")
        kind, value = _option_value(t)
        out.append(Option(name, kind, value, paren))
        if t.accept("]"):
            return out
        t.expect(",")


# -- declarations --------------------------------------------------------------------------------------
def _field_rest(t: _Tokens, f: ProtoFile, label: str | None, type_: str) -> Field:
    name = t.ident()
    t.expect("=")
    number = t.integer()
    options = _field_options(t)
    t.expect(";")
    fld = Field(label, type_, name, number)
    for o in options:
        if o.name == "default" and not o.paren:
            fld.default = str(o.value)
        elif o.name == "json_name" and not o.paren:
            fld.json_name = str(o.value)
        else:
            fld.options.append(o)
    if f.proto3 and fld.default is not None:
        raise ProtoError(f"line {t.line()}: explicit default values are not allowed in proto3 ({name})")
    return fld


def _type_name(t: _Tokens) -> str:
    if t.peek() == "map" and t.peek(1) == "<":
        t.next()
        t.next()
        key = t.dotted()
        t.expect(",")
        value = t.dotted()
        t.expect(">")
        if key not in _MAP_KEYS:
            raise ProtoError(f"line {t.line()}: key in map fields cannot be {key}")
        return f"map<{key}, {value}>"
    return t.dotted()


def _field(t: _Tokens, f: ProtoFile, in_oneof: bool) -> Field:
    label: str | None = None
    if t.peek() in ("optional", "required", "repeated") and t.kind() == "id" and t.peek(1) != "=":
        label = t.next()
    if t.peek() == "group" and t.kind() == "id" and t.peek(1) not in ("=", ""):
        raise ProtoError(f"line {t.line()}: proto2 groups are not supported")
    type_ = _type_name(t)
    if type_.startswith("map<"):
        if label is not None or in_oneof:
            raise ProtoError(f"line {t.line()}: map fields cannot have a label or be in a oneof")
    elif label is None and f.syntax == "proto2" and not in_oneof:
        raise ProtoError(f"line {t.line()}: expected \"required\", \"optional\", or \"repeated\"")
    if label == "required" and f.proto3:
        raise ProtoError(f"line {t.line()}: required fields are not allowed in proto3")
    if in_oneof and label is not None:
        raise ProtoError(f"line {t.line()}: fields in oneofs must not have labels")
    return _field_rest(t, f, label, type_)


def _ranges(t: _Tokens, names_ok: bool) -> list[Reserved]:
    out: list[Reserved] = []
    while True:
        if t.kind() == "str":
            if not names_ok:
                raise t.error("expected a number")
            out.append(t.string())
        elif names_ok and t.kind() == "id" and t.peek() not in ("max",):
            out.append(t.ident())   # editions: reserved names without quotes
        else:
            start = t.integer()
            end = start
            if t.accept("to"):
                end = MAX_TAG if t.accept("max") else t.integer()
            if end < start:
                raise ProtoError(f"line {t.line()}: reserved range end before its start")
            out.append((start, end))
        if len({isinstance(r, str) for r in out}) > 1:
            raise ProtoError(f"line {t.line()}: a reserved statement holds either numbers or names, not both")
        if t.accept(";"):
            return out
        if t.peek() == "[":   # extension range options
            _field_options(t)
            t.expect(";")
            return out
        t.expect(",")


def _message(t: _Tokens, f: ProtoFile, depth: int) -> Message:
    if depth > _MAX_DEPTH:
        raise ProtoError("messages nested too deeply")
    m = Message(t.ident())
    t.expect("{")
    while not t.accept("}"):
        if t.accept(";"):
            continue
        word = t.peek() if t.kind() == "id" else ""
        nxt = t.peek(1)
        if word == "message" and nxt not in ("=", "."):
            t.next()
            m.messages.append(_message(t, f, depth + 1))
        elif word == "enum" and nxt not in ("=", "."):
            t.next()
            m.enums.append(_enum(t, f))
        elif word == "extend" and nxt not in ("=", "."):
            t.next()
            m.extends.append(_extend(t, f, depth + 1))
        elif word == "option" and nxt not in ("=", "."):
            t.next()
            m.options.append(_option_statement(t))
        elif word == "oneof" and nxt not in ("=", "."):
            t.next()
            m.oneofs.append(_oneof(t, f))
        elif word == "reserved" and nxt not in ("=", "."):
            t.next()
            m.reserved.append(_ranges(t, True))
        elif word == "extensions" and nxt not in ("=", "."):
            t.next()
            m.extensions.append([r for r in _ranges(t, False) if isinstance(r, tuple)])
        else:
            fld = _field(t, f, False)
            if fld.is_map:
                m.map_slots[fld.name] = len(m.messages)
            m.fields.append(fld)
    _check_message(m)
    return m


def _check_message(m: Message) -> None:
    numbers: dict[int, str] = {}
    names: set[str] = set()
    reserved_numbers = [r for group in m.reserved for r in group if isinstance(r, tuple)]
    reserved_names = {r for group in m.reserved for r in group if isinstance(r, str)}
    for fld in m.all_fields():
        if not 1 <= fld.number <= MAX_TAG:
            raise ProtoError(f"field \"{fld.name}\" number {fld.number} is out of range 1..{MAX_TAG}")
        if 19000 <= fld.number <= 19999:
            raise ProtoError(f"field numbers 19000 through 19999 are reserved for the protocol buffer library "
                             f"implementation (\"{fld.name}\" = {fld.number})")
        if fld.number in numbers:
            raise ProtoError(f"field number {fld.number} has already been used in \"{m.name}\" by field "
                             f"\"{numbers[fld.number]}\"")
        if fld.name in names:
            raise ProtoError(f"\"{fld.name}\" is already defined in \"{m.name}\"")
        if any(a <= fld.number <= b for a, b in reserved_numbers):
            raise ProtoError(f"field \"{fld.name}\" uses reserved number {fld.number}")
        if fld.name in reserved_names:
            raise ProtoError(f"field name \"{fld.name}\" is reserved")
        numbers[fld.number] = fld.name
        names.add(fld.name)
    nested: set[str] = set()
    for name in [x.name for x in m.messages] + [x.name for x in m.enums] + [o.name for o in m.oneofs]:
        if name in nested:
            raise ProtoError(f"\"{name}\" is already defined in \"{m.name}\"")
        nested.add(name)


def _oneof(t: _Tokens, f: ProtoFile) -> OneOf:
    o = OneOf(t.ident())
    t.expect("{")
    while not t.accept("}"):
        if t.accept(";"):
            continue
        if t.peek() == "option" and t.kind() == "id" and t.peek(1) not in ("=", "."):
            t.next()
            o.options.append(_option_statement(t))
            continue
        o.fields.append(_field(t, f, True))
    if not o.fields:
        raise ProtoError(f"oneof \"{o.name}\" must have at least one field")
    return o


def _enum(t: _Tokens, f: ProtoFile) -> Enum:
    e = Enum(t.ident())
    t.expect("{")
    while not t.accept("}"):
        if t.accept(";"):
            continue
        word = t.peek() if t.kind() == "id" else ""
        if word == "option" and t.peek(1) not in ("=",):
            t.next()
            e.options.append(_option_statement(t))
        elif word == "reserved" and t.peek(1) not in ("=",):
            t.next()
            e.reserved.append(_ranges(t, True))
        else:
            name = t.ident()
            t.expect("=")
            number = t.integer()
            opts = _field_options(t)
            t.expect(";")
            e.values.append(EnumValue(name, number, opts))
    if not e.values:
        raise ProtoError(f"enum \"{e.name}\" must contain at least one value")
    if f.proto3 and e.values[0].number != 0:
        raise ProtoError(f"the first enum value of \"{e.name}\" must be zero in proto3")
    allow_alias = any(o.name == "allow_alias" and o.value == "true" for o in e.options)
    seen: dict[int, str] = {}
    names: set[str] = set()
    for v in e.values:
        if not -(1 << 31) <= v.number < (1 << 31):
            raise ProtoError(f"enum value \"{v.name}\" number out of range")
        if v.name in names:
            raise ProtoError(f"\"{v.name}\" is already defined in \"{e.name}\"")
        if v.number in seen and not allow_alias:
            raise ProtoError(f"\"{v.name}\" uses the same enum value as \"{seen[v.number]}\"; set "
                             "option allow_alias = true to allow this")
        seen.setdefault(v.number, v.name)
        names.add(v.name)
    return e


def _extend(t: _Tokens, f: ProtoFile, depth: int) -> Extend:
    ext = Extend(t.dotted())
    t.expect("{")
    while not t.accept("}"):
        if t.accept(";"):
            continue
        ext.fields.append(_field(t, f, False))
    return ext


def _service(t: _Tokens) -> Service:
    s = Service(t.ident())
    t.expect("{")
    while not t.accept("}"):
        if t.accept(";"):
            continue
        word = t.ident()
        if word == "option":
            s.options.append(_option_statement(t))
            continue
        if word != "rpc":
            t.i -= 1
            raise t.error("expected rpc or option")
        rpc = Rpc(t.ident(), "", "")
        t.expect("(")
        if t.peek() == "stream" and t.peek(1) not in (")", "."):
            t.next()
            rpc.request_stream = True
        rpc.request = t.dotted()
        t.expect(")")
        if t.ident() != "returns":
            t.i -= 1
            raise t.error("expected returns")
        t.expect("(")
        if t.peek() == "stream" and t.peek(1) not in (")", "."):
            t.next()
            rpc.response_stream = True
        rpc.response = t.dotted()
        t.expect(")")
        if t.accept("{"):
            while not t.accept("}"):
                if t.accept(";"):
                    continue
                if t.ident() != "option":
                    t.i -= 1
                    raise t.error("expected option")
                rpc.options.append(_option_statement(t))
            t.accept(";")
        else:
            t.expect(";")
        s.rpcs.append(rpc)
    return s


def is_scalar(type_: str) -> bool:
    return type_ in SCALAR_TYPES
