"""The client drivers, by name (the names used in test ids and MATRIX.md)."""

from __future__ import annotations

from pathlib import Path

from harness.clients.aiokafka_client import AiokafkaClient
from harness.clients.base import CODECS, Client, ClientError
from harness.clients.confluent import ConfluentClient
from harness.clients.java import Java4Client, JavaClient
from harness.clients.kafka_python import KafkaPythonClient
from harness.clients.kafkajs import KafkajsClient
from harness.clients.kcat import KcatClient
from harness.clients.native import (
    FranzGoClient,
    KafkaGoClient,
    RskafkaClient,
    RustRdkafkaClient,
    SaramaClient,
)

CLIENT_NAMES = ("kafka-python", "confluent-kafka", "aiokafka", "java", "kcat", "kafkajs",
                "java4", "franz-go", "sarama", "kafka-go", "rust-rdkafka", "rskafka")
# The clients added with #24 (Java 4.4, Go, Rust): `make test` runs a bounded slice of their scenarios (marker
# `matrix` on the rest, which `make matrix` runs)
NEW_CLIENTS = ("java4", "franz-go", "sarama", "kafka-go", "rust-rdkafka", "rskafka")
_LINE_DRIVERS = {"java": JavaClient, "java4": Java4Client, "kafkajs": KafkajsClient, "franz-go": FranzGoClient,
                 "sarama": SaramaClient, "kafka-go": KafkaGoClient, "rust-rdkafka": RustRdkafkaClient,
                 "rskafka": RskafkaClient}

# Feature sets known without instantiating (test collection needs them before any fixture runs).
FEATURES: dict[str, frozenset[str]] = {
    "kafka-python": KafkaPythonClient.features,
    "confluent-kafka": ConfluentClient.features,
    "aiokafka": AiokafkaClient.features,
    "java": JavaClient.features,
    "kcat": KcatClient.features,
    "kafkajs": KafkajsClient.features,
    **{n: c.features for n, c in _LINE_DRIVERS.items() if n not in ("java", "kafkajs")},
}


def clients_with(*features: str) -> list[str]:
    """Names of the clients that have every one of ``features`` (for parametrize)."""
    return [n for n in CLIENT_NAMES if all(f in FEATURES[n] for f in features)]


def make_client(name: str, log_dir: Path) -> Client:
    if name in _LINE_DRIVERS:
        return _LINE_DRIVERS[name](log_dir)
    return {"kafka-python": KafkaPythonClient, "confluent-kafka": ConfluentClient, "aiokafka": AiokafkaClient,
            "kcat": KcatClient}[name]()


__all__ = ["CLIENT_NAMES", "CODECS", "FEATURES", "NEW_CLIENTS", "Client", "ClientError", "clients_with", "make_client"]
