"""Finalized features in ApiVersions v3+ as Kafka 3.9 reports them (kafkalite.metadata.features), per emulated release
(the 4.x profiles and the default, which report Kafka 4.x's: test_emulate_4x.py)."""
from __future__ import annotations

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest


def _features(b: Broker, version: int) -> tuple:
    with RawClient(b.host, b.port) as c:
        r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)
    return ({f.name: (f.min_version, f.max_version) for f in r.supported_features},
            r.finalized_features_epoch,
            {f.name: (f.min_version_level, f.max_version_level) for f in r.finalized_features})


def test_kafka_3_9_features_by_api_versions_version() -> None:
    with Broker(emulate_kafka="3.9") as b:
        # v4: kraft.version's supported minimum 0 is shown; v3 omits such a feature (KAFKA-17492)
        assert _features(b, 4) == ({"metadata.version": (1, 21), "kraft.version": (0, 1)}, 0,
                                   {"metadata.version": (21, 21), "kraft.version": (1, 1)})
        assert _features(b, 3) == ({"metadata.version": (1, 21)}, 0,
                                   {"metadata.version": (21, 21), "kraft.version": (1, 1)})
        assert _features(b, 2) == ({}, -1, {})       # no such fields before v3


def test_emulated_releases() -> None:
    with Broker(emulate_kafka="3.6") as b:
        assert _features(b, 3) == ({"metadata.version": (1, 14)}, 0, {"metadata.version": (14, 14)})
    with Broker(emulate_kafka="2.8") as b:           # ZooKeeper mode, feature versioning off
        assert _features(b, 3) == ({}, -1, {})
