"""Protobuf in the pure registry: Confluent's compatibility rules, one case per rule (the kind of difference and
Confluent's message, and whether it passes BACKWARD / FORWARD), canonical and normalized text, references,
the serialized form, and invalid schemas as 42201."""
from __future__ import annotations

import base64

import pytest

from kafkalite.registry import compat
from kafkalite.registry.compat import protobuf as pb
from kafkalite.registry.compat.protobuf import diff
from kafkalite.registry.core import Registry, RegistryError

HEAD = 'syntax = "proto3";\npackage t;\n'


def kinds(old: str, new: str, refs_old: list | None = None, refs_new: list | None = None) -> list[str]:
    """Every difference Confluent's walk finds from ``old`` to ``new`` (compatible ones included)."""
    o, n = pb.parse(HEAD + old, refs_old), pb.parse(HEAD + new, refs_new)
    return [k for k, _ in diff.compare(o.file, n.file, o.symbols, n.symbols)]


def backward(old: str, new: str) -> list[str]:
    return pb.can_read(pb.parse(HEAD + new), pb.parse(HEAD + old))


# -- each rule --------------------------------------------------------------------------------------------
def test_field_added_or_removed_is_compatible_both_ways() -> None:
    old, new = "message M { int32 a = 1; }", "message M { int32 a = 1; string b = 2; }"
    assert kinds(old, new) == ["FIELD_ADDED"] and kinds(new, old) == ["FIELD_REMOVED"]
    assert backward(old, new) == [] and backward(new, old) == []


def test_field_renamed_is_compatible() -> None:
    assert kinds("message M { int32 a = 1; }", "message M { int32 b = 1; }") == ["FIELD_NAME_CHANGED"]
    assert backward("message M { int32 a = 1; }", "message M { int32 b = 1; }") == []


@pytest.mark.parametrize(("a", "b"), [("int32", "int64"), ("uint32", "bool"), ("int64", "uint64"),
                                      ("sint32", "sint64"), ("string", "bytes"), ("fixed32", "sfixed32"),
                                      ("fixed64", "sfixed64")])
def test_scalar_types_within_a_group_are_compatible(a: str, b: str) -> None:
    assert backward(f"message M {{ {a} x = 1; }}", f"message M {{ {b} x = 1; }}") == []


@pytest.mark.parametrize(("a", "b"), [("int32", "sint32"), ("int32", "string"), ("float", "double"),
                                      ("fixed32", "fixed64"), ("int64", "fixed64"), ("bytes", "int32")])
def test_scalar_types_across_groups_are_not(a: str, b: str) -> None:
    msgs = backward(f"message M {{ {a} x = 1; }}", f"message M {{ {b} x = 1; }}")
    assert msgs == ['{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path '
                    "'#/M/1' in the new schema does not match its kind in the old schema\"}"]


def test_enum_and_integer_are_one_group() -> None:
    old = "message M { int32 x = 1; }"
    new = "message M { E x = 1; } enum E { A = 0; }"
    assert backward(old, new) == []


def test_field_kind_changed_between_scalar_message_and_map() -> None:
    scalar = "message M { int32 x = 1; } message N { int32 y = 1; }"
    message = "message M { N x = 1; } message N { int32 y = 1; }"
    mapped = "message M { map<string, int32> x = 1; } message N { int32 y = 1; }"
    for old, new in ((scalar, message), (message, mapped), (mapped, scalar)):
        assert kinds(old, new) == ["FIELD_KIND_CHANGED"]
    assert backward(scalar, message) == ['{errorType:"FIELD_KIND_CHANGED", description:"The type of a field at '
                                         "path '#/M/1' in the new schema does not match the old schema\"}"]


def test_message_field_type_renamed_is_not_compatible() -> None:
    old = "message M { A x = 1; } message A { int32 y = 1; } message B { int32 y = 1; }"
    new = "message M { B x = 1; } message A { int32 y = 1; } message B { int32 y = 1; }"
    assert kinds(old, new) == ["FIELD_NAMED_TYPE_CHANGED"]


def test_numeric_label_change_is_not_compatible_string_label_change_is() -> None:
    p2 = 'syntax = "proto2";\npackage t;\n'
    o = pb.parse(p2 + "message M { optional int32 a = 1; optional string s = 2; }")
    n = pb.parse(p2 + "message M { repeated int32 a = 1; repeated string s = 2; }")
    found = [k for k, _ in diff.compare(o.file, n.file, o.symbols, n.symbols)]
    assert found == ["FIELD_NUMERIC_LABEL_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED"]
    assert [m.split(",")[0] for m in pb.can_read(n, o)] == ['{errorType:"FIELD_NUMERIC_LABEL_CHANGED"']


