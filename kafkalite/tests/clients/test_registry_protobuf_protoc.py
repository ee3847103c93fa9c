"""kafkalite's own .proto parser and FileDescriptorProto writer (kafkalite.registry.compat.protobuf) against
protoc (grpcio-tools, in process) and the protobuf runtime: for each schema, the descriptor kafkalite writes for
``?format=serialized`` equals protoc's (json_name defaults and field order aside), the protobuf runtime's
DescriptorPool accepts it, and protoc's descriptor read back by kafkalite normalizes to the same text as the
.proto itself. Schemas protoc refuses, kafkalite refuses too."""
from __future__ import annotations

import base64
import importlib.resources
from pathlib import Path

import pytest

from kafkalite.tests.support.requires import require

require("grpc_tools", "protobuf")
from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2  # noqa: E402
from grpc_tools import protoc  # noqa: E402

from kafkalite.registry.compat import protobuf as pb  # noqa: E402

assert timestamp_pb2.DESCRIPTOR is not None   # loaded into the default pool, where the tests find it
INCLUDE = str(importlib.resources.files("grpc_tools") / "_proto")

PROTO3 = """
syntax = "proto3";
package com.example;
import "google/protobuf/timestamp.proto";
option java_package = "com.example.proto";
option optimize_for = SPEED;
/* a user */
message User {
  string name = 1;
  int32 age = 2 [deprecated = true];
  map<string, Address> addresses = 3;
  optional string email = 4;
  google.protobuf.Timestamp created = 5;
  oneof contact { string phone = 6; Address postal = 7; }
  repeated Kind kinds = 8 [packed = false];
  message Address { string city = 1; map<int64, Kind> codes = 2; }
  enum Kind { option allow_alias = true; UNKNOWN = 0; A = 1; ALSO_A = 1; }
  reserved 9, 10 to 12;
  reserved "old";
  bytes blob = 13;
  repeated double scores = 14;
}
enum Color { RED = 0; GREEN = 1 [deprecated = true]; }
service Users {
  rpc Get (User) returns (User);
  rpc Watch (stream User) returns (stream User) { option deprecated = true; }
}
"""

PROTO2 = """
syntax = "proto2";
package legacy.v1;
message Order {
  required int64 id = 1;
  optional string note = 2 [default = "none"];
  optional Status status = 3 [default = OPEN];
  repeated Line lines = 4;
  optional double price = 5 [default = 1.5];
  optional bool urgent = 6 [default = true];
  extensions 100 to 199;
  enum Status { OPEN = 1; CLOSED = 2; }
  message Line { required string sku = 1; optional uint32 qty = 2 [default = 1]; }
}
extend Order { optional string tag = 100; }
"""

NESTED = """
syntax = "proto3";
package a.b;
message Outer {
  message Middle {
    message Inner { int32 x = 1; }
    Inner inner = 1;
    repeated Outer.Middle.Inner inners = 2;
  }
  Middle middle = 1;
  .a.b.Outer.Middle.Inner direct = 2;
  map<string, string> labels = 3;
  map<string, Middle> middles = 4;
}
"""

COMMON = """
syntax = "proto3";
package shared;
message Money { string currency = 1; int64 units = 2; }
enum Currency { CURRENCY_UNSPECIFIED = 0; EUR = 1; }
"""

USES_COMMON = """
syntax = "proto3";
package shop;
import "shared/money.proto";
message Price { shared.Money amount = 1; shared.Currency currency = 2; }
"""


def _protoc(tmp: Path, files: dict[str, str], main: str) -> descriptor_pb2.FileDescriptorProto:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    out = tmp / "out.pb"
    rc = protoc.main(["protoc", f"-I{tmp}", f"-I{INCLUDE}", f"--descriptor_set_out={out}", main])
    assert rc == 0, f"protoc refused {main}"
    return descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[-1]


