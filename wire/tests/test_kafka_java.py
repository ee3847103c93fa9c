"""Differential test against Apache Kafka's own codec (kafka-clients 3.9.1, its generated *Data classes).

For every request/response and every version kafka-clients 3.9.1 knows (3.9.0's spec; not the versions Kafka 4.3
redefined, `java_versions`) we encode a few random messages (all fields present at that
version, tagged fields sometimes left at their default, random unknown tags), let kafka-clients read the bytes
and write them back, and require Kafka's bytes to equal ours. This pins down what the specs leave implicit:
tagged-field omission and ordering, nullable struct markers, compact lengths. It also checks our header-version
rules against `ApiMessageType.requestHeaderVersion/responseHeaderVersion`.

Needs Java 17 (`java`, `javac`) and `.deps/java/kafka-clients.jar` (installed by `make test`'s bootstrap);
skipped with a message otherwise.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kafkalite_wire import specmerge
from kafkalite_wire.headers import request_header_version, response_header_version
from kafkalite_wire.spec import MessageSpec
from kafkalite_wire.tests.strategies import class_for, large_messages, message_specs, random_message

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / ".deps" / "java"
SRC = Path(__file__).resolve().parent / "java" / "WireRoundTrip.java"
PER_VERSION = 3


pytestmark = pytest.mark.e2e   # each test runs kafka-clients in a JVM


@pytest.fixture(scope="module")
def kafka_java(tmp_path_factory: pytest.TempPathFactory, requirement: Any) -> list[str]:
    requirement.require("java")
    jar = JARS / "kafka-clients.jar"
    if not jar.exists():
        requirement.missing(f"no {jar} (tools/bootstrap.sh fetches it)")
    out = tmp_path_factory.mktemp("wirejava")
    cp = f"{jar}:{JARS / 'slf4j-api.jar'}"
    subprocess.run(
        ["javac", "-cp", cp, "-d", str(out), str(SRC)], check=True, capture_output=True, timeout=180
    )
    return ["java", "-cp", f"{out}:{cp}", "WireRoundTrip"]


def java_versions(msg: MessageSpec) -> list[int]:
    """The versions of `msg` that kafka-clients 3.9.1 encodes as our codec does: those 3.9.0 defines, less those
    where 4.3 changed the bytes of a version 3.9.0 called unstable."""
    old = specmerge.raw_spec(specmerge.OLD, msg.name)
    if old is None:
        return []
    changed = {(d.name, d.version) for d in specmerge.merged()[1] if d.kind == "wire"}
    return [v for v in old.versions if (msg.name, v) not in changed]


def _run(cmd: list[str], lines: list[str], tmp: Path) -> list[str]:
    (tmp / "in.txt").write_text("\n".join(lines) + "\n")
    subprocess.run(
        [*cmd, str(tmp / "in.txt"), str(tmp / "out.txt")], check=True, capture_output=True, timeout=300
    )
    return (tmp / "out.txt").read_text().splitlines()


def test_kafka_reencodes_our_bytes_identically(specs: Path, kafka_java: list[str], tmp_path: Path) -> None:
    rng = random.Random(20241122)
    cases = []
    for msg in message_specs():
        cls = class_for(msg)
        for v in java_versions(msg):
            for i in range(PER_VERSION):
                obj = cls() if i == 0 else random_message(msg, v, rng)
                cases.append((msg.name, v, obj.encode(v), f"{msg.api_key} {msg.type} {v}"))
    for name, v, obj in large_messages():
        if v not in java_versions(_spec_of(name)):
            continue
        cases.append(
            (
                name,
                v,
                obj.encode(v),
                f"{obj.API_KEY} {'request' if name.endswith('Request') else 'response'} {v}",
            )
        )
    results = _run(kafka_java, [f"{head} {data.hex()}" for _, _, data, head in cases], tmp_path)
    assert len(results) == len(cases)
    failures = []
    for (name, v, data, _), res in zip(cases, results, strict=True):
        if res != f"OK {data.hex()}":
            failures.append(f"{name} v{v}: ours {data.hex()} kafka {res}")
    assert not failures, f"{len(failures)} of {len(cases)} differ:\n" + "\n".join(failures[:20])


def _spec_of(name: str) -> MessageSpec:
    return next(m for m in message_specs() if m.name == name)


def test_header_versions_match_kafka(specs: Path, kafka_java: list[str], tmp_path: Path) -> None:
    pairs = [(m.api_key, v) for m in message_specs() if m.type == "request" for v in java_versions(m)]
    results = _run(kafka_java, [f"H {k} {v}" for k, v in pairs], tmp_path)
    mismatches = [
        (k, v, res)
        for (k, v), res in zip(pairs, results, strict=True)
        if res != f"H {request_header_version(k, v)} {response_header_version(k, v)}"
    ]
    assert not mismatches, mismatches[:20]
