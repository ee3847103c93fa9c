"""UpdateFeatures (key 57) through Java kafka-clients 3.9.1's Admin.updateFeatures / describeFeatures
(compat-tests/java/AdminOps.java) and kafka-python's describe_features, against a one-node broker as Kafka 3.9:
a refused downgrade surfaces as InvalidUpdateVersionException with Kafka's message, a safe downgrade of
metadata.version is finalized and seen by describeFeatures with a higher FinalizedFeaturesEpoch, validate_only
changes nothing, and an upgrade takes it back."""
from __future__ import annotations

from typing import Any


def _features(java: Any, bs: str) -> tuple[dict, int]:
    r = java.admin(bs, "describe_features")
    return r["finalized"], r["epoch"]


def test_update_features_java(broker, get_client: Any) -> None:
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