def _comparable(fd: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """json_name defaults cleared, fields in number order (protoc keeps oneof members where they were written,
    kafkalite writes them after the other fields: the order of fields carries no meaning)."""
    fd = descriptor_pb2.FileDescriptorProto.FromString(fd.SerializeToString())
    fd.name = "default"
    fd.ClearField("source_code_info")

    def fix(m: descriptor_pb2.DescriptorProto) -> None:
        fields = sorted(m.field, key=lambda f: f.number)
        for f in fields:
            f.ClearField("json_name")
        del m.field[:]
        m.field.extend(fields)
        for n in m.nested_type:
            fix(n)

    for m in fd.message_type:
        fix(m)
    for e in fd.extension:
        e.ClearField("json_name")
    return fd


@pytest.mark.parametrize("text", [PROTO3, PROTO2, NESTED], ids=["proto3", "proto2", "nested"])
def test_descriptor_equals_protocs(tmp_path: Path, text: str) -> None:
    theirs = _protoc(tmp_path, {"x.proto": text}, "x.proto")
    schema = pb.parse(text)
    ours = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(pb.serialized(schema)))
    assert _comparable(ours) == _comparable(theirs)
    # the protobuf runtime builds it (the well-known imports from the runtime's own files)
    pool = descriptor_pool.DescriptorPool()
    for dep in theirs.dependency:
        pool.AddSerializedFile(descriptor_pool.Default().FindFileByName(dep).serialized_pb)
    pool.Add(ours)
    # protoc's descriptor (its json_name defaults cleared: Confluent would show them as options), read back, is
    # the same schema
    back = pb.parse(base64.b64encode(_comparable(theirs).SerializeToString()).decode())
    assert pb.normalized(back) == pb.normalized(schema)


def test_references_resolve_like_protoc(tmp_path: Path) -> None:
    theirs = _protoc(tmp_path, {"shared/money.proto": COMMON, "shop/price.proto": USES_COMMON}, "shop/price.proto")
    common = pb.parse(COMMON)
    schema = pb.parse(USES_COMMON, [("shared/money.proto", pb.canonical(common), [])])
    ours = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(pb.serialized(schema)))
    assert _comparable(ours) == _comparable(theirs)
    pool = descriptor_pool.DescriptorPool()
    dep = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(pb.serialized(common)))
    dep.name = "shared/money.proto"
    pool.Add(dep)
    pool.Add(ours)
    assert pool.FindMessageTypeByName("shop.Price").fields_by_name["currency"].enum_type.full_name == \
        "shared.Currency"


@pytest.mark.parametrize("text", [
    'syntax = "proto3"; message A { required int32 x = 1; }',
    'syntax = "proto3"; message A { int32 x = 1; int32 y = 1; }',
    'syntax = "proto3"; message A { int32 x = 0; }',
    'syntax = "proto3"; message A { int32 x = 19000; }',
    'syntax = "proto3"; message A { int32 x = 1; string x = 2; }',
    'syntax = "proto3"; enum E { A = 1; }',
    'syntax = "proto3"; message A { Missing m = 1; }',
    'syntax = "proto3"; message A { map<double, string> m = 1; }',
    'syntax = "proto3"; message A { int32 x = 1 [default = 3]; }',
    'syntax = "proto2"; message A { int32 x = 1; }',
    'syntax = "proto3"; message A { int32 x = 5; reserved 5; }',
    'syntax = "proto3"; message A { int32 x = 1 }',
    'syntax = "proto3"; enum E { A = 0; B = 0; }',
], ids=["required-in-proto3", "number-reused", "number-0", "number-19000", "name-reused", "enum-first-not-0",
        "unknown-type", "map-key-double", "default-in-proto3", "proto2-no-label", "reserved-number",
        "missing-semicolon", "enum-alias-without-allow_alias"])
def test_what_protoc_refuses_kafkalite_refuses(tmp_path: Path, text: str) -> None:
    (tmp_path / "bad.proto").write_text(text)
    assert protoc.main(["protoc", f"-I{tmp_path}", f"--descriptor_set_out={tmp_path / 'o.pb'}", "bad.proto"]) != 0
    with pytest.raises(ValueError):
        pb.parse(text)
