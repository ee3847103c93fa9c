"""UpdateFeatures (key 57) through Java kafka-clients 3.9.1's Admin.updateFeatures / describeFeatures
(compat-tests/java/AdminOps.java) and kafka-python's describe_features, against a one-node broker as Kafka 4.4 answers
it (kafkalite's default profile, and the reference broker): a downgrade without an upgrade type, and a lossy
metadata.version downgrade, surface as InvalidUpdateVersionException with Kafka's messages ("The update failed for
all features since the following feature had an error: ..."); a safe downgrade of share.version is finalized and
seen by describeFeatures with a higher FinalizedFeaturesEpoch, validate_only changes nothing, and an upgrade takes
it back (both finalize share.version 2, the share group DLQ, KIP-1191)."""
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
    java = get_client("java")
    bs = broker.bootstrap
    fin, epoch = _features(java, bs)
    assert fin["metadata.version"] == [33, 33] and fin["kraft.version"] == [1, 1]
    share = fin["share.version"][1]
    assert share >= 1
    r = java.admin(bs, "update_features", feature="metadata.version", level=32)
    failed = "InvalidUpdateVersionException: " + KAFKA_4_PREFIX
    assert r["error"] == (failed + "Invalid update version 32 for feature metadata.version. Can't downgrade the "
                          "version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
    r = java.admin(bs, "update_features", feature="metadata.version", level=31, upgrade_type="SAFE_DOWNGRADE")
    assert r["error"] == (failed + "Unsupported metadata.version downgrade from 33 to 31. "
                          "Refusing to perform the requested downgrade because it might delete metadata information.")
    assert java.admin(bs, "update_features", feature="share.version", level=share - 1, upgrade_type="SAFE_DOWNGRADE",
                      validate_only=True) ["error"] is None
    assert _features(java, bs)[0] == fin   # (Kafka's epoch is a metadata log offset: it moves on its own)
    assert java.admin(bs, "update_features", feature="share.version", level=share - 1,
                      upgrade_type="SAFE_DOWNGRADE") ["error"] is None
    lowered = {**fin, "share.version": [share - 1, share - 1]} if share > 1 else \
        {k: v for k, v in fin.items() if k != "share.version"}   # level 0: no longer finalized
    fin2, epoch2 = _features_when(java, bs, lowered)
    assert fin2 == lowered and epoch2 > epoch

    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        assert a.describe_features()["metadata.version"]["finalized"] == (33, 33)
    finally:
        a.close()
    assert java.admin(bs, "update_features", feature="share.version", level=share) ["error"] is None
    fin3, epoch3 = _features_when(java, bs, fin)
    assert fin3 == fin and epoch3 > epoch2
