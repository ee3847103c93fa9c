"""``kafkalite schemas`` end to end against an embedded broker's schema registry (``Broker(schema_registry=True)``):
register from files (Avro, JSON Schema, Protobuf with a reference), list, get (by version, by id, serialized),
check compatibility (exit 1 with Confluent's reasons), config and mode, soft and permanent deletes, ``--json``,
the registry's errors as exit 1, usage errors as exit 2."""
from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from kafkalite.tests.support.tools_helpers import Result


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with Broker(data_dir=tmp_path_factory.mktemp("schemas-cli"), schema_registry=True) as b:
        assert b.schema_registry_url is not None
        yield b.schema_registry_url


def schemas(url: str, *argv: str) -> Result:
    from kafkalite.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        try:
            code = main(["schemas", "--url", url, *argv])
        except SystemExit as exc:
            code = int(exc.code or 0)
    finally:
        sys.stdout, sys.stderr = old
    return Result(code, out.getvalue(), err.getvalue())


USER = {"type": "record", "name": "User", "namespace": "t", "fields": [{"name": "name", "type": "string"}]}


def test_register_list_get_check_delete(url: str, tmp_path: Path) -> None:
    v1 = tmp_path / "user.avsc"
    v1.write_text(json.dumps(USER))
    r = schemas(url, "register", "users-value", str(v1))
    assert (r.code, r.out.strip()) == (0, "id 1"), r.err
    v2 = tmp_path / "user2.avsc"
    v2.write_text(json.dumps({**USER, "fields": USER["fields"] + [{"name": "age", "type": "int", "default": 0}]}))
    assert schemas(url, "check", "users-value", str(v2)).out.strip() == "compatible"
    assert schemas(url, "register", "users-value", str(v2)).out.strip() == "id 2"
    bad = tmp_path / "bad.avsc"
    bad.write_text(json.dumps({**USER, "fields": [{"name": "name", "type": "int"}]}))
    r = schemas(url, "check", "users-value", str(bad))
    assert r.code == 1 and r.out.startswith("incompatible\n") and "TYPE_MISMATCH" in r.out
    r = schemas(url, "register", "users-value", str(bad))
    assert r.code == 1 and "409 (error_code 409)" in r.err
    assert schemas(url, "subjects").out.split() == ["users-value"]
    assert schemas(url, "versions", "users-value").out.split() == ["1", "2"]
    r = schemas(url, "get", "users-value")
    assert r.code == 0 and r.out.startswith("subject: users-value\nversion: 2\nid: 2\ntype: AVRO\n")
    r = schemas(url, "--json", "get", "--id", "1")
    assert json.loads(json.loads(r.out)["schema"])["name"] == "User"
    assert json.loads(schemas(url, "get", "users-value", "1", "--schema-only").out)["fields"] == USER["fields"]
    # config and mode
    assert schemas(url, "config").out.strip() == "BACKWARD"
    assert schemas(url, "config", "users-value", "--set", "full").out.strip() == "FULL"
    assert schemas(url, "config", "users-value").out.strip() == "FULL"
    assert schemas(url, "mode", "users-value", "--set", "READONLY").out.strip() == "READONLY"
    r = schemas(url, "register", "users-value", str(v1))
    assert r.code == 1 and "42205" in r.err
    assert schemas(url, "mode", "users-value", "--delete").code == 0
    # deletes: soft, then permanent
    assert schemas(url, "delete", "users-value", "2").out.strip() == "deleted version(s) 2"
    assert schemas(url, "versions", "users-value").out.split() == ["1"]
    assert schemas(url, "versions", "users-value", "--deleted").out.split() == ["1", "2"]
    r = schemas(url, "delete", "users-value", "1", "--permanent")
    assert r.code == 1 and "40407" in r.err
    assert schemas(url, "delete", "users-value").code == 0
    assert schemas(url, "--json", "delete", "users-value", "--permanent").out.split() == ["[", "1,", "2", "]"]
    r = schemas(url, "versions", "users-value")
    assert r.code == 1 and "40401" in r.err


def test_json_and_protobuf_files_with_a_reference(url: str, tmp_path: Path) -> None:
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"type": "object", "properties": {"id": {"type": "integer"}}}))
    assert schemas(url, "register", "orders-json", str(order)).code == 0
    assert "type: JSON" in schemas(url, "get", "orders-json").out
    money = tmp_path / "money.proto"
    money.write_text('syntax = "proto3";\npackage shared;\nmessage Money { int64 units = 1; }\n')
    assert schemas(url, "register", "shared/money.proto", str(money)).code == 0
    price = tmp_path / "price.proto"
    price.write_text('syntax = "proto3"; package shop; import "shared/money.proto";\n'
                     "message Price { shared.Money amount = 1; }\n")
    r = schemas(url, "register", "price-value", str(price), "--reference", "shared/money.proto=shared/money.proto:1")
    assert r.code == 0, r.err
    r = schemas(url, "get", "price-value")
    assert "reference: shared/money.proto = shared/money.proto version 1" in r.out
    assert "message Price {\n  shared.Money amount = 1;\n}" in r.out
    serialized = schemas(url, "get", "price-value", "--format", "serialized", "--schema-only").out.strip()
    assert serialized and "{" not in serialized   # base64 of the FileDescriptorProto
    r = schemas(url, "register", "price-value", str(price))
    assert r.code == 1 and "42201" in r.err   # the import has no reference


def test_usage_errors_and_an_unreachable_registry(url: str, tmp_path: Path) -> None:
    assert schemas(url, "config", "--set", "SIDEWAYS").code == 2
    assert schemas(url, "get").code == 2
    f = tmp_path / "x.avsc"
    f.write_text("{}")
    assert schemas(url, "register", "s", str(f), "--reference", "nonsense").code == 2
    r = schemas("http://127.0.0.1:9", "subjects")
    assert r.code == 1 and "127.0.0.1:9" in r.err
