"""The exactly-once sink's commit path against a SASL_SSL listener: its own transaction-coordinator client
(TLS + SASL PLAIN / SCRAM) and its librdkafka helpers, configured from the sink's ``kafka.*`` options in Java's
names (``sasl.jaas.config``, ``ssl.truststore.location``) or librdkafka's.

No Spark session: a transactional producer built from the sink's producer settings opens a transaction the
way an executor task does (rows + batch marker), then the driver side (``commit_batch``) records the decision
and commits it over SASL_SSL; a read_committed consumer with the same settings must see the rows, and the
decision must name the transaction. Wrong credentials and an untrusted certificate fail at once.
"""
from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.tests.support.requires import require

require("pyspark", "confluent_kafka")   # the module imports them: a loud skip, or a failure under CI=true

from confluent_kafka import Consumer, KafkaError, Producer  # noqa: E402
from confluent_kafka import TopicPartition as KTP  # noqa: E402

from kafkalite.cli import certs  # noqa: E402
from kafkalite.embedded import Broker  # noqa: E402
from kafkalite.spark.eos import TxnCommitMessage, commit_batch, read_decision  # noqa: E402
from kafkalite.spark.options import SinkOptions  # noqa: E402
from kafkalite.spark.txnclient import Security, TxnClient, TxnCommitError  # noqa: E402
from kafkalite.tests.broker.test_sasl import _add_scram  # noqa: E402
from kafkalite.tests.clients.test_spark_batch import create_topic  # noqa: E402
from kafkalite.tests.support.rawclient import RawClient  # noqa: E402

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return certs.write_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def broker(material: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = Broker(data_dir=tmp_path_factory.mktemp("eos-sasl"), overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "ssl.keystore.location": str(material["broker.pem"]),
        "ssl.truststore.location": str(material["ca.pem"]),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
    }).start()
    try:
        host, port = b.addresses[0]
        with RawClient(host, port, timeout=10) as admin:
            assert _add_scram(admin, "sam", "sam-pw", 2).results[0].error_code == 0  # SCRAM-SHA-512
        yield b
    finally:
        b.stop()


def _sasl_ssl(b: Broker) -> str:
    host, port = b.addresses[1]
    return f"{host}:{port}"


def _options(b: Broker, material: dict[str, Path], style: str, topic: str, **extra: str) -> dict[str, str]:
    o = {"kafka.bootstrap.servers": _sasl_ssl(b), "kafka.security.protocol": "SASL_SSL", "topic": topic,
         "exactlyOnce": "true"}
    if style == "java-plain":  # what a Spark user of the JVM connector writes
        o.update({"kafka.sasl.mechanism": "PLAIN", "kafka.ssl.truststore.location": str(material["ca.pem"]),
                  "kafka.ssl.truststore.type": "PEM",
                  "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                            'username="alice" password="alice-pw";'})
    else:  # librdkafka's names, SCRAM
        o.update({"kafka.sasl.mechanisms": "SCRAM-SHA-512", "kafka.sasl.username": "sam",
                  "kafka.sasl.password": "sam-pw", "kafka.ssl.ca.location": str(material["ca.pem"])})
    o.update(extra)
    return o


@pytest.mark.parametrize("style", ["java-plain", "librdkafka-scram"])
def test_commit_path_over_sasl_ssl(broker: Broker, material: dict[str, Path], style: str) -> None:
    topic, query, txn_id = f"eos-sec-{style}", f"q-{style}", f"kafkalite-spark-q-{style}-0"
    create_topic(f"{broker.addresses[0][0]}:{broker.addresses[0][1]}", topic, 1)
    opts = SinkOptions.parse(_options(broker, material, style, topic))
    conf: dict[str, Any] = {**opts.producer_config(), "transactional.id": txn_id}
    conf.pop("enable.idempotence")
    p = Producer(conf)
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, str(i).encode(), partition=0)
    meta = Consumer({**opts.client_config(), "group.id": txn_id})
    p.send_offsets_to_transaction([KTP(topic, 0, 1)], meta.consumer_group_metadata(), 60)  # batch 0's marker
    meta.close()
    assert p.flush(60) == 0
    pid, epoch, state = opts.txn_client().describe(txn_id)
    assert state == "Ongoing"
    commit_batch(opts, [TxnCommitMessage(rows=10, transactional_id=txn_id, producer_id=pid, epoch=epoch,
                                         query=query, partition=0)], 0)
    assert read_decision(opts, query) == (0, {0: (pid, epoch)})
    assert opts.txn_client().describe(txn_id)[2] == "CompleteCommit"
    c = Consumer({**opts.client_config(), "group.id": "verify", "isolation.level": "read_committed",
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    c.assign([KTP(topic, 0, 0)])
    got: list[bytes] = []
    for _ in range(60):
        msgs = c.consume(100, 1.0)
        if any(m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF for m in msgs):
            got += [m.value() for m in msgs if m.error() is None]
            break
        got += [m.value() for m in msgs if m.error() is None]
    c.close()
    assert got == [str(i).encode() for i in range(10)]


def test_refused_credentials_and_certificates_fail_at_once(broker: Broker, material: dict[str, Path],
                                                          tmp_path: Path) -> None:
    bad = SinkOptions.parse(_options(broker, material, "librdkafka-scram", "t", **{"kafka.sasl.password": "no"}))
    client = bad.txn_client(deadline_s=120.0)
    with pytest.raises(TxnCommitError, match="SASL authentication failed") as err:
        client.describe("any")
    assert err.value.code == 58  # SASL_AUTHENTICATION_FAILED, not retried
    assert repr(Security.from_params(bad.kafka)) == "Security(SASL_SSL, SCRAM-SHA-512, user='sam')"  # no password
    other_ca = certs.write_certs(tmp_path / "other")["ca.pem"]
    untrusted = SinkOptions.parse(_options(broker, material, "librdkafka-scram", "t",
                                           **{"kafka.ssl.ca.location": str(other_ca)}))
    with pytest.raises(ssl.SSLCertVerificationError):
        untrusted.txn_client(deadline_s=120.0).describe("any")
    plaintext = TxnClient(_sasl_ssl(broker), deadline_s=0.5, timeout_s=2.0)  # the plaintext-only client of before
    with pytest.raises(OSError):
        plaintext.describe("any")
