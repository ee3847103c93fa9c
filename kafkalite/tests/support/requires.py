"""One rule for a test that needs something this machine may lack: skip it loudly, or fail it under ``CI=true``.

A test says what it needs with ``@pytest.mark.requires("java", "confluent_kafka")`` (the root ``conftest.py``
checks the marker before any fixture runs) or, from a fixture or helper, with :func:`require`. A name that is
not in :data:`CHECKS` is a collection error, so a typo never turns into a silent skip. CI installs every extra
(``tools/bootstrap.sh venv clients spark console``): there a missing piece is a broken setup, not a reason to
skip, so :func:`missing` fails the test instead. compat-tests use the same :func:`ci` and :func:`missing`.

The wire and storage tests never import this module (those packages never import kafkalite): they use the marker,
or the ``requirement`` fixture of the root ``conftest.py`` that wraps it.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pytest

from kafkalite_wire.spec import reference_dir


def ci() -> bool:
    """``CI`` is set to a true value (``1``, ``true``, ``yes``; any case)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing(reason: str) -> NoReturn:
    """Skip the running test loudly; under ``CI=true`` fail it (a missing piece there is a broken setup)."""
    if ci():
        pytest.fail(f"CI=true and a required piece is missing: {reason}", pytrace=False)
    pytest.skip(f"!!! NOT TESTED - {reason}", allow_module_level=True)


def _tools(*names: str, hint: str = "") -> Callable[[], str | None]:
    def check() -> str | None:
        absent = [n for n in names if shutil.which(n) is None]
        return f"{', '.join(absent)} not found on PATH{hint}" if absent else None
    return check


def _module(name: str, dist: str, hint: str) -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        return None if found else f"{dist} is not installed ({hint})"
    return check


def _chromium() -> str | None:
    if chromium_path() is None:
        return "chromium is not installed (tools/bootstrap.sh console, or set KAFKALITE_CHROMIUM)"
    return None


def chromium_path() -> str | None:
    return os.environ.get("KAFKALITE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _reference() -> str | None:
    ref = reference_dir()
    return None if ref.is_dir() else f"reference material missing at {ref} (set KAFKALITE_REFERENCE)"


#: requirement name -> a check that returns why it is missing, or None when it is there
CHECKS: dict[str, Callable[[], str | None]] = {
    "java": _tools("java", "javac", hint=" (a JDK 17+)"),
    "kcat": _tools("kcat", hint=" (tools/bootstrap.sh clients)"),
    "node": _tools("node", "npm", hint=" (tools/bootstrap.sh clients)"),
    "chromium": _chromium,
    "reference": _reference,
    "confluent_kafka": _module("confluent_kafka", "confluent-kafka", "tools/bootstrap.sh clients"),
    "kafka": _module("kafka", "kafka-python", "tools/bootstrap.sh clients"),
    "aiokafka": _module("aiokafka", "aiokafka", "tools/bootstrap.sh clients"),
    "fastavro": _module("fastavro", "fastavro (confluent-kafka's Avro serializer)", "tools/bootstrap.sh clients"),
    "jsonschema": _module("jsonschema", "jsonschema (confluent-kafka's JSON Schema serializer)",
                          "tools/bootstrap.sh clients"),
    "protobuf": _module("google.protobuf", "protobuf (confluent-kafka's Protobuf serializer)",
                        "tools/bootstrap.sh clients"),
    "grpc_tools": _module("grpc_tools", "grpcio-tools (protoc, the oracle of the Protobuf schema tests)",
                          "tools/bootstrap.sh clients"),
    "pyspark": _module("pyspark", "pyspark (the spark extra)", "tools/bootstrap.sh spark"),
    "cryptography": _module("cryptography", "cryptography (the tls extra)", "tools/bootstrap.sh venv"),
    "prometheus_client": _module("prometheus_client", "prometheus_client", "tools/bootstrap.sh venv"),
}

_cache: dict[str, str | None] = {}


def unknown(names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n not in CHECKS]


def reason_missing(name: str) -> str | None:
    """Why ``name`` is missing on this machine, or None (checked once per process)."""
    if name not in CHECKS:
        raise ValueError(f"unknown requirement {name!r}; known: {', '.join(sorted(CHECKS))}")
    if name not in _cache:
        _cache[name] = CHECKS[name]()
    return _cache[name]


def require(*names: str) -> None:
    """Go on when every named requirement is there; otherwise :func:`missing` (skip, or fail under CI)."""
    reasons = [r for r in (reason_missing(n) for n in names) if r]
    if reasons:
        missing("; ".join(reasons))


def reference(*parts: str) -> Path:
    """A path inside the shared reference tree (``$KAFKALITE_REFERENCE``, default ``../shared/reference``); a
    missing one is :func:`missing` (skip loudly, or fail under CI=true)."""
    require("reference")
    path = reference_dir().joinpath(*parts)
    if not path.exists():
        missing(f"reference material missing: {path} (set KAFKALITE_REFERENCE)")
    return path
