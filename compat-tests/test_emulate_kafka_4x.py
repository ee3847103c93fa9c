"""Clients that infer the broker's release from ApiVersions take kafkalite for Kafka 4.x: kafka-python 3.0.12
probes the advertised version ranges newest first (its newest probe is 4.3) and must land on 4.2 or later under
``--emulate-kafka 4.3``, ``--emulate-kafka 4.4`` and the default profile (Kafka 4.4's tables widened to 3.9's
versions), as it does against Apache Kafka 4.4 itself."""

from __future__ import annotations

import pytest

from kafkalite.tests.support.requires import require


@pytest.mark.parametrize("profile", ["4.3", "4.4", None], ids=["4.3", "4.4", "default"])
def test_kafka_python_infers_kafka_4x(broker_factory, profile: str | None) -> None:
    require("kafka")   # a loud skip, or a failure under CI=true
    from kafka import KafkaAdminClient

    b = broker_factory(emulate=profile)
    adm = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        assert tuple(adm._manager.broker_version[:2]) >= (4, 2), adm._manager.broker_version
    finally:
        adm.close()
