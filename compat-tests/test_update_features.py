"""UpdateFeatures (key 57) through Java kafka-clients 3.9.1's Admin.updateFeatures / describeFeatures
(compat-tests/java/AdminOps.java) and kafka-python's describe_features, against a one-node broker.

kafkalite's default profile is Kafka 3.9 here: a refused downgrade surfaces as InvalidUpdateVersionException with
Kafka's message, a safe downgrade of metadata.version (21 -> 19, no metadata change between) is finalized and seen
by describeFeatures with a higher FinalizedFeaturesEpoch, validate_only changes nothing, and an upgrade takes it
back. The reference broker is Kafka 4.4, whose rules differ: every metadata.version downgrade is refused ("Unsupported
metadata.version downgrade from 33 to 32", safe or unsafe), its messages carry "The update failed for all features
since the following feature had an error: ", and its epoch (a metadata offset) grows without changes; the same
steps run there with a feature 4.4 lets go down safely (share.version 2 -> 1)."""
from __future__ import annotations

import time
from typing import Any

KAFKA_4_PREFIX = "The update failed for all features since the following feature had an error: "


def _features(java: Any, bs: str) -> tuple[dict, int]:
    r = java.admin(bs, "describe_features")
    return r["finalized"], r["epoch"]


def _features_when(java: Any, bs: str, want: dict) -> tuple[dict, int]:
    """describeFeatures once its finalized levels are ``want``: Kafka's broker answers from its metadata image,
    which takes the controller's committed change a moment after UpdateFeatures returned."""
    deadline = time.monotonic() + 30
    while True:
        fin, epoch = _features(java, bs)
        if fin == want or time.monotonic() > deadline:
            return fin, epoch
        time.sleep(0.2)


def test_update_features_java(broker, get_client: Any) -> None:
    if broker.kind == "kafka":
        _kafka_4_4(broker, get_client("java"))
        return
    java = get_client("java")
    bs = broker.bootstrap
    fin, epoch = _features(java, bs)
    assert fin == {"metadata.version": [21, 21], "kraft.version": [1, 1]}
    r = java.admin(bs, "update_features", feature="metadata.version", level=20)
    assert r["error"] == ("InvalidUpdateVersionException: Invalid update version 20 for feature metadata.version. "
                          "Can't downgrade the version of this feature without setting the upgrade type to either "
                          "safe or unsafe downgrade.")
    r = java.admin(bs, "update_features", feature="metadata.version", level=16, upgrade_type="SAFE_DOWNGRADE")
    assert r["error"].startswith("InvalidUpdateVersionException: Invalid metadata.version 16. Refusing")
    assert java.admin(bs, "update_features", feature="metadata.version", level=19, upgrade_type="SAFE_DOWNGRADE",
                      validate_only=True) ["error"] is None
    assert _features(java, bs) == (fin, epoch)
    assert java.admin(bs, "update_features", feature="metadata.version", level=19,
                      upgrade_type="SAFE_DOWNGRADE") ["error"] is None
    fin2, epoch2 = _features(java, bs)
    assert fin2["metadata.version"] == [19, 19] and epoch2 > epoch

    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        assert a.describe_features()["metadata.version"]["finalized"] == (19, 19)
    finally:
        a.close()
    assert java.admin(bs, "update_features", feature="metadata.version", level=21) ["error"] is None
    fin3, epoch3 = _features(java, bs)
    assert fin3 == fin and epoch3 > epoch2


def _kafka_4_4(broker, java: Any) -> None:
    bs = broker.bootstrap
    fin, epoch = _features(java, bs)
    assert (fin["metadata.version"], fin["share.version"]) == ([33, 33], [2, 2])
    r = java.admin(bs, "update_features", feature="metadata.version", level=32)
    assert r["error"] == ("InvalidUpdateVersionException: " + KAFKA_4_PREFIX + "Invalid update version 32 for "
                          "feature metadata.version. Can't downgrade the version of this feature without setting the "
                          "upgrade type to either safe or unsafe downgrade.")
    r = java.admin(bs, "update_features", feature="metadata.version", level=32, upgrade_type="SAFE_DOWNGRADE")
    assert r["error"] == ("InvalidUpdateVersionException: " + KAFKA_4_PREFIX + "Unsupported metadata.version "
                          "downgrade from 33 to 32. Refusing to perform the requested downgrade because it might "
                          "delete metadata information.")
    assert java.admin(bs, "update_features", feature="share.version", level=1, upgrade_type="SAFE_DOWNGRADE",
                      validate_only=True)["error"] is None
    assert _features(java, bs)[0] == fin
    assert java.admin(bs, "update_features", feature="share.version", level=1,
                      upgrade_type="SAFE_DOWNGRADE")["error"] is None
    fin2, epoch2 = _features_when(java, bs, {**fin, "share.version": [1, 1]})
    assert fin2 == {**fin, "share.version": [1, 1]} and epoch2 > epoch

    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        assert a.describe_features()["share.version"]["finalized"] == (1, 1)
    finally:
        a.close()
    assert java.admin(bs, "update_features", feature="share.version", level=2)["error"] is None
    fin3, epoch3 = _features_when(java, bs, fin)
    assert fin3 == fin and epoch3 > epoch2
