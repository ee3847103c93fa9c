"""``--emulate-kafka 4.3``: KIP-896's removed versions not advertised, Kafka 4.x's features advertised
(ApiVersions v3+ tagged fields; the 3.9 and 2.8 profiles' features are in test_features.py)."""
from __future__ import annotations

import pytest

from kafkalite.config.releases import FLOORS, KAFKA_4_3
from kafkalite.embedded import Broker
from kafkalite.metadata.features import FINALIZED_EPOCH
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.support.requires import reference
from kafkalite_wire.messages import ApiVersionsRequest, ApiVersionsResponse


def _api_versions(release: str) -> ApiVersionsResponse:
    with Broker(emulate_kafka=release) as b, RawClient(b.host, b.port) as c:
        resp: ApiVersionsResponse = c.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        return resp


def test_4_3_profile_drops_kip_896_versions_and_advertises_features() -> None:
    resp = _api_versions("4.3")
    keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert keys[2][0] == 1 and keys[19][0] == 2 and keys[20][0] == 1 and keys[32][0] == 1   # KIP-896
    assert keys[8][0] == 2 and keys[9][0] == 1 and keys[23][0] == 2
    for k, (lo, hi) in keys.items():
        assert k in KAFKA_4_3 and hi <= KAFKA_4_3[k] and lo >= FLOORS["4.3"].get(k, 0)
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in resp.finalized_features}
    assert finalized == {"metadata.version": (30, 30), "kraft.version": (1, 1), "group.version": (1, 1),
                         "share.version": (1, 1)}
    assert "transaction.version" not in {f.name for f in resp.supported_features}
    # v3: the features whose supported minimum is 0 are left out (KAFKA-17492)
    assert {f.name: (f.min_version, f.max_version) for f in resp.supported_features} == {
        "metadata.version": (7, 30)}
    assert resp.finalized_features_epoch == FINALIZED_EPOCH


@pytest.mark.parametrize("release", ["3.9", "2.8"])
def test_older_profiles_keep_old_versions(release: str) -> None:
    resp = _api_versions(release)
    assert min(k.min_version for k in resp.api_keys if k.api_key == 2) == 0


def test_4_3_tables_match_kafka_4_3_specs() -> None:
    """Caps = the newest stable version of every API Kafka 4.3 serves on a broker listener; floors = its oldest."""
    from pathlib import Path

    from kafkalite_wire.spec import Versions, load_json

    d = reference("kafka-message-specs", "4.3")
    caps, floors = {}, {}
    for p in sorted(Path(d).glob("*Request.json")):
        spec = load_json(p)
        valid = Versions.parse(str(spec["validVersions"]))
        if "broker" not in spec.get("listeners", []) or valid.lo < 0:  # type: ignore[operator]
            continue
        assert valid.hi is not None
        caps[spec["apiKey"]] = valid.hi - (1 if spec.get("latestVersionUnstable") else 0)
        if valid.lo > 0:
            floors[spec["apiKey"]] = valid.lo
    assert caps == KAFKA_4_3 and floors == FLOORS["4.3"]
