"""The six client drivers, by name (the names used in test ids and MATRIX.md)."""

from __future__ import annotations

from pathlib import Path

from harness.clients.aiokafka_client import AiokafkaClient
from harness.clients.base import CODECS, Client, ClientError
from harness.clients.confluent import ConfluentClient
from harness.clients.java import JavaClient
from harness.clients.kafka_python import KafkaPythonClient
from harness.clients.kafkajs import KafkajsClient
from harness.clients.kcat import KcatClient

CLIENT_NAMES = ("kafka-python", "confluent-kafka", "aiokafka", "java", "kcat", "kafkajs")

# Feature sets known without instantiating (test collection needs them before any fixture runs).
FEATURES: dict[str, frozenset[str]] = {
    "kafka-python": KafkaPythonClient.features,
    "confluent-kafka": ConfluentClient.features,
    "aiokafka": AiokafkaClient.features,
    "java": JavaClient.features,
    "kcat": KcatClient.features,
    "kafkajs": KafkajsClient.features,
}


def clients_with(*features: str) -> list[str]:
    """Names of the clients that have every one of ``features`` (for parametrize)."""
    return [n for n in CLIENT_NAMES if all(f in FEATURES[n] for f in features)]


def make_client(name: str, log_dir: Path) -> Client:
    if name == "java":
        return JavaClient(log_dir)
    if name == "kafkajs":
        return KafkajsClient(log_dir)
    return {"kafka-python": KafkaPythonClient, "confluent-kafka": ConfluentClient, "aiokafka": AiokafkaClient,
            "kcat": KcatClient}[name]()


__all__ = ["CLIENT_NAMES", "CODECS", "FEATURES", "Client", "ClientError", "clients_with", "make_client"]
