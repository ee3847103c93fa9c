"""The schema registry's REST API over HTTP on an embedded broker: routes, statuses, Confluent's error codes and
content type, bad input answered (never a crash or a hang), bounds, and state kept across a restart."""
from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import kafkalite

CT = "application/vnd.schemaregistry.v1+json"
AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}, separators=(",", ":"))


def call(url: str, method: str, path: str, body: Any = None, *, ctype: str | None = CT, raw: bytes | None = None,
         host: str | None = None) -> tuple[int, str, Any]:
    """One request over a plain socket (so headers are exactly ours): (status, content type, JSON or text)."""
    u = urlsplit(url)
    data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    head = f"{method} {path} HTTP/1.1\r\nHost: {host or u.netloc}\r\nContent-Length: {len(data)}\r\n"
    if ctype and data:
        head += f"Content-Type: {ctype}\r\n"
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(head.encode() + b"\r\n" + data)
        buf = b""
        while chunk := s.recv(65536):
            buf += chunk
    top, _, payload = buf.partition(b"\r\n\r\n")
    lines = top.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    try:
        parsed: Any = json.loads(payload)
    except ValueError:
        parsed = payload.decode()
    return status, headers.get("content-type", ""), parsed


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafkalite.Broker]:
    with kafkalite.Broker(data_dir=tmp_path_factory.mktemp("reg"), schema_registry=True) as b:
        yield b


@pytest.fixture
def url(broker: kafkalite.Broker) -> str:
    assert broker.schema_registry_url is not None
    return broker.schema_registry_url


def test_root_types_and_content_type(url: str) -> None:
    assert call(url, "GET", "/") == (200, CT, {})
    assert call(url, "GET", "/schemas/types") == (200, CT, ["JSON", "PROTOBUF", "AVRO"])


def test_register_get_and_raw_schema(url: str) -> None:
    st, ct, out = call(url, "POST", "/subjects/h1/versions", {"schema": AVRO})
    assert (st, ct) == (200, CT) and isinstance(out["id"], int)
    sid = out["id"]
    st, _, got = call(url, "GET", "/subjects/h1/versions/1")
    assert st == 200 and got == {"subject": "h1", "version": 1, "id": sid, "schema": AVRO}
    assert call(url, "GET", "/subjects/h1/versions/latest/schema")[2] == json.loads(AVRO)
    assert call(url, "GET", f"/schemas/ids/{sid}")[2] == {"schema": AVRO}
    assert call(url, "GET", f"/schemas/ids/{sid}/versions")[2] == [{"subject": "h1", "version": 1}]
    assert call(url, "GET", f"/schemas/ids/{sid}/subjects")[2] == ["h1"]
    assert "h1" in call(url, "GET", "/subjects")[2]
    assert call(url, "GET", "/subjects?subjectPrefix=h1")[2] == ["h1"]
    assert call(url, "POST", "/subjects/h1", {"schema": AVRO})[2]["version"] == 1
    assert call(url, "POST", "/compatibility/subjects/h1/versions/latest?verbose=true", {"schema": AVRO})[2] == \
        {"is_compatible": True, "messages": []}


def test_json_and_protobuf_subjects_show_their_type(url: str) -> None:
    js = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})
    st, _, out = call(url, "POST", "/subjects/h-json/versions", {"schema": js, "schemaType": "JSON"})
    assert st == 200
    assert call(url, "GET", "/subjects/h-json/versions/1")[2]["schemaType"] == "JSON"
    assert call(url, "GET", f"/schemas/ids/{out['id']}")[2]["schemaType"] == "JSON"


@pytest.mark.parametrize("method,path,body,status,code", [
    ("GET", "/subjects/nope/versions", None, 404, 40401),
    ("GET", "/subjects/nope/versions/1", None, 404, 40401),
    ("GET", "/subjects/h2/versions/7", None, 404, 40402),
    ("GET", "/subjects/h2/versions/zero", None, 422, 42202),
    ("GET", "/schemas/ids/999999", None, 404, 40403),
    ("GET", "/schemas/ids/notanumber", None, 404, 40403),
    ("POST", "/subjects/h2/versions", {"schema": "{not json"}, 422, 42201),
    ("POST", "/subjects/h2/versions", {"schema": AVRO, "schemaType": "XML"}, 422, 42201),
    ("POST", "/subjects/h2/versions", {}, 422, 42201),
    ("POST", "/subjects/h2", {"schema": '"string"'}, 404, 40403),
    ("PUT", "/config", {"compatibility": "MAYBE"}, 422, 42203),
    ("PUT", "/mode", {"mode": "WHATEVER"}, 422, 42204),
    ("GET", "/config/h2", None, 404, 40408),
    ("GET", "/mode/h2", None, 404, 40409),
    ("DELETE", "/subjects/h2?permanent=true", None, 404, 40405),
    ("GET", "/no/such/route", None, 404, 404),
    ("PATCH", "/subjects", None, 405, 405),
])
def test_errors_carry_confluents_codes(url: str, method: str, path: str, body: Any, status: int, code: int) -> None:
    call(url, "POST", "/subjects/h2/versions", {"schema": AVRO})
    st, ct, out = call(url, method, path, body)
    assert (st, ct) == (status, CT)
    assert out["error_code"] == code and isinstance(out["message"], str)


def test_bad_bodies_and_media_types(url: str) -> None:
    assert call(url, "POST", "/subjects/h3/versions", raw=b"[1,2]")[2]["error_code"] == 422
    assert call(url, "POST", "/subjects/h3/versions", raw=b"{oops")[0] == 400
    assert call(url, "POST", "/subjects/h3/versions", raw=b'{"schema":"\\"int\\""}', ctype="text/plain")[0] == 415
    assert call(url, "POST", "/subjects/h3/versions", {"schema": '"int"'}, ctype="application/json")[0] == 200
    u = urlsplit(url)   # a body over the bound is refused from its Content-Length, before it is read
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(f"POST /subjects/h3/versions HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: {CT}\r\n"
                  f"Content-Length: {3 * 1024 * 1024}\r\n\r\n".encode())
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413 ") and b'"error_code": 413' in reply


def test_host_header_must_name_the_registry(url: str) -> None:
    assert call(url, "GET", "/subjects", host="evil.example:80")[0] == 421


def test_state_survives_a_restart(tmp_path: Path) -> None:
    with kafkalite.Broker(data_dir=tmp_path, schema_registry=True) as b:
        u = b.schema_registry_url
        assert u is not None
        assert call(u, "POST", "/subjects/keep/versions", {"schema": AVRO})[2] == {"id": 1}
        assert call(u, "PUT", "/config/keep", {"compatibility": "FULL"})[2] == {"compatibility": "FULL"}
        assert call(u, "DELETE", "/subjects/keep/versions/1")[2] == 1
    with kafkalite.Broker(data_dir=tmp_path, schema_registry=True) as b:
        u = b.schema_registry_url
        assert u is not None
        assert call(u, "GET", "/subjects")[2] == []
        assert call(u, "GET", "/subjects?deleted=true")[2] == ["keep"]
        assert call(u, "GET", "/config/keep")[2] == {"compatibilityLevel": "FULL"}
        assert call(u, "POST", "/subjects/other/versions", {"schema": '"string"'})[2] == {"id": 2}


def test_the_pytest_plugin_exposes_the_registry_url(kafkalite_schema_registry_url: str) -> None:
    assert kafkalite_schema_registry_url.startswith("http://127.0.0.1:")
    assert call(kafkalite_schema_registry_url, "GET", "/schemas/types")[0] == 200
