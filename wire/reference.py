"""A slow, interpretive Kafka codec driven directly by the JSON specs -- the test oracle for the generated code.

It walks the `kafkalite_wire.spec` field lists at run time, one field at a time, with its own tiny primitive layer (plain
`struct` calls and loops, deliberately *not* the helpers in `kafkalite_wire.primitives`), so a bug in the generator or in
the shared primitives shows up as a byte difference against this module. It produces and consumes the generated
dataclasses (it only needs `getattr`/constructor calls), so tests can compare `generated.encode(x)` with
`reference.encode(x)` and `Generated.decode(b)` with `reference.decode(b)`.

Never used by the broker.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from kafkalite_wire.errors import DecodeError, EncodeError
from kafkalite_wire.primitives import read_region
from kafkalite_wire.spec import FieldSpec, MessageSpec, StructSpec, default_value
from kafkalite_wire.specmerge import load_all

_FIXED_FMT = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}


# ------------------------------------------------------------------------------------------ tiny primitives
def _uvar(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class _In:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DecodeError("reference: short input")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def fixed(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def uvar(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise DecodeError("reference: varint too long")


# ------------------------------------------------------------------------------------------ the codec
class ReferenceCodec:
    """Encoder/decoder for one message spec, bound to its generated class (for struct construction)."""

    def __init__(self, msg: MessageSpec, cls: type) -> None:
        self.msg = msg
        self.cls = cls
        self.structs = {s.name: s for s in msg.all_structs()}

    def _class(self, name: str) -> Any:
        return self.cls if name == self.msg.name else getattr(self.cls, name)

    def _default(self, f: FieldSpec) -> Any:
        d = default_value(f)
        if d == "struct":
            assert f.struct
            return self._class(f.struct)()
        return d

    # ---------------------------------------------------------------- encode
    def encode(self, obj: Any, version: int) -> bytes:
        out = bytearray()
        self._enc_struct(out, self.structs[self.msg.name], obj, version)
        return bytes(out)

    def _enc_struct(self, out: bytearray, s: StructSpec, obj: Any, v: int) -> None:
        flex = v in self.msg.flexible
        tagged: list[tuple[int, bytes]] = []
        for f in s.fields:
            if v not in f.versions:
                continue
            value = getattr(obj, f.snake)
            if flex and v in f.tagged:
                if value != self._default(f):
                    t = bytearray()
                    self._enc_value(t, f, f.type, value, v, flex, v in f.nullable)
                    assert f.tag is not None
                    tagged.append((f.tag, bytes(t)))
                continue
            self._enc_value(out, f, f.type, value, v, flex, v in f.nullable)
        if flex:
            tagged += list(obj.unknown_tagged_fields.items())
            tagged.sort(key=lambda t: t[0])
            out += _uvar(len(tagged))
            for tag, payload in tagged:
                out += _uvar(tag) + _uvar(len(payload)) + payload

    def _len(self, out: bytearray, n: int, flex: bool, width: str) -> None:
        """Length prefix; n = -1 for null."""
        if flex:
            out += _uvar(n + 1)
        else:
            out += struct.pack(width, n)

    def _enc_value(
        self, out: bytearray, f: FieldSpec, t: str, value: Any, v: int, flex: bool, nullable: bool
    ) -> None:
        if t.startswith("[]"):
            if value is None:
                if not nullable:
                    raise EncodeError(f"reference: null array {f.name}")
                self._len(out, -1, flex, ">i")
                return
            self._len(out, len(value), flex, ">i")
            for x in value:
                self._enc_value(out, f, t[2:], x, v, flex, False)
            return
        if t in _FIXED_FMT:
            out += struct.pack(_FIXED_FMT[t], value)
        elif t == "uuid":
            out += value.bytes
        elif t == "string":
            if value is None:
                if not nullable:
                    raise EncodeError(f"reference: null string {f.name}")
                self._len(out, -1, flex, ">h")
            else:
                b = value.encode("utf-8")
                self._len(out, len(b), flex, ">h")
                out += b
        elif t in ("bytes", "records"):
            if value is None:
                if not nullable:
                    raise EncodeError(f"reference: null bytes {f.name}")
                self._len(out, -1, flex, ">i")
            else:
                if isinstance(value, list):
                    value = b"".join(read_region(c) if isinstance(c, tuple) else bytes(c) for c in value)
                self._len(out, len(value), flex, ">i")
                out += bytes(value)
        else:  # struct
            if nullable:
                if value is None:
                    out += b"\xff"
                    return
                out += b"\x01"
            self._enc_struct(out, self.structs[t], value, v)

    # ---------------------------------------------------------------- decode
    def decode(self, data: bytes | bytearray | memoryview, version: int) -> Any:
        inp = _In(bytes(data))
        try:
            return self._dec_struct(inp, self.structs[self.msg.name], version)
        except (struct.error, UnicodeDecodeError, ValueError) as e:
            if isinstance(e, DecodeError):
                raise
            raise DecodeError(f"reference: {e}") from None

    def _dec_struct(self, inp: _In, s: StructSpec, v: int) -> Any:
        flex = v in self.msg.flexible
        values: dict[str, Any] = {}
        by_tag: dict[int, FieldSpec] = {}
        for f in s.fields:
            values[f.snake] = self._default(f)
            if v not in f.versions:
                continue
            if flex and v in f.tagged:
                assert f.tag is not None
                by_tag[f.tag] = f
                continue
            values[f.snake] = self._dec_value(inp, f, f.type, v, flex, v in f.nullable)
        unknown: dict[int, bytes] = {}
        if flex:
            for _ in range(inp.uvar()):
                tag = inp.uvar()
                payload = inp.take(inp.uvar())
                if tag in by_tag:
                    f = by_tag[tag]
                    values[f.snake] = self._dec_value(_In(payload), f, f.type, v, flex, v in f.nullable)
                else:
                    unknown[tag] = payload
        obj = self._class(s.name)(**values)
        obj.unknown_tagged_fields = unknown
        return obj

    def _read_len(self, inp: _In, flex: bool, fmt: str) -> int:
        if flex:
            return inp.uvar() - 1
        n: int = inp.fixed(fmt)
        return n

    def _dec_value(self, inp: _In, f: FieldSpec, t: str, v: int, flex: bool, nullable: bool) -> Any:
        if t.startswith("[]"):
            n = self._read_len(inp, flex, ">i")
            if n < 0:
                if not nullable or n != -1:
                    raise DecodeError(f"reference: null array {f.name}")
                return None
            if n > len(inp.data) - inp.pos:
                raise DecodeError("reference: array longer than input")
            return [self._dec_value(inp, f, t[2:], v, flex, False) for _ in range(n)]
        if t in _FIXED_FMT:
            return inp.fixed(_FIXED_FMT[t])
        if t == "uuid":
            return uuid.UUID(bytes=inp.take(16))
        if t == "string":
            n = self._read_len(inp, flex, ">h")
            if n < 0:
                if not nullable or n != -1:
                    raise DecodeError(f"reference: null string {f.name}")
                return None
            return inp.take(n).decode("utf-8")
        if t in ("bytes", "records"):
            n = self._read_len(inp, flex, ">i")
            if n < 0:
                if not nullable or n != -1:
                    raise DecodeError(f"reference: null {t} {f.name}")
                return None
            return inp.take(n)
        if nullable and inp.fixed(">b") < 0:
            return None
        return self._dec_struct(inp, self.structs[t], v)


def codec_for(cls: type) -> ReferenceCodec:
    """The reference codec for a generated top-level message class."""
    for m in load_all():
        if m.name == cls.__name__:
            return ReferenceCodec(m, cls)
    raise KeyError(cls.__name__)
