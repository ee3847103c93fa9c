"""The 4.x profiles (``--emulate-kafka 4.3``/``4.4``, the default ``3.9+4.4``): the version ranges and features the
real Kafka brokers advertise (captured by tools/capture_kafka.py), where kafkalite serves them; every difference
is one of the listed, explained ones (the 3.9 and 2.8 profiles' features are in test_features.py)."""
from __future__ import annotations

import pytest

from kafkalite.config.kafka_releases import module
from kafkalite.config.releases import KAFKA_3_9
from kafkalite.embedded import Broker
from kafkalite.metadata.features import FINALIZED_EPOCH
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest, ApiVersionsResponse

#: what Kafka 4.3/4.4 advertise that kafkalite does not (key -> kafkalite's highest version, None: not at all)
NOT_SERVED: dict[int, int | None] = {
    # 27 WriteTxnMarkers: served (Admin.abortTransaction)
    # 64, 80, 81, 94 the KRaft controller's admin APIs: served (kafkalite/handlers/kraft_control.py)
    # 83-87 the share coordinator's state RPCs: served
}


def _api_versions(release: str | None, version: int = 4) -> ApiVersionsResponse:
    with Broker(emulate_kafka=release) as b, RawClient(b.host, b.port) as c:
        resp: ApiVersionsResponse = c.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)
        return resp


@pytest.mark.parametrize("release", ["4.3", "4.4"])
def test_4x_profiles_advertise_what_kafka_does(release: str) -> None:
    resp = _api_versions(release)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    kafka = module(release).API_VERSIONS
    for k, (lo, hi) in kafka.items():
        if k in NOT_SERVED and NOT_SERVED[k] is None:
            assert k not in keys, k
        else:
            assert keys[k] == (lo, min(hi, NOT_SERVED.get(k) or hi)), (k, keys[k], (lo, hi))
    assert set(keys) <= set(kafka)
    assert keys[0] == (0, 13) and keys[1] == (4, 18) and keys[2] == (1, 11)   # Produce listed from v0, as Kafka
    finalized = {f.name: f.max_version_level for f in resp.finalized_features}
    mv = 30 if release == "4.3" else 33
    share = 1 if release == "4.3" else 2   # 4.4: the share group DLQ (KIP-1191)
    assert finalized == {"metadata.version": mv, "kraft.version": 1, "group.version": 1, "share.version": share,
                         "transaction.version": 2, "streams.version": 1, "eligible.leader.replicas.version": 1}
    assert {f.name: (f.min_version, f.max_version) for f in resp.supported_features} == {
        "metadata.version": (7, mv), "kraft.version": (0, 1), "group.version": (0, 1), "share.version": (0, share),
        "transaction.version": (0, 2), "streams.version": (0, 1), "eligible.leader.replicas.version": (0, 1)}
    assert resp.finalized_features_epoch == FINALIZED_EPOCH
    # v3: the features whose supported minimum is 0 are left out (KAFKA-17492)
    v3 = _api_versions(release, 3)
    assert {f.name for f in v3.supported_features} == {"metadata.version"}


def test_default_profile_is_kafka_44_widened_to_39s_versions() -> None:
    resp = _api_versions(None)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    kafka = module("4.4").API_VERSIONS
    for k, (_lo, hi) in keys.items():
        assert k in kafka or k in KAFKA_3_9, k
        assert hi == min(max(kafka.get(k, (0, -1))[1], KAFKA_3_9.get(k, -1)), NOT_SERVED.get(k) or hi), k
    assert keys[2] == (0, 11) and keys[8] == (0, 10) and keys[19] == (0, 7)   # KIP-896's removed versions kept
    assert keys[0] == (0, 13) and keys[76] == (0, 1)   # Produce from v0 as 4.4; share v0 early access kept
    assert {f.name: f.max_version_level for f in resp.finalized_features}["metadata.version"] == 33


@pytest.mark.parametrize("release", ["3.9", "2.8"])
def test_older_profiles_keep_old_versions(release: str) -> None:
    resp = _api_versions(release)
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[2][0] == 0 and keys[0][0] == 3   # ListOffsets v0; Produce from v3 (v0-2: magic 0/1, not served)
