"""DescribeConfigs of the broker as the profile's Kafka release lists it (3.9's table, 4.4's captured from the real
broker for the default profile): every config of its ConfigDef, with its source, type, sensitivity (passwords
read back null), read-only flag (Kafka's update mode), synonyms and documentation."""
from __future__ import annotations

import pytest

from kafkalite.config.kafka39 import KAFKA_39_BROKER
from kafkalite.config.kafka_releases import broker_table
from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import DescribeConfigsRequest

STRING, INT, LONG, LIST, CLASS, PASSWORD, SHORT, DOUBLE, BOOLEAN = 2, 3, 5, 7, 8, 9, 4, 6, 1


def _describe(b: Broker, name: str, version: int = 4, docs: bool = True) -> dict:
    with RawClient(b.host, b.port) as c:
        r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=4, resource_name=name, configuration_keys=None)], include_synonyms=True,
            include_documentation=docs), version)
    assert r.results[0].error_code == 0
    return {e.name: e for e in r.results[0].configs}


@pytest.mark.parametrize("profile", ["3.9", None])
def test_every_kafka_broker_config_with_its_metadata(profile: str | None) -> None:
    with Broker(overrides={"ssl.keystore.password": "s3cret", "log.retention.ms": "7200000"},
                emulate_kafka=profile) as b:
        got = _describe(b, "1")
        if profile == "3.9":
            assert set(KAFKA_39_BROKER) <= set(got)        # all 314 of Kafka 3.9's
        else:
            assert set(broker_table("4.4")) <= set(got)    # every one Kafka 4.4 lists
            assert "zookeeper.connect" not in got          # gone in 4.0
        e = got["ssl.keystore.password"]                   # set, but a password: never read back
        assert (e.value, e.is_sensitive, e.config_type, e.config_source) == (None, True, PASSWORD, 4)
        assert [(s.name, s.value, s.source) for s in e.synonyms] == [("ssl.keystore.password", None, 4)]
        assert "s3cret" not in repr(got)
        e = got["advertised.listeners"]       # 3.9: per-broker dynamic, a string; 4.x: read-only, a list
        assert (e.value, e.config_source, e.read_only, e.config_type) == (
            (None, 5, False, STRING) if profile == "3.9" else (None, 5, True, LIST))
        e = got["listeners"]
        assert (e.config_source, e.read_only) == (4, False) and e.value.startswith("PLAINTEXT://")
        e = got["background.threads"]                      # a Kafka setting kafkalite does not act on
        assert (e.value, e.config_source, e.read_only, e.config_type) == ("10", 5, False, INT)
        assert "does not act on it" in e.documentation
        assert (got["process.roles"].config_type, got["principal.builder.class"].config_type) == (LIST, CLASS)
        assert (got["offsets.topic.replication.factor"].config_type, got["log.cleaner.min.cleanable.ratio"].
                config_type, got["auto.create.topics.enable"].value) == (SHORT, DOUBLE, "true")
        assert got["log.segment.bytes"].documentation == "segment file size"   # kafkalite's own doc line
        ms, hours = got["log.retention.ms"], got["log.retention.hours"]
        assert (ms.value, ms.config_source, ms.read_only, ms.config_type) == ("7200000", 4, False, LONG)
        assert [(s.name, s.value, s.source) for s in ms.synonyms] == [("log.retention.ms", "7200000", 4),
                                                                       ("log.retention.hours", "168", 5)]
        assert (hours.value, hours.read_only) == ("168", True)
        assert [(s.name, s.source) for s in hours.synonyms] == [("log.retention.hours", 5)]
        minutes = got["log.retention.minutes"]             # unset, below the static ms: no synonyms at all
        assert (minutes.value, minutes.config_source, minutes.synonyms) == (None, 5, [])
        assert got["broker.id"].value == got["node.id"].value == "1"
        assert not _describe(b, "1", version=2)["background.threads"].documentation   # a v3+ field
        assert _describe(b, "1", docs=False)["background.threads"].documentation is None
