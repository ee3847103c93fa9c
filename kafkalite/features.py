"""Feature flags (KIP-584) as a single-node Kafka reports them in ApiVersions v3+, per emulated release.

Each row is one feature: the range this broker supports (``SupportedFeatures``) and the level finalized
for the cluster (``FinalizedFeatures``; 0 = not finalized). Kafka 3.9 builds them as follows, and
``api_versions`` follows it:

* supported: ``metadata.version`` from 1 (3.0-IV1, the first KRaft level) to the release's latest
  production level, plus each production feature whose latest production level is above 0
  (``BrokerFeatures.defaultSupportedFeatures``); in 3.9 that adds ``kraft.version`` 0–1 and leaves
  ``transaction.version`` / ``group.version`` out (their levels 1+ belong to 4.0's metadata.version).
* ApiVersions below v4 omits a supported feature whose minimum is 0 (KAFKA-17492: older clients fail on
  it), so ``kraft.version`` shows only to v4 requests.
* finalized: ``metadata.version`` and every feature at a level above 0 (level-0 features are omitted,
  ``ApiVersionsResponse.createFinalizedFeatureKeys``). The rows below are a node formatted as the 3.9
  quickstart formats it (``kafka-storage format --standalone``: ``kraft.version`` 1).
* ``FinalizedFeaturesEpoch`` is, in Kafka, the offset of the metadata image the levels were read from;
  kafkalite has no metadata log and its feature levels never change after start, so it reports
  :data:`FINALIZED_EPOCH` (0: the levels as bootstrapped; Java's NetworkClient takes finalized features
  from any epoch >= 0).
* Kafka 2.8 (ZooKeeper mode, feature versioning off) reports no features and epoch -1: the tagged fields
  stay at their defaults and the codec leaves them out.
* Kafka 4.3 (``--emulate-kafka 4.3``): ``metadata.version`` 7 (3.3-IV3, its minimum) to 30 (4.3-IV0),
  ``kraft.version`` 1 (dynamic quorum, KIP-853), ``group.version`` 1 (the KIP-848 consumer group protocol;
  4.0 brokers refuse ConsumerGroupHeartbeat below it), ``share.version`` 1 (share groups, KIP-932, GA in
  4.2); levels from 4.3's ``server-common``. ``transaction.version`` stays out in every profile:
  kafkalite serves the classic (pre-KIP-890 v2) transaction flow and a client seeing level 2 would
  switch to the new one.

librdkafka 2.0.2 (kcat 1.7.1) reads these tagged fields correctly (compat-tests/test_admin_surface.py
runs kcat against them); the ARCHITECTURE gotcha about it is an explicit FinalizedFeaturesEpoch of -1.

Rows for another release go into :data:`FEATURES` under its profile name; a profile without a row set
reports no features.
"""
from __future__ import annotations

from dataclasses import dataclass

from wire.messages import ApiVersionsResponse


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_version: int      # lowest level this broker supports
    max_version: int      # highest level this broker supports
    finalized: int        # the cluster's finalized level; 0 = not finalized (omitted from the response)


FINALIZED_EPOCH = 0

#: emulation profile (kafkalite.versions; None = no cap, kafkalite presents itself as 3.9) -> features
FEATURES: dict[str | None, tuple[Feature, ...]] = {
    "2.8": (),
    "3.6": (Feature("metadata.version", 1, 14, 14),),                   # 3.6-IV2
    "3.9": (Feature("metadata.version", 1, 21, 21),                     # 3.9-IV0
            Feature("kraft.version", 0, 1, 1)),
    "4.3": (Feature("metadata.version", 7, 30, 30),                     # 3.3-IV3 .. 4.3-IV0
            Feature("kraft.version", 0, 1, 1),
            Feature("group.version", 0, 1, 1),
            Feature("share.version", 0, 1, 1)),
}
FEATURES[None] = FEATURES["3.9"]
# the default profile ("3.9+4.3", kafkalite.versions.DEFAULT_PROFILE) presents itself as Kafka 3.9: its extra
# 4.x versions (ConsumerGroupHeartbeat v1, the share APIs) need no feature flag with the clients measured here
FEATURES["3.9+4.3"] = FEATURES["3.9"]


def features_for(profile: str | None) -> tuple[Feature, ...]:
    return FEATURES.get(profile or None, ())


def apply_features(resp: ApiVersionsResponse, profile: str | None, version: int) -> None:
    """Fill ApiVersions v3+ ``SupportedFeatures`` / ``FinalizedFeaturesEpoch`` / ``FinalizedFeatures``."""
    if version < 3:
        return
    rows = features_for(profile)
    if not rows:
        return
    resp.supported_features = [
        ApiVersionsResponse.SupportedFeatureKey(name=f.name, min_version=f.min_version, max_version=f.max_version)
        for f in rows if version >= 4 or f.min_version > 0]
    resp.finalized_features_epoch = FINALIZED_EPOCH
    resp.finalized_features = [
        ApiVersionsResponse.FinalizedFeatureKey(name=f.name, min_version_level=f.finalized,
                                                max_version_level=f.finalized)
        for f in rows if f.finalized > 0]