def test_required_field_added_or_removed_is_not_compatible() -> None:
    p2 = 'syntax = "proto2";\npackage t;\n'
    o = pb.parse(p2 + "message M { optional int32 a = 1; }")
    n = pb.parse(p2 + "message M { optional int32 a = 1; required int32 b = 2; }")
    assert pb.can_read(n, o) == ['{errorType:"REQUIRED_FIELD_ADDED", description:"A required field  at path '
                                 "'#/M/2' in the new schema is missing in the old schema\"}"]
    assert pb.can_read(o, n) == ['{errorType:"REQUIRED_FIELD_REMOVED", description:"The new schema is missing a '
                                 "required field at path: '#/M/2' in the old schema\"}"]


def test_message_removed_is_not_compatible_added_and_moved_are() -> None:
    two = "message A { int32 x = 1; } message B { int32 y = 1; }"
    assert kinds(two, "message A { int32 x = 1; }") == ["MESSAGE_REMOVED"]
    assert backward(two, "message A { int32 x = 1; }") == [
        '{errorType:"MESSAGE_REMOVED", description:"The new schema is missing a MESSAGE type at path \'#/B\' in '
        'the old schema"}']
    assert kinds("message A { int32 x = 1; }", two) == ["MESSAGE_ADDED"]
    assert sorted(kinds(two, "message B { int32 y = 1; } message A { int32 x = 1; }")) == ["MESSAGE_MOVED"] * 2


def test_package_changed_is_not_compatible() -> None:
    o = pb.parse('syntax = "proto3";\npackage a;\nmessage M { int32 x = 1; }')
    n = pb.parse('syntax = "proto3";\npackage b;\nmessage M { int32 x = 1; }')
    assert pb.can_read(n, o) == ['{errorType:"PACKAGE_CHANGED", description:"The package at \'#/\' in the new '
                                 'schema does not match the package in the old schema"}']


def test_enum_constants_added_removed_renamed_and_enums_removed_are_compatible() -> None:
    old = "message M { E e = 1; } enum E { A = 0; B = 1; } enum F { X = 0; }"
    new = "message M { E e = 1; } enum E { A = 0; BB = 1; C = 2; }"
    assert sorted(kinds(old, new)) == ["ENUM_CONST_ADDED", "ENUM_CONST_CHANGED", "ENUM_REMOVED"]
    assert backward(old, new) == []


def test_oneof_rules() -> None:
    base = "message M { oneof o { int32 a = 1; string b = 2; } int32 c = 3; int32 d = 4; }"
    # a member removed from a surviving oneof: not compatible
    assert backward(base, "message M { oneof o { int32 a = 1; } int32 c = 3; int32 d = 4; }") == [
        '{errorType:"ONEOF_FIELD_REMOVED", description:"The new schema is missing a oneof field at path '
        "'#/M/o/2' in the old schema\"}"]
    # the whole oneof removed: compatible
    assert kinds(base, "message M { int32 c = 3; int32 d = 4; }") == ["ONEOF_REMOVED"]
    # a member added, a member moved out to the top level: compatible
    assert backward(base, "message M { oneof o { int32 a = 1; string b = 2; int32 e = 5; } int32 c = 3; "
                          "int32 d = 4; }") == []
    assert "ONEOF_FIELD_MOVED_TO_TOP_LEVEL" in kinds(base, "message M { oneof o { int32 a = 1; } string b = 2; "
                                                           "int32 c = 3; int32 d = 4; }")
    # one top-level field joining an existing oneof, or several moved into a new one: not compatible
    assert [m.split(",")[0] for m in backward(base, "message M { oneof o { int32 a = 1; string b = 2; "
                                                    "int32 c = 3; } int32 d = 4; }")] == [
        '{errorType:"FIELD_MOVED_TO_EXISTING_ONEOF"']
    assert [m.split(",")[0] for m in backward(base, "message M { oneof o { int32 a = 1; string b = 2; } "
                                                    "oneof p { int32 c = 3; int32 d = 4; } }")] == [
        '{errorType:"MULTIPLE_FIELDS_MOVED_TO_ONEOF"']
    # a new oneof holding one former top-level field and new ones: compatible
    assert backward(base, "message M { oneof o { int32 a = 1; string b = 2; } oneof p { int32 c = 3; "
                          "int32 x = 9; } int32 d = 4; }") == []


def test_map_written_as_entry_message_equals_map_field() -> None:
    as_map = "message M { map<string, int64> m = 1; }"
    as_entry = ("message M { repeated MEntry m = 1; message MEntry { option map_entry = true; string key = 1; "
                "int64 value = 2; } }")
    assert diff.incompatible([(k, "") for k in kinds(as_map, as_entry)]) == []
    assert backward(as_map, "message M { map<string, string> m = 1; }") != []


def test_referenced_message_compared_field_by_field() -> None:
    dep_v1 = pb.canonical(pb.parse('syntax = "proto3";\npackage d;\nmessage A { int32 x = 1; }'))
    dep_v2 = pb.canonical(pb.parse('syntax = "proto3";\npackage d;\nmessage A { string x = 1; }'))
    text = 'import "d.proto";\nmessage M { d.A a = 1; }'
    found = kinds(text, text, [("d.proto", dep_v1, [])], [("d.proto", dep_v2, [])])
    assert found == ["FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"]


