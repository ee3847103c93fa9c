"""Avro in the registry: parsing, the canonical string, each schema-resolution rule, and each compatibility
level (BACKWARD, FORWARD, FULL and their _TRANSITIVE forms) through the registry itself."""
from __future__ import annotations

import json

import pytest

from kafkalite.registry.compat import avro
from kafkalite.registry.core import Registry, RegistryError


def P(obj: object) -> avro.Schema:
    return avro.parse(json.dumps(obj))


def record(*fields: dict[str, object], name: str = "R") -> dict[str, object]:
    return {"type": "record", "name": name, "fields": list(fields)}


def f(name: str, type_: object, **kw: object) -> dict[str, object]:
    return {"name": name, "type": type_, **kw}


def errors(reader: object, writer: object) -> list[str]:
    return avro.can_read(P(reader), P(writer))


# -- resolution rules, one case each ------------------------------------------------------------------------

@pytest.mark.parametrize("writer,reader", [("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
                                           ("long", "double"), ("float", "double"), ("string", "bytes"),
                                           ("bytes", "string")])
def test_promotions_read(writer: str, reader: str) -> None:
    assert errors(reader, writer) == []


@pytest.mark.parametrize("writer,reader", [("long", "int"), ("double", "float"), ("string", "int"),
                                           ("boolean", "null")])
def test_other_primitive_changes_do_not(writer: str, reader: str) -> None:
    assert "TYPE_MISMATCH" in errors(reader, writer)[0]


def test_reader_field_without_default_missing_in_writer() -> None:
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in errors(record(f("a", "int"), f("b", "int")),
                                                          record(f("a", "int")))[0]
    assert errors(record(f("a", "int"), f("b", "int", default=3)), record(f("a", "int"))) == []
    assert errors(record(f("a", "int")), record(f("a", "int"), f("b", "int"))) == []   # writer extras skipped


def test_field_aliases_match_renamed_fields() -> None:
    assert errors(record(f("renamed", "int", aliases=["old"])), record(f("old", "int"))) == []


def test_record_names_and_aliases() -> None:
    assert "NAME_MISMATCH" in errors(record(f("a", "int"), name="X"), record(f("a", "int"), name="Y"))[0]
    assert errors({**record(f("a", "int"), name="X"), "aliases": ["Y"]}, record(f("a", "int"), name="Y")) == []


def test_enum_symbols_and_reader_default() -> None:
    w = {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}
    r = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
    assert "MISSING_ENUM_SYMBOLS" in errors(r, w)[0]
    assert errors({**r, "default": "A"}, w) == []
    assert errors(w, r) == []


def test_fixed_size_and_name() -> None:
    assert "FIXED_SIZE_MISMATCH" in errors({"type": "fixed", "name": "F", "size": 4},
                                           {"type": "fixed", "name": "F", "size": 8})[0]
    assert errors({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 4}) == []


def test_arrays_and_maps_check_their_items() -> None:
    assert errors({"type": "array", "items": "long"}, {"type": "array", "items": "int"}) == []
    assert errors({"type": "map", "values": "int"}, {"type": "map", "values": "long"})
    assert "TYPE_MISMATCH" in errors({"type": "map", "values": "int"}, {"type": "array", "items": "int"})[0]


def test_unions() -> None:
    assert errors(["null", "int"], "int") == []                                   # reader union holds the type
    assert "MISSING_UNION_BRANCH" in errors(["null", "string"], "int")[0]
    assert errors(["null", "long"], ["null", "int"]) == []                        # each writer branch readable
    assert errors("int", ["null", "int"])                                          # null has nowhere to go
    assert errors(["null", "string", "int"], ["null", "int"]) == []


def test_recursive_types_terminate() -> None:
    node = {"type": "record", "name": "Node", "fields": [f("v", "int"), f("next", ["null", "Node"])]}
    assert errors(node, node) == []


# -- parsing and the canonical string ----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    {"type": "record", "name": "A"},                                  # no fields
    {"type": "record", "name": "A", "fields": [f("x", "Nope")]},      # undefined name
    {"type": "record", "name": "A", "fields": [f("x", "int"), f("x", "int")]},
    {"type": "enum", "name": "E", "symbols": ["A", "A"]},
    {"type": "fixed", "name": "F", "size": -1},
    ["int", "int"], ["null", ["int"]],
    {"type": "record", "name": "A", "fields": [f("x", "int", default="no")]},    # default of the wrong type
    {"type": "record", "name": "A", "fields": [f("x", ["null", "int"], default=1)]},  # union default: 1st branch
    {"type": "record", "name": "1A", "fields": []},
])
def test_invalid_schemas(bad: object) -> None:
    with pytest.raises(avro.AvroError):
        P(bad)


