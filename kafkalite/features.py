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

Helper rows for other releases (4.x: ``group.version``, ``share.version``, ``transaction.version``) go
into :data:`FEATURES` under their profile name; a profile without a row set inherits nothing.
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
}
FEATURES[None] = FEATURES["3.9"]


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
