"""Per-message code emission for `kafkalite_wire.codegen`: wire layouts, class bodies, encoders and decoders.

A *layout* of a struct at a version is the tuple of (field, kind, nullability, tagged?, tag, nested layout) of
the fields present at that version plus the flexible flag. Versions with equal layouts share one encode and one
decode function (`_d_<Message>_<Struct>_<n>` / `_e_<Message>_<Struct>_<n>`).
"""

from __future__ import annotations

from kafkalite_wire.spec import FIXED, FieldSpec, MessageSpec, default_value

Item = tuple[
    str, str, str, bool, bool, "int | None", "int | None"
]  # snake, kind, elem, nullable, tagged, tag, nested


class Gen:
    def __init__(self, msg: MessageSpec) -> None:
        self.msg = msg
        self.structs = {s.name: s for s in msg.all_structs()}
        self.ids: dict[str, dict[tuple[object, ...], int]] = {}
        self.at: dict[tuple[str, int], int] = {}
        self.versions_of: dict[tuple[str, int], list[int]] = {}
        self.sig_of: dict[tuple[str, int], tuple[bool, tuple[Item, ...]]] = {}
        self.structs_fmt: dict[str, str] = {}
        self.lines: list[str] = []
        for v in msg.versions:
            self.layout(msg.name, v)

    # ------------------------------------------------------------------ layouts
    def layout(self, sname: str, v: int) -> int:
        key = (sname, v)
        if key in self.at:
            return self.at[key]
        s = self.structs[sname]
        flex = v in self.msg.flexible
        items: list[Item] = []
        for f in s.fields:
            if v not in f.versions:
                continue
            tagged = flex and v in f.tagged
            nested = self.layout(f.struct, v) if f.struct else None
            items.append(
                (f.snake, f.kind, f.elem, v in f.nullable, tagged, f.tag if tagged else None, nested)
            )
        sig = (flex, tuple(items))
        ids = self.ids.setdefault(sname, {})
        if sig not in ids:
            ids[sig] = len(ids)
            self.sig_of[(sname, ids[sig])] = sig
        lid = ids[sig]
        self.at[key] = lid
        self.versions_of.setdefault((sname, lid), []).append(v)
        return lid

    def sfmt(self, fmt: str) -> str:
        if fmt not in self.structs_fmt:
            self.structs_fmt[fmt] = f"_S{len(self.structs_fmt)}"
        return self.structs_fmt[fmt]

    # ------------------------------------------------------------------ types and defaults
    def cls(self, sname: str) -> str:
        return self.msg.name if sname == self.msg.name else f"{self.msg.name}.{sname}"

    def alias(self, sname: str) -> str:
        return f"_C_{self.msg.name}_{sname}"

    def fn(self, d: str, sname: str, lid: int | None) -> str:
        return f"_{d}_{self.msg.name}_{sname}_{lid}"

    def pytype(self, f: FieldSpec) -> str:
        nullable = f.nullable.lo >= 0 or f.default == "null"
        k = f.kind
        if k == "array":
            t = f"list[{self.elem_type(f.elem)}]"
        elif k == "struct":
            assert f.struct
            t = self.cls(f.struct)
        elif k == "records":
            return "_Records"
        else:
            t = self.elem_type(k)
        return f"{t} | None" if nullable else t

    def elem_type(self, e: str) -> str:
        return {
            "bool": "bool",
            "int8": "int",
            "int16": "int",
            "uint16": "int",
            "int32": "int",
            "uint32": "int",
            "int64": "int",
            "float64": "float",
            "string": "str",
            "uuid": "uuid.UUID",
            "bytes": "_Bytes",
        }.get(e) or self.cls(e)

    def default_src(self, f: FieldSpec) -> str:
        """Python source of the field's default value (a fresh object for struct/array defaults)."""
        d = default_value(f)
        if f.kind == "struct":
            if d is None:
                return "None"
            assert f.struct
            return f"{self.alias(f.struct)}()"
        if isinstance(d, list):
            return "[]"
        if f.kind == "uuid":
            return "_ZERO_UUID"
        return repr(d)

    # ------------------------------------------------------------------ class emission
    def emit_class(self) -> None:
        m = self.msg
        L = self.lines
        fl = f"{m.flexible.lo}+" if m.flexible.lo >= 0 else "none"
        L.append(f"class {m.name}:")
        L.append(
            f'    """{m.name} (api key {m.api_key}), versions {m.min_version}-{m.max_version}, flexible {fl}."""'
        )
        L.append("")
        self.emit_slots(m.fields, "    ")
        L.append(f"    API_KEY: ClassVar[int] = {m.api_key}")
        L.append(f"    MIN_VERSION: ClassVar[int] = {m.min_version}")
        L.append(f"    MAX_VERSION: ClassVar[int] = {m.max_version}")
        L.append(f"    FLEXIBLE_MIN: ClassVar[int | None] = {m.flexible.lo if m.flexible.lo >= 0 else None}")
        L.append("")
        for s in m.structs.values():
            L.append(f"    class {s.name}:")
            L.append(f'        """{m.name}.{s.name} (versions {_ranges(self.struct_versions(s.name))})."""')
            L.append("")
            self.emit_slots(s.fields, "        ")
            self.emit_methods(s.fields, "        ")
        self.emit_methods(m.fields, "    ")
        n = m.name
        L.append("    def encode(self, version: int) -> bytes:")
        L.append('        """Encode the body (no header) at `version` into bytes."""')
        L.append(f"        return _rt.encode(self, version, _ENCODERS_{n})")
        L.append("")
        L.append("    def encode_chunks(self, version: int) -> list[Chunk]:")
        L.append('        """Encode the body as chunks; large records and file regions stay separate."""')
        L.append(f"        return _rt.encode_chunks(self, version, _ENCODERS_{n})")
        L.append("")
        L.append("    @classmethod")
        L.append(f"    def decode(cls, buf: bytes | bytearray | memoryview, version: int) -> {n}:")
        L.append(
            '        """Decode a body at `version`; bytes/records fields are memoryview slices of `buf`."""'
        )
        L.append(f"        return _rt.decode(buf, version, _DECODERS_{n}, {n!r})[0]")
        L.append("")
        L.append("    @classmethod")
        L.append(
            f"    def decode_from(cls, buf: bytes | bytearray | memoryview, version: int, pos: int = 0) -> tuple[{n}, int]:"
        )
        L.append('        """Decode at `pos`; returns (message, position after it)."""')
        L.append(f"        return _rt.decode(buf, version, _DECODERS_{n}, {n!r}, pos)")
        L.append("")
        L.append("")
        for s in m.structs.values():
            L.append(f"{self.alias(s.name)} = {self.cls(s.name)}")
        L.append(f"{self.alias(m.name)} = {m.name}")
        for sn in sorted(self.tagged_struct_defaults()):
            L.append(f"_DEF_{m.name}_{sn} = {self.alias(sn)}()  # compared against, never handed out")
        L.append("")

    def emit_slots(self, fields: list[FieldSpec], ind: str) -> None:
        """`__slots__`, `__match_args__` and the attribute annotations (what `@dataclass(slots=True)` gave)."""
        names = [f.snake for f in fields] + ["unknown_tagged_fields"]
        tup = "".join(f"{n!r}, " for n in names).rstrip(" ")
        self.lines.append(f"{ind}__slots__ = ({tup})")
        self.lines.append(f"{ind}__match_args__ = ({tup})")
        self.lines.append("")
        for f in fields:
            self.lines.append(f"{ind}{f.snake}: {self.pytype(f)}")
        self.lines.append(f"{ind}unknown_tagged_fields: dict[int, bytes]")
        self.lines.append("")

    def emit_methods(self, fields: list[FieldSpec], ind: str) -> None:
        """Explicit `__init__` (dataclass signature: every field a keyword with the spec default, mutable defaults
        fresh per instance), `__eq__` (same class, all fields equal) and `__repr__` (`Qualname(f=..., ...)`)."""
        L = self.lines
        params = ["self"]
        body = []
        for f in fields:
            d = self.default_src(f)
            fresh = (f.kind == "struct" and d != "None") or (f.kind == "array" and d == "[]")
            params.append(f"{f.snake}: {self.pytype(f)} = {'_FRESH' if fresh else d}")
            if fresh:
                body.append(f"self.{f.snake} = {d} if {f.snake} is _FRESH else {f.snake}")
            else:
                body.append(f"self.{f.snake} = {f.snake}")
        params.append("unknown_tagged_fields: dict[int, bytes] = _FRESH")
        body.append("self.unknown_tagged_fields = {} if unknown_tagged_fields is _FRESH else unknown_tagged_fields")
        L.append(f"{ind}def __init__({', '.join(params)}) -> None:")
        L.extend(f"{ind}    {b}" for b in body)
        L.append("")
        names = [f.snake for f in fields] + ["unknown_tagged_fields"]
        L.append(f"{ind}def __eq__(self, other: object) -> bool:")
        L.append(f"{ind}    if other.__class__ is not self.__class__:")
        L.append(f"{ind}        return NotImplemented")
        L.append(f"{ind}    o: Any = other")
        a = ", ".join(f"self.{n}" for n in names)
        b = ", ".join(f"o.{n}" for n in names)
        L.append(f"{ind}    return ({a},) == ({b},)")
        L.append("")
        L.append(f"{ind}def __repr__(self) -> str:")
        r = ", ".join(f"{n}={{self.{n}!r}}" for n in names)
        L.append(f'{ind}    return f"{{self.__class__.__qualname__}}({r})"')
        L.append("")

    def tagged_struct_defaults(self) -> set[str]:
        """Structs used as (non-null-default) tagged fields: encoders compare against one shared default."""
        out = set()
        for s in self.msg.all_structs():
            for f in s.fields:
                if f.kind == "struct" and f.tagged.lo >= 0 and f.default != "null" and f.struct:
                    out.add(f.struct)
        return out

    def struct_versions(self, sname: str) -> list[int]:
        return sorted(v for (n, _), vs in self.versions_of.items() if n == sname for v in vs)

    # ------------------------------------------------------------------ decode
    def read_field(self, it: Item, flex: bool, b: str, p: str, var: str, ind: str) -> list[str]:
        name, kind, elem, nullable, _tagged, _tag, nested = it
        o: list[str] = []
        if kind in FIXED:
            code, w = FIXED[kind]
            s = self.sfmt(">" + code)
            o.append(f"{var} = {s}.unpack_from({b}, {p})[0]")
            if kind == "uuid":
                o.append(f"{var} = _UUID(bytes={var})")
            o.append(f"{p} += {w}")
        elif kind in ("string", "bytes", "records"):
            base = "string" if kind == "string" else "bytes"
            fn = (
                "_read_"
                + ("compact_" if flex else "")
                + ("nullable_" if nullable or kind == "records" else "")
                + base
            )
            o.append(f"{var}, {p} = {fn}({b}, {p})")
            if kind == "records" and not nullable:
                o.append(f"if {var} is None:")
                o.append(f"    raise DecodeError('null in non-nullable records field {name}')")
        elif kind == "struct":
            fn = self.fn("d", elem, nested)
            if nullable:
                o.append(f"if {self.sfmt('>b')}.unpack_from({b}, {p})[0] < 0:")
                o.append(f"    {var} = None")
                o.append(f"    {p} += 1")
                o.append("else:")
                o.append(f"    {var}, {p} = {fn}({b}, {p} + 1)")
            else:
                o.append(f"{var}, {p} = {fn}({b}, {p})")
        elif kind == "array":
            nul = "nullable_" if nullable else ""
            if nested is not None:
                fn = self.fn("d", elem, nested)
                o.append(f"{var}, {p} = _read_{nul}array({b}, {p}, {flex}, {fn})")
            elif elem in FIXED and elem != "uuid":
                code, w = FIXED[elem]
                o.append(f"{var}, {p} = _read_{nul}fixed_list({b}, {p}, {flex}, {code!r}, {w})")
            else:
                rd = "_read_uuid" if elem == "uuid" else "_read_" + ("compact_" if flex else "") + elem
                o.append(f"{var}, {p} = _read_{nul}array({b}, {p}, {flex}, {rd})")
        else:
            raise ValueError(kind)
        return [ind + ln for ln in o]

    def emit_decoder(self, sname: str, lid: int) -> None:
        flex, items = self.sig_of[(sname, lid)]
        s = self.structs[sname]
        L = self.lines
        vs = self.versions_of[(sname, lid)]
        L.append(
            f"def {self.fn('d', sname, lid)}(buf: memoryview, pos: int) -> tuple[{self.cls(sname)}, int]:"
        )
        L.append(f'    """{sname} v{_ranges(vs)}."""')
        fmap0 = {f.snake: f for f in s.fields}
        for it in items:
            if it[1] not in FIXED:
                L.append(f"    f_{it[0]}: {self.pytype(fmap0[it[0]])}")
        regular = [it for it in items if not it[4]]
        tagged = [it for it in items if it[4]]
        i = 0
        while i < len(regular):
            it = regular[i]
            if it[1] in FIXED:
                run = [it]
                while i + len(run) < len(regular) and regular[i + len(run)][1] in FIXED:
                    run.append(regular[i + len(run)])
                fmt = ">" + "".join(FIXED[r[1]][0] for r in run)
                width = sum(FIXED[r[1]][1] for r in run)
                sname_ = self.sfmt(fmt)
                names = ", ".join("f_" + r[0] for r in run) + ("," if len(run) == 1 else "")
                L.append(f"    {names} = {sname_}.unpack_from(buf, pos)")
                for r in run:
                    if r[1] == "uuid":
                        L.append(f"    f_{r[0]} = _UUID(bytes=f_{r[0]})")
                L.append(f"    pos += {width}")
                i += len(run)
                continue
            L.extend(self.read_field(it, flex, "buf", "pos", "f_" + it[0], "    "))
            i += 1
        present = {it[0] for it in items}
        if flex:
            fmap = {f.snake: f for f in s.fields}
            for it in tagged:
                L.append(f"    f_{it[0]} = {self.default_src(fmap[it[0]])}")
            if not tagged:
                L.append("    u, pos = _read_tags(buf, pos)")
        if flex and tagged:
            L.append("    u: dict[int, bytes] = {}")
            L.append("    nt = buf[pos]")
            L.append("    if nt < 128:")
            L.append("        pos += 1")
            L.append("    else:")
            L.append("        nt, pos = _read_uvarint(buf, pos)")
            L.append("    for _ in range(nt):")
            L.append("        tag, tp, te = _read_tag(buf, pos)")
            kw = "if"
            for it in tagged:
                L.append(f"        {kw} tag == {it[5]}:")
                L.append("            tb = buf[:te]")
                L.extend(self.read_field(it, flex, "tb", "tp", "f_" + it[0], "            "))
                kw = "elif"
            if tagged:
                L.append("        else:")
                L.append("            u[tag] = bytes(buf[tp:te])")
            else:
                L.append("        u[tag] = bytes(buf[tp:te])")
            L.append("        pos = te")
        args = []
        for f in s.fields:
            args.append("f_" + f.snake if f.snake in present else self.default_src(f))
        args.append("u" if flex else "{}")
        L.append(f"    return {self.alias(sname)}({', '.join(args)}), pos")
        L.append("")
        L.append("")

    # ------------------------------------------------------------------ encode
    def write_field(self, it: Item, flex: bool, out: str, ch: str, expr: str, ind: str) -> list[str]:
        name, kind, elem, nullable, _tagged, _tag, nested = it
        o: list[str] = []
        if kind in FIXED:
            s = self.sfmt(">" + FIXED[kind][0])
            o.append(f"{out} += {s}.pack({expr}{'.bytes' if kind == 'uuid' else ''})")
        elif kind in ("string", "bytes"):
            fn = "_write_" + ("compact_" if flex else "") + ("nullable_" if nullable else "") + kind
            o.append(f"{fn}({out}, {expr})")
        elif kind == "records":
            o.append(f"_write_records({out}, {ch}, {expr}, {flex}, {nullable})")
        elif kind == "struct":
            fn = self.fn("e", elem, nested)
            if nullable:
                o.append(f"v_{name} = {expr}")
                o.append(f"if v_{name} is None:")
                o.append(f"    {out}.append(255)")
                o.append("else:")
                o.append(f"    {out}.append(1)")
                o.append(f"    {fn}({out}, {ch}, v_{name})")
            else:
                o.append(f"{fn}({out}, {ch}, {expr})")
        elif kind == "array":
            if nested is not None:
                fn = self.fn("e", elem, nested)
                o.append(f"_write_array({out}, {ch}, {expr}, {flex}, {nullable}, {fn})")
            elif elem in FIXED and elem != "uuid":
                o.append(f"_write_fixed_list({out}, {expr}, {flex}, {nullable}, {FIXED[elem][0]!r})")
            else:
                wr = "_write_uuid" if elem == "uuid" else "_write_" + ("compact_" if flex else "") + elem
                o.append(f"_write_plain_array({out}, {expr}, {flex}, {nullable}, {wr})")
        else:
            raise ValueError(kind)
        return [ind + ln for ln in o]

    def emit_encoder(self, sname: str, lid: int) -> None:
        flex, items = self.sig_of[(sname, lid)]
        s = self.structs[sname]
        L = self.lines
        vs = self.versions_of[(sname, lid)]
        L.append(
            f"def {self.fn('e', sname, lid)}(out: bytearray, ch: list[Chunk] | None, o: {self.cls(sname)}) -> None:"
        )
        L.append(f'    """{sname} v{_ranges(vs)}."""')
        regular = [it for it in items if not it[4]]
        tagged = [it for it in items if it[4]]
        i = 0
        while i < len(regular):
            it = regular[i]
            if it[1] in FIXED:
                run = [it]
                while i + len(run) < len(regular) and regular[i + len(run)][1] in FIXED:
                    run.append(regular[i + len(run)])
                fmt = ">" + "".join(FIXED[r[1]][0] for r in run)
                args = ", ".join(f"o.{r[0]}" + (".bytes" if r[1] == "uuid" else "") for r in run)
                L.append(f"    out += {self.sfmt(fmt)}.pack({args})")
                i += len(run)
                continue
            L.extend(self.write_field(it, flex, "out", "ch", "o." + it[0], "    "))
            i += 1
        if flex:
            if not tagged:
                L.append("    if o.unknown_tagged_fields:")
                L.append("        _write_tagged(out, [], o.unknown_tagged_fields)")
                L.append("    else:")
                L.append("        out.append(0)")
            else:
                fmap = {f.snake: f for f in s.fields}
                L.append("    tg: list[tuple[int, bytes | bytearray]] = []")
                for it in sorted(tagged, key=lambda t: t[5] or 0):
                    f = fmap[it[0]]
                    dflt = self.default_src(f)
                    if f.kind == "struct" and f.default != "null":
                        dflt = f"_DEF_{self.msg.name}_{f.struct}"
                    L.append(f"    if o.{it[0]} != {dflt}:")
                    L.append("        t = bytearray()")
                    L.extend(self.write_field(it, flex, "t", "None", "o." + it[0], "        "))
                    L.append(f"        tg.append(({it[5]}, t))")
                L.append("    if tg or o.unknown_tagged_fields:")
                L.append("        _write_tagged(out, tg, o.unknown_tagged_fields)")
                L.append("    else:")
                L.append("        out.append(0)")
        if not items and not flex:
            L.append("    return")
        L.append("")
        L.append("")

    # ------------------------------------------------------------------ module
    def render_body(self) -> list[str]:
        m = self.msg
        self.emit_class()
        self.lines.append("")
        for sname in self.structs:
            for lid in range(len(self.ids.get(sname, {}))):
                self.emit_decoder(sname, lid)
                self.emit_encoder(sname, lid)
        top = m.name
        dec = ", ".join(f"{v}: {self.fn('d', top, self.at[(top, v)])}" for v in m.versions)
        enc = ", ".join(f"{v}: {self.fn('e', top, self.at[(top, v)])}" for v in m.versions)
        self.lines.append(
            f"_DECODERS_{top}: dict[int, Callable[[memoryview, int], tuple[{top}, int]]] = {{{dec}}}"
        )
        self.lines.append(f"_ENCODERS_{top}: dict[int, _rt.EncodeFn] = {{{enc}}}")
        self.lines.append("")
        self.lines.append("")
        return self.lines


def _ranges(vs: list[int]) -> str:
    out = []
    start = prev = vs[0]
    for v in vs[1:]:
        if v == prev + 1:
            prev = v
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = v
    out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ",".join(out)