def test_canonical_writes_named_types_once_and_namespaces_only_where_they_change() -> None:
    s = P({"type": "record", "name": "Outer", "namespace": "a.b", "doc": "d",
           "fields": [f("x", {"type": "fixed", "name": "Md5", "size": 16}), f("y", "Md5"),
                      f("z", {"type": "string", "logicalType": "uuid"}, default="u", order="ascending")]})
    assert avro.canonical(s) == (
        '{"type":"record","name":"Outer","namespace":"a.b","doc":"d","fields":['
        '{"name":"x","type":{"type":"fixed","name":"Md5","size":16}},{"name":"y","type":"Md5"},'
        '{"name":"z","type":{"type":"string","logicalType":"uuid"},"default":"u"}]}')
    assert avro.canonical(P({"type": "int"})) == '"int"'


# -- the levels, through the registry ----------------------------------------------------------------------

V1 = record(f("a", "int"))
V2 = record(f("a", "int"), f("b", "string", default="x"))     # adds a field with a default
V3 = record(f("a", "int"), f("b", "string", default="x"), f("c", "int"))   # adds one without


def _level(level: str, *schemas: object) -> list[int | str]:
    reg = Registry()
    reg.set_config(None, {"compatibility": level})
    out: list[int | str] = []
    for s in schemas:
        try:
            out.append(reg.register("s", {"schema": json.dumps(s)})["id"])
        except RegistryError as exc:
            assert exc.status == 409
            out.append("409")
    return out


def test_backward_new_reads_old() -> None:
    assert _level("BACKWARD", V1, V2) == [1, 2]
    assert _level("BACKWARD", V1, V3) == [1, "409"]            # c has no default
    assert _level("BACKWARD", V2, V1) == [1, 2]                # dropping a field is backward compatible


def test_forward_old_reads_new() -> None:
    assert _level("FORWARD", V1, V3) == [1, 2]                 # the old reader skips new fields
    assert _level("FORWARD", record(f("a", "int"), f("b", "int")), V1) == [1, "409"]   # old needs b


def test_full_both_ways() -> None:
    assert _level("FULL", V1, V2) == [1, 2]
    assert _level("FULL", V1, V3) == [1, "409"]
    assert _level("FULL", record(f("a", "int"), f("b", "int")), V1) == [1, "409"]


def test_transitive_levels_check_every_live_version_not_only_the_latest() -> None:
    a = record(f("a", "int"))
    b = record(f("a", "int"), f("n", "int", default=0))
    c = record(f("n", "int", default=0))           # reads a and b: n has a default
    c_bad = record(f("n", "int"))                   # reads b (n there) but not a (no n, no default)
    assert _level("BACKWARD", a, b, c_bad) == [1, 2, 3]
    assert _level("BACKWARD_TRANSITIVE", a, b, c_bad) == [1, 2, "409"]
    assert _level("BACKWARD_TRANSITIVE", a, b, c) == [1, 2, 3]
    # forward: each old reader must read the new one
    fa = record(f("a", "int"), f("x", "int"))
    fb = record(f("a", "int"), f("x", "int", default=1))
    fc = record(f("a", "int"))                      # fb reads it (x defaults), fa cannot
    assert _level("FORWARD", fa, fb, fc) == [1, 2, 3]
    assert _level("FORWARD_TRANSITIVE", fa, fb, fc) == [1, 2, "409"]
    assert _level("FULL", fa, fb, fc) == [1, 2, 3]               # each pair of neighbours reads both ways
    assert _level("FULL_TRANSITIVE", fa, fb, fc) == [1, 2, "409"]   # fa cannot read fc (x, no default)
    assert _level("FULL_TRANSITIVE", a, b, c_bad) == [1, 2, "409"]
    assert _level("FULL_TRANSITIVE", a, b, c) == [1, 2, "409"]      # a cannot read c (no a, no default)
    d = record(f("a", "int"), f("n", "int", default=0), f("m", "string", default=""))
    assert _level("FULL_TRANSITIVE", a, b, d) == [1, 2, 3]          # only fields with defaults come and go


def test_none_accepts_anything() -> None:
    assert _level("NONE", record(f("a", "int")), record(f("a", "string")), "int") == [1, 2, 3]
