"""The console's schema registry view: ``/api/schemas`` and ``/api/schemas/<subject>`` answered from the
registry's memory, and the Schemas pages in a real headless Chromium (subjects, versions with their schemas,
soft-deleted ones marked, a subject name that is markup stays text); off, the page says how to turn it on."""
from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.tests.clients.test_console_browser import open_page, text
from kafkalite.tests.support.chromium import Chromium, need_chromium
from kafkalite.tests.support.console_helpers import ConsoleClient, console_broker

EVIL = '<img src=x onerror="window.__xss=1">'
AVRO = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
AVRO2 = {**AVRO, "fields": AVRO["fields"] + [{"name": "age", "type": "int", "default": 0}]}
PROTO = 'syntax = "proto3";\npackage p;\nmessage M { int32 a = 1; }\n'


def _post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(url, json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _delete(url: str) -> Any:
    with urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Any, ConsoleClient]]:
    with console_broker(**{"kafkalite.schema.registry.listen": "127.0.0.1:0"}) as (broker, client):
        base = broker.schema_registry_url
        _post(f"{base}/subjects/users-value/versions", {"schema": json.dumps(AVRO)})
        _post(f"{base}/subjects/users-value/versions", {"schema": json.dumps(AVRO2)})
        _delete(f"{base}/subjects/users-value/versions/1")
        _post(f"{base}/subjects/proto-value/versions", {"schema": PROTO, "schemaType": "PROTOBUF"})
        _post(f"{base}/subjects/{urllib.request.quote(EVIL, safe='')}/versions", {"schema": '"string"'})
        yield broker, client


def test_api_lists_subjects_and_versions(env: tuple[Any, ConsoleClient]) -> None:
    _broker, c = env
    d = c.get("schemas").json()
    assert d["enabled"] and d["count"] == 3 and d["url"].startswith("http://127.0.0.1:")
    by = {s["subject"]: s for s in d["subjects"]}
    assert (by["users-value"]["versions"], by["users-value"]["latest"], by["users-value"]["type"]) == (1, 2, "AVRO")
    assert by["proto-value"]["type"] == "PROTOBUF" and by["proto-value"]["compatibility"] == "BACKWARD"
    one = c.get("schemas/users-value").json()
    assert [(v["version"], v["deleted"]) for v in one["versions"]] == [(1, True), (2, False)]
    assert json.loads(one["versions"][1]["schema"])["fields"][1]["name"] == "age"
    assert c.get("schemas/nope").status == 404


def test_schemas_pages_in_chromium(env: tuple[Any, ConsoleClient]) -> None:
    exe = need_chromium()
    _broker, c = env
    with Chromium.launch(exe) as browser:
        page = browser.new_page()
        open_page(page, c, "#/schemas")
        rows = page.eval("[...document.querySelectorAll('#schemas tbody tr')].map(r => r.dataset.subject)")
        assert sorted(rows) == sorted([EVIL, "proto-value", "users-value"])
        assert page.eval("window.__xss === undefined") is True
        assert "Schema Registry at http://127.0.0.1:" in text(page, "#schemas-url")
        open_page(page, c, "#/schema/users-value")
        assert text(page, "#schema-config").startswith("compatibility BACKWARD · mode READWRITE · 2 version(s)")
        shown = page.eval("[...document.querySelectorAll('section.schema-version')].map(s => "
                          "[s.dataset.version, s.classList.contains('deleted')])")
        assert shown == [["2", False], ["1", True]]
        assert '"age"' in text(page, "section.schema-version pre.schema")
        open_page(page, c, "#/schema/proto-value")
        assert "message M {\n  int32 a = 1;\n}" in text(page, "pre.schema")
        assert page.problems() == []


def test_off_says_how_to_turn_it_on() -> None:
    exe = need_chromium()
    with console_broker() as (_broker, c), Chromium.launch(exe) as browser:
        assert c.get("schemas").json() == {"enabled": False, "url": None, "subjects": [], "count": 0}
        page = browser.new_page()
        open_page(page, c, "#/schemas")
        assert "--schema-registry" in text(page, "#schemas-off")
