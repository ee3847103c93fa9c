"""The files a schema may import without a reference, as Confluent's registry knows them: Protobuf's
well-known types, ``google/type`` and Confluent's own (``confluent/meta.proto``, ``confluent/type/decimal.proto``).

Only their type declarations matter here (to resolve a field's type and compare it); they are written out
from the public definitions of those messages, with the option messages of ``descriptor.proto`` reduced to
their extension ranges (enough for a custom option's ``extend``). Pure data.
"""
from __future__ import annotations

from functools import cache

from kafkalite.registry.compat.protobuf.model import ProtoFile

_P = 'syntax = "proto3";\npackage google.protobuf;\n'
_T = 'syntax = "proto3";\npackage google.type;\n'
_WRAPPERS = "".join(f"message {n}Value {{ {t} value = 1; }}\n" for n, t in (
    ("Double", "double"), ("Float", "float"), ("Int64", "int64"), ("UInt64", "uint64"), ("Int32", "int32"),
    ("UInt32", "uint32"), ("Bool", "bool"), ("String", "string"), ("Bytes", "bytes")))
_OPTIONS = "".join(f"message {n} {{ extensions 1000 to max; }}\n" for n in (
    "FileOptions", "MessageOptions", "FieldOptions", "OneofOptions", "EnumOptions", "EnumValueOptions",
    "ServiceOptions", "MethodOptions", "ExtensionRangeOptions"))

TEXTS = {
    "google/protobuf/any.proto": _P + "message Any { string type_url = 1; bytes value = 2; }\n",
    "google/protobuf/duration.proto": _P + "message Duration { int64 seconds = 1; int32 nanos = 2; }\n",
    "google/protobuf/timestamp.proto": _P + "message Timestamp { int64 seconds = 1; int32 nanos = 2; }\n",
    "google/protobuf/empty.proto": _P + "message Empty {}\n",
    "google/protobuf/field_mask.proto": _P + "message FieldMask { repeated string paths = 1; }\n",
    "google/protobuf/source_context.proto": _P + "message SourceContext { string file_name = 1; }\n",
    "google/protobuf/wrappers.proto": _P + _WRAPPERS,
    "google/protobuf/struct.proto": _P + (
        "message Struct { map<string, Value> fields = 1; }\n"
        "message Value { oneof kind { NullValue null_value = 1; double number_value = 2; string string_value = 3;"
        " bool bool_value = 4; Struct struct_value = 5; ListValue list_value = 6; } }\n"
        "enum NullValue { NULL_VALUE = 0; }\n"
        "message ListValue { repeated Value values = 1; }\n"),
    "google/protobuf/descriptor.proto": 'syntax = "proto2";\npackage google.protobuf;\n' + _OPTIONS,
    "google/type/date.proto": _T + "message Date { int32 year = 1; int32 month = 2; int32 day = 3; }\n",
    "google/type/timeofday.proto": _T + (
        "message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }\n"),
    "google/type/latlng.proto": _T + "message LatLng { double latitude = 1; double longitude = 2; }\n",
    "google/type/money.proto": _T + (
        "message Money { string currency_code = 1; int64 units = 2; int32 nanos = 3; }\n"),
    "google/type/decimal.proto": _T + "message Decimal { string value = 1; }\n",
    "google/type/fraction.proto": _T + "message Fraction { int64 numerator = 1; int64 denominator = 2; }\n",
    "google/type/month.proto": _T + "enum Month { MONTH_UNSPECIFIED = 0; JANUARY = 1; FEBRUARY = 2; MARCH = 3;"
                                    " APRIL = 4; MAY = 5; JUNE = 6; JULY = 7; AUGUST = 8; SEPTEMBER = 9;"
                                    " OCTOBER = 10; NOVEMBER = 11; DECEMBER = 12; }\n",
    "google/type/dayofweek.proto": _T + "enum DayOfWeek { DAY_OF_WEEK_UNSPECIFIED = 0; MONDAY = 1; TUESDAY = 2;"
                                        " WEDNESDAY = 3; THURSDAY = 4; FRIDAY = 5; SATURDAY = 6; SUNDAY = 7; }\n",
    "confluent/meta.proto": 'syntax = "proto3";\npackage confluent;\n'
                            'import "google/protobuf/descriptor.proto";\n'
                            "message Meta { string doc = 1; map<string, string> params = 2;"
                            " repeated string tags = 3; }\n"
                            "extend google.protobuf.FileOptions { Meta file_meta = 1088; }\n"
                            "extend google.protobuf.MessageOptions { Meta message_meta = 1088; }\n"
                            "extend google.protobuf.FieldOptions { Meta field_meta = 1088; }\n"
                            "extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }\n"
                            "extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }\n",
    "confluent/type/decimal.proto": 'syntax = "proto3";\npackage confluent.type;\n'
                                    "message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }\n",
}


@cache
def known(path: str) -> ProtoFile | None:
    from kafkalite.registry.compat.protobuf.parser import parse  # parsed on first use

    text = TEXTS.get(path)
    return parse(text) if text is not None else None


def is_known(path: str) -> bool:
    return path in TEXTS
