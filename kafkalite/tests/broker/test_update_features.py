"""UpdateFeatures (key 57) as a single-node Kafka 3.9 answers it (``--emulate-kafka 3.9``), seen through ApiVersions
(describeFeatures): per-feature INVALID_UPDATE_VERSION with Kafka's messages, downgrade-type rules (v0
AllowDowngrade, v1 UpgradeType), metadata.version's lossy-downgrade refusal, ValidateOnly, FinalizedFeaturesEpoch
growing on each change, levels persisted across restarts, CLUSTER ALTER authorization; and as Kafka 4.x answers it
(the default profile): one batch, the first failure at the top level, nothing applied, v2 without results."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ApiVersionsRequest, UpdateFeaturesRequest

U = UpdateFeaturesRequest
UPGRADE, SAFE, UNSAFE = 1, 2, 3
IUV = ErrorCode.INVALID_UPDATE_VERSION


def finalized(c: RawClient) -> tuple[int, dict[str, int]]:
    r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    return r.finalized_features_epoch, {f.name: f.max_version_level for f in r.finalized_features}


def update(c: RawClient, *ups: tuple[str, int, int], validate_only: bool = False,
           version: int = 1) -> list[tuple[str, int, str | None]]:
    if version == 0:
        keys = [U.FeatureUpdateKey(feature=n, max_version_level=lv, allow_downgrade=t != UPGRADE) for n, lv, t in ups]
    else:
        keys = [U.FeatureUpdateKey(feature=n, max_version_level=lv, upgrade_type=t) for n, lv, t in ups]
    r = c.request(U(timeout_ms=5000, feature_updates=keys, validate_only=validate_only), version)
    assert (r.error_code, r.error_message) == (0, None)
    return [(x.feature, x.error_code, x.error_message) for x in r.results]


@pytest.mark.parametrize("up, message", [
    (("metadata.version", 22, UPGRADE), "Invalid update version 22 for feature metadata.version. Local controller 1 "
                                        "only supports versions 1-21"),
    (("no.such", 1, UPGRADE), "Invalid update version 1 for feature no.such. Local controller 1 does not support "
                              "this feature."),
    (("metadata.version", -1, SAFE), "Invalid update version -1 for feature metadata.version. A feature version "
                                     "cannot be less than 0."),
    (("metadata.version", 20, UPGRADE), "Invalid update version 20 for feature metadata.version. Can't downgrade the "
                                        "version of this feature without setting the upgrade type to either safe or "
                                        "unsafe downgrade."),
    (("metadata.version", 16, SAFE), "Invalid metadata.version 16. Refusing to perform the requested downgrade "
                                     "because it might delete metadata information. Retry using UNSAFE_DOWNGRADE if "
                                     "you want to force the downgrade to proceed."),
    (("metadata.version", 14, UNSAFE), "Invalid metadata.version 14. Unsafe metadata downgrade is not supported in "
                                       "this version."),
    (("metadata.version", 3, SAFE), "Invalid metadata.version 3. Unable to set a metadata.version less than "
                                    "3.3-IV0"),
    (("metadata.version", 21, 7), "Invalid update version 21 for feature metadata.version. The controller does not "
                                  "support the given upgrade type."),
])
def test_refused_updates(tmp_path: Path, up: tuple[str, int, int], message: str) -> None:
    with Broker(data_dir=tmp_path, emulate_kafka="3.9") as b, RawClient(b.host, b.port) as c:
        assert update(c, up) == [(up[0], IUV, message)]
        assert finalized(c) == (0, {"metadata.version": 21, "kraft.version": 1})


def test_downgrade_upgrade_epoch_validate_only_and_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, emulate_kafka="3.9") as b, RawClient(b.host, b.port) as c:
        # 3.9-IV0 -> 3.7-IV3: levels 19-21 changed no metadata, a safe downgrade
        assert update(c, ("metadata.version", 18, SAFE), validate_only=True) == [("metadata.version", 0, None)]
        assert finalized(c) == (0, {"metadata.version": 21, "kraft.version": 1})
        assert update(c, ("metadata.version", 18, SAFE), ("no.such", 2, UPGRADE)) == [
            ("metadata.version", 0, None),
            ("no.such", IUV, "Invalid update version 2 for feature no.such. Local controller 1 does not support "
                             "this feature.")]
        assert finalized(c) == (1, {"metadata.version": 18, "kraft.version": 1})
        assert update(c, ("metadata.version", 21, SAFE))[0][2] == ("Invalid update version 21 for feature "
                                                                   "metadata.version. Can't downgrade to a newer "
                                                                   "version.")
        assert update(c, ("metadata.version", 20, UPGRADE), version=0) == [("metadata.version", 0, None)]
        assert finalized(c) == (2, {"metadata.version": 20, "kraft.version": 1})
        assert update(c, ("metadata.version", 20, UPGRADE)) == [("metadata.version", 0, None)]   # no change
        assert finalized(c)[0] == 2
    with Broker(data_dir=tmp_path, emulate_kafka="3.9") as b, RawClient(b.host, b.port) as c:
        assert finalized(c) == (2, {"metadata.version": 20, "kraft.version": 1})
        # v0's AllowDowngrade is not read (the controller takes v1's UpgradeType, UPGRADE in a v0 request)
        assert update(c, ("metadata.version", 19, SAFE), version=0)[0][1] == IUV
        assert update(c, ("metadata.version", 19, SAFE)) == [("metadata.version", 0, None)]
        assert finalized(c) == (3, {"metadata.version": 19, "kraft.version": 1})


def test_cluster_alter_is_required(tmp_path: Path) -> None:
    standard = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with Broker(data_dir=tmp_path, overrides=standard, emulate_kafka="3.9") as b, RawClient(b.host, b.port) as c:
        r = c.request(U(timeout_ms=5000, feature_updates=[U.FeatureUpdateKey(
            feature="metadata.version", max_version_level=18, upgrade_type=SAFE)]), 1)
        assert (r.error_code, r.results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    with Broker(data_dir=tmp_path, overrides={**standard, "super.users": "User:ANONYMOUS"},
                emulate_kafka="3.9") as b, \
            RawClient(b.host, b.port) as c:
        assert update(c, ("metadata.version", 18, SAFE)) == [("metadata.version", 0, None)]


def test_kafka_4x_updates_are_one_batch(tmp_path: Path) -> None:
    """Kafka 4.x's FeatureControlManager: the first update that fails fails the request at the top level and
    nothing is applied; UpdateFeatures v2 answers no per-feature results."""
    def raw(c: RawClient, *ups: tuple[str, int, int], version: int = 1) -> tuple[int, str | None, list]:
        keys = [U.FeatureUpdateKey(feature=n, max_version_level=lv, upgrade_type=t) for n, lv, t in ups]
        r = c.request(U(timeout_ms=5000, feature_updates=keys), version)
        return r.error_code, r.error_message, [(x.feature, x.error_code) for x in r.results]

    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        before = finalized(c)
        assert before == (0, {"group.version": 1, "kraft.version": 1, "metadata.version": 33, "share.version": 2,
                              "streams.version": 1, "transaction.version": 2,
                              "eligible.leader.replicas.version": 1})
        code, msg, results = raw(c, ("share.version", 0, SAFE), ("metadata.version", 31, SAFE))
        assert (code, results) == (IUV, []) and msg is not None and msg == (
            "The update failed for all features since the following feature had an error: "
            "Unsupported metadata.version downgrade from 33 to 31. Refusing to perform the requested downgrade "
            "because it might delete metadata information.")
        assert finalized(c) == before
        assert raw(c, ("share.version", 0, SAFE)) == (0, None, [("share.version", 0)])
        assert finalized(c)[1]["group.version"] == 1
        assert "share.version" not in finalized(c)[1]   # level 0: not finalized, left out
        assert raw(c, ("share.version", 2, UPGRADE), version=2) == (0, None, [])
        assert finalized(c) == (2, before[1])