# -- through the registry: levels, 409 and messages ----------------------------------------------------
def proto(text: str, **extra: object) -> dict[str, object]:
    return {"schema": HEAD + text, "schemaType": "PROTOBUF", **extra}


def test_levels_through_the_registry() -> None:
    reg = Registry()
    assert reg.register("s", proto("message M { int32 a = 1; }")) == {"id": 1}
    # BACKWARD (default): new reads old
    with pytest.raises(RegistryError) as info:
        reg.register("s", proto("message M { string a = 1; }"))
    e = info.value
    assert (e.status, e.code) == (409, 409)
    assert 'errorType:"FIELD_SCALAR_KIND_CHANGED"' in e.message and "{oldSchemaVersion: 1}" in e.message
    assert "{compatibility: 'BACKWARD'}" in e.message
    # FORWARD: the old schema reads the new one's data; the message calls the reader "old"
    reg.set_config("s", {"compatibility": "FORWARD"})
    msgs = reg.check_compatibility("s", "latest", proto("message M { sint32 a = 1; }"))
    assert "path '#/M/1' in the old schema does not match its kind in the new schema" in msgs[0]
    assert reg.register("s", proto("message M { int32 a = 1; int32 b = 2; }")) == {"id": 2}
    reg.set_config("s", {"compatibility": "FULL_TRANSITIVE"})
    assert reg.check_compatibility("s", None, proto("message M { int64 a = 1; }")) == []
    reg.set_config("s", {"compatibility": "NONE"})
    assert reg.register("s", proto("message M { string a = 1; }")) == {"id": 3}


def test_canonical_text_is_stored_and_normalize_folds_spellings() -> None:
    reg = Registry()
    reg.register("c", proto("message   M{int32 a=1;// note\n}"))
    assert reg.version("c", "1").schema == 'syntax = "proto3";\npackage t;\n\nmessage M {\n  int32 a = 1;\n}\n'
    one = proto("message M { N n = 2; int32 a = 1; message N { int32 x = 1; } }")
    other = proto("message M { int32 a = 1; .t.M.N n = 2; message N { int32 x = 1; } }")
    first = reg.register("n", one, normalize=True)
    assert reg.register("n", other, normalize=True) == first
    assert reg.version("n", "1").schema.count(".t.M.N n = 2;") == 1


def test_base64_descriptor_is_stored_as_text_and_served_serialized() -> None:
    reg = Registry()
    text_form = pb.parse(HEAD + "message M { int32 a = 1; map<string, int32> m = 2; }")
    b64 = pb.serialized(text_form)
    out = reg.register("b", {"schema": b64, "schemaType": "PROTOBUF"})
    stored = reg.version("b", "1")
    assert stored.schema.startswith('syntax = "proto3";\npackage t;\n')
    assert "option map_entry = true;" in stored.schema          # a descriptor's map entries stay messages
    served = reg.formatted(stored, "serialized").schema
    assert base64.b64decode(served) == base64.b64decode(b64)
    # the text form is the same schema: registering it again under BACKWARD finds no difference
    assert reg.check_compatibility("b", "latest", proto("message M { int32 a = 1; map<string, int32> m = 2; }")) == []
    assert out == {"id": 1}


def test_references_resolve_by_import_path() -> None:
    reg = Registry()
    reg.register("dep", {"schema": 'syntax = "proto3";\npackage d;\nmessage A { int32 x = 1; }',
                         "schemaType": "PROTOBUF"})
    body = {"schema": HEAD + 'import "d/a.proto";\nmessage M { d.A a = 1; }', "schemaType": "PROTOBUF",
            "references": [{"name": "d/a.proto", "subject": "dep", "version": 1}]}
    assert reg.register("main", body) == {"id": 2}
    missing = {**body, "references": []}
    with pytest.raises(RegistryError) as info:
        reg.register("other", missing)
    assert (info.value.status, info.value.code) == (422, 42201)


@pytest.mark.parametrize("text", ["message {", "message M { int32 a = 1; int32 b = 1; }",
                                  "message M { Nope n = 1; }", "not a proto", "bWVzc2FnZQ=="])
def test_invalid_schemas_are_42201(text: str) -> None:
    with pytest.raises(RegistryError) as info:
        Registry().register("x", proto(text))
    assert (info.value.status, info.value.code) == (422, 42201)


def test_types_list_and_parse_entry_point() -> None:
    assert "PROTOBUF" in compat.TYPES
    parsed = compat.parse("PROTOBUF", HEAD + "message M { int32 a = 1; }")
    assert parsed.canonical.endswith("message M {\n  int32 a = 1;\n}\n")
