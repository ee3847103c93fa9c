"""The ``_schemas`` records against the format Confluent Schema Registry's source defines.

Facts from confluentinc/schema-registry (core/.../storage): ``SchemaKey`` is ``@JsonPropertyOrder({"keytype",
"subject", "version", "magic"})`` with magic byte 1; ``ConfigKey``, ``ModeKey``, ``DeleteSubjectKey``,
``ClearSubjectKey`` are ``{"keytype", "subject", "magic"}`` with magic 0, ``NoopKey`` ``{"keytype", "magic"}``;
every class is ``@JsonInclude(NON_EMPTY)`` (a null subject is left out) and ``ignoreUnknown``; ``SchemaValue``'s
creator order is subject, version, id, md5, schemaType, references, metadata, ruleSet, schema, deleted; the
serializer is a plain Jackson ObjectMapper (compact JSON); a SCHEMA key with a magic byte other than 0 or 1 is
refused ("Can't deserialize schema for the magic byte 2"); a value without ``deleted`` (magic 0 era) reads as
not deleted and without ``schemaType`` as AVRO.
"""
from __future__ import annotations

import json

import pytest

from kafkalite.registry import records as R


def test_schema_key_bytes_exactly_as_confluent_orders_them() -> None:
    assert R.encode_key(R.schema_key("test", 1)) == b'{"keytype":"SCHEMA","subject":"test","version":1,"magic":1}'


@pytest.mark.parametrize("maker,keytype", [(R.config_key, "CONFIG"), (R.mode_key, "MODE")])
def test_subject_keys_have_magic_0_and_global_ones_no_subject(maker, keytype) -> None:  # type: ignore[no-untyped-def]
    assert R.encode_key(maker("foo")) == f'{{"keytype":"{keytype}","subject":"foo","magic":0}}'.encode()
    assert R.encode_key(maker(None)) == f'{{"keytype":"{keytype}","magic":0}}'.encode()


def test_delete_clear_and_noop_keys() -> None:
    assert R.encode_key(R.Key(R.DELETE_SUBJECT, "s")) == b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    assert R.encode_key(R.Key(R.CLEAR_SUBJECT, "s")) == b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}'
    assert R.encode_key(R.Key(R.NOOP)) == b'{"keytype":"NOOP","magic":0}'


def test_schema_value_field_order_and_empty_fields_left_out() -> None:
    v = R.SchemaValue("test", 1, 7, '"string"')
    assert R.encode_schema_value(v) == \
        b'{"subject":"test","version":1,"id":7,"schemaType":"AVRO","schema":"\\"string\\"","deleted":false}'
    full = R.SchemaValue("t", 2, 3, "syntax = \"proto3\";", "PROTOBUF",
                         [{"name": "other.proto", "subject": "o", "version": 1}],
                         {"properties": {"owner": "me"}}, {"domainRules": []}, True)
    assert list(json.loads(R.encode_schema_value(full))) == \
        ["subject", "version", "id", "schemaType", "references", "metadata", "ruleSet", "schema", "deleted"]


def test_reads_confluents_own_test_values() -> None:
    # SchemaValuesTest's magic-0 value: no "deleted", no "schemaType"
    old = ('{"subject":"test","version":1,"id":1,"schema":"{\\"type\\":\\"record\\",\\"name\\":\\"myrecord\\",'
           '\\"fields\\":[{\\"name\\":\\"f1067572235\\",\\"type\\":\\"string\\"}]}"}')
    v = R.decode_schema_value(old.encode())
    assert (v.subject, v.version, v.id, v.schema_type, v.deleted) == ("test", 1, 1, "AVRO", False)
    assert json.loads(v.schema)["name"] == "myrecord"
    assert R.decode_schema_value(old[:-1].encode() + b',"deleted":true}').deleted
    key0 = R.decode_key(b'{"keytype":"SCHEMA","subject":"test","version":1,"magic":0}')
    assert (key0.keytype, key0.subject, key0.version, key0.magic) == ("SCHEMA", "test", 1, 0)


def test_unsupported_magic_and_junk_are_refused() -> None:
    with pytest.raises(R.RecordError, match="magic byte 2"):
        R.decode_key(b'{"keytype":"SCHEMA","subject":"test","version":1,"magic":2}')
    for junk in (b"", b"[]", b'{"keytype":"NOPE"}', b"\xff", b'{"keytype":"SCHEMA","magic":1}'):
        with pytest.raises(R.RecordError):
            R.decode_key(junk)


def test_unknown_fields_are_ignored_and_round_trips() -> None:
    key = R.decode_key(b'{"keytype":"CONFIG","subject":null,"magic":0,"tenant":"x"}')
    assert key == R.config_key(None)
    cfg = R.decode_config_value(b'{"compatibilityLevel":"FULL","future":1}')
    assert cfg == {"compatibilityLevel": "FULL"}
    assert R.encode_config_value("s", {"compatibilityLevel": "NONE"}) == b'{"subject":"s","compatibilityLevel":"NONE"}'
    assert R.encode_mode_value(None, "READONLY") == b'{"mode":"READONLY"}'
    assert R.decode_mode_value(R.encode_mode_value("s", "IMPORT")) == "IMPORT"
    assert R.decode_delete_subject_value(R.encode_delete_subject_value("s", 3)) == ("s", 3)
    v = R.SchemaValue("s", 1, 2, "x", "JSON", [], None, None, False, "bWQ1")
    assert R.decode_schema_value(R.encode_schema_value(v)) == v
