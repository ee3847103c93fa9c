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
  kafkalite has no metadata log: it reports :data:`FINALIZED_EPOCH` (0: the levels as bootstrapped; Java's
  NetworkClient takes finalized features from any epoch >= 0) plus one per change UpdateFeatures made
  (:class:`FeatureLevels`, persisted in the log dir).
* Kafka 2.8 (ZooKeeper mode, feature versioning off) reports no features and epoch -1: the tagged fields
  stay at their defaults and the codec leaves them out.
* Kafka 4.3 and 4.4 (``--emulate-kafka 4.3``/``4.4`` and the default ``3.9+4.4``): the features the real
  brokers report (captured by ``tools/capture_kafka.py``, ``kafkalite.config.kafka_releases``), as far as
  kafkalite implements them: ``metadata.version`` 7 (3.3-IV3, the minimum) to 30 (4.3-IV0) / 33 (4.4-IV2),
  ``kraft.version`` 1 (dynamic quorum, KIP-853), ``group.version`` 1 (the KIP-848 consumer group protocol;
  4.0 brokers refuse ConsumerGroupHeartbeat below it), ``share.version`` 1 (share groups, KIP-932, GA in
  4.2) and, in 4.4, 0-2 finalized at 2 (the share group dead-letter queue, KIP-1191,
  ``kafkalite.coordinator.share.dlq``; at level 1 a group's DLQ is off), ``transaction.version`` 0-2 finalized at 2 (KIP-890 part 2: the Java client 4.x then bumps the epoch
  with every EndTxn v5 and adds partitions by Produce v12 / TxnOffsetCommit v5; other clients keep the
  classic flow, which level 2 still serves; ``kafkalite.coordinator.txn``), ``streams.version`` 0-1 finalized at
  1 (KIP-1071 streams groups, ``kafkalite.coordinator.streams``), ``eligible.leader.replicas.version`` 0-1
  finalized at 1 (KIP-966: a cluster's partition changes follow ``kafkalite.cluster.elr``; one broker has no
  other replica to elect). :data:`NOT_IMPLEMENTED` caps a feature kafkalite does not implement (none now).

librdkafka 2.0.2 (kcat 1.7.1) reads these tagged fields correctly (compat-tests/test_admin_surface.py
runs kcat against them). What it cannot read is a tagged field written out while it holds its default (librdkafka
before 2.2 mis-skips tagged fields): a FinalizedFeaturesEpoch of -1 written explicitly would break it, so the
codec leaves default-valued tagged fields out, as Kafka does (docs/internals/wire-codegen.md).

Rows for another release go into :data:`FEATURES` under its profile name; a profile without a row set
reports no features.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import trio

from kafkalite.config.kafka_releases import module as _release_module
from kafkalite.config.releases import config_release
from kafkalite.metadata import atomic_write
from kafkalite_wire.messages import ApiVersionsResponse

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_version: int      # lowest level this broker supports
    max_version: int      # highest level this broker supports
    finalized: int        # the cluster's finalized level; 0 = not finalized (omitted from the response)


FINALIZED_EPOCH = 0

#: emulation profile (kafkalite.config.releases; None = no cap, kafkalite presents itself as 3.9) -> features
FEATURES: dict[str | None, tuple[Feature, ...]] = {
    "2.8": (),
    "3.6": (Feature("metadata.version", 1, 14, 14),),                   # 3.6-IV2
    "3.9": (Feature("metadata.version", 1, 21, 21),                     # 3.9-IV0
            Feature("kraft.version", 0, 1, 1)),
}
#: feature -> the highest level kafkalite implements of the features a captured 4.x release reports (0: none)
NOT_IMPLEMENTED: dict[str, int] = {}


def _captured(release: str) -> tuple[Feature, ...]:
    """The release's reported features (ApiVersions v4 order), capped at what kafkalite implements."""
    mod = _release_module(release)
    finalized = dict(mod.FINALIZED_FEATURES)
    out = []
    for name, lo, hi in mod.SUPPORTED_FEATURES:
        cap = NOT_IMPLEMENTED.get(name, hi)
        if cap > 0:
            out.append(Feature(name, lo, min(hi, cap), min(finalized.get(name, 0), cap)))
    return tuple(out)


FEATURES["4.3"] = _captured("4.3")
FEATURES["4.4"] = _captured("4.4")
FEATURES[None] = FEATURES["3.9"]
# the previous default profile ("3.9+4.3") presents itself as Kafka 3.9: its extra 4.x versions
# (ConsumerGroupHeartbeat v1, the share APIs) need no feature flag with the clients measured here
FEATURES["3.9+4.3"] = FEATURES["3.9"]
# the default presents itself as Kafka 4.4
FEATURES["3.9+4.4"] = FEATURES["4.4"]


def features_for(profile: str | None) -> tuple[Feature, ...]:
    return FEATURES.get(profile or None, ())


def apply_features(resp: ApiVersionsResponse, profile: str | None, version: int,
                   finalized: Mapping[str, int] | None = None, epoch: int = FINALIZED_EPOCH) -> None:
    """Fill ApiVersions v3+ ``SupportedFeatures`` / ``FinalizedFeaturesEpoch`` / ``FinalizedFeatures``
    (``finalized``/``epoch``: the levels UpdateFeatures left, :class:`FeatureLevels`; default the table's)."""
    if version < 3:
        return
    rows = features_for(profile)
    if not rows:
        return
    resp.supported_features = [
        ApiVersionsResponse.SupportedFeatureKey(name=f.name, min_version=f.min_version, max_version=f.max_version)
        for f in rows if version >= 4 or f.min_version > 0]
    levels = {f.name: f.finalized for f in rows} if finalized is None else finalized
    resp.finalized_features_epoch = epoch
    resp.finalized_features = [
        ApiVersionsResponse.FinalizedFeatureKey(name=f.name, min_version_level=levels.get(f.name, 0),
                                                max_version_level=levels.get(f.name, 0))
        for f in rows if levels.get(f.name, 0) > 0]


# -- UpdateFeatures (key 57): finalized levels that change, persisted --------------------------------------------
#: metadata.version levels whose metadata changed (Kafka's MetadataVersion.didMetadataChange): downgrading across
#: one of them could lose metadata, so only an upgrade crosses it (3.0-IV1 .. 4.4-IV2)
METADATA_CHANGED = frozenset({1, 3, 4, 5, 6, 7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33})
MIN_BOOTSTRAP_METADATA_VERSION = 4     # 3.3-IV0: the first level with FeatureLevelRecord
FEATURES_FILE = "kafkalite-features.json"
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _mv_name(level: int) -> str:
    """MetadataVersion.toString of a level (only the bootstrap minimum is named in a message)."""
    return {4: "3.3-IV0"}.get(level, str(level))


class FeatureLevels:
    """The finalized levels of the emulated release's features, as UpdateFeatures left them: kept in
    ``kafkalite-features.json`` in the log dir (written whole, then renamed) with an epoch that grows by one
    per change (Kafka's FinalizedFeaturesEpoch is the metadata offset of the change: it only grows too).
    Levels saved under another profile that this one does not support are ignored."""

    def __init__(self, log_dir: str | Path, profile: str | None, node_id: int = 1) -> None:
        self.path = Path(log_dir) / FEATURES_FILE
        self.rows = {f.name: f for f in features_for(profile)}
        self.kafka4 = config_release(profile) != "3.9"   # Kafka 4.x's messages
        self.node_id = node_id
        self.levels = {f.name: f.finalized for f in self.rows.values()}
        self.epoch = FINALIZED_EPOCH
        self._lock = trio.Lock()            # one file writer at a time
        self._written = FINALIZED_EPOCH     # the epoch on disk
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            saved = data.get("levels", {}) if isinstance(data, dict) else {}
            self.epoch = max(FINALIZED_EPOCH, int(data.get("epoch", FINALIZED_EPOCH)))
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, AttributeError):
            log.warning("ignoring unreadable %s", self.path)
            return
        for name, level in saved.items():
            f = self.rows.get(name)
            if f is not None and isinstance(level, int) and f.min_version <= level <= f.max_version:
                self.levels[name] = level

    def finalized(self) -> dict[str, int]:
        return dict(self.levels)

    def check(self, name: str, level: int, upgrade_type: int) -> str | None:
        """None, or Kafka 3.9's INVALID_UPDATE_VERSION message for this one update
        (FeatureControlManager.updateFeature / updateMetadataVersion)."""
        def invalid(why: str) -> str:
            return f"Invalid update version {level} for feature {name}. {why}"

        if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
            return invalid("The controller does not support the given upgrade type.")
        current = self.levels.get(name, 0)
        if level < 0:
            return invalid("A feature version cannot be less than 0.")
        f = self.rows.get(name)
        lo, hi = (f.min_version, f.max_version) if f is not None else (0, 0)
        if not lo <= level <= hi:
            if hi == 0:
                return invalid(f"Local controller {self.node_id} does not support this feature.")
            return invalid(f"Local controller {self.node_id} only supports versions "
                           + (str(lo) if lo == hi else f"{lo}-{hi}"))
        if level < current and upgrade_type == UPGRADE:
            return invalid("Can't downgrade the version of this feature without setting the upgrade type to "
                           "either safe or unsafe downgrade.")
        if level > current and upgrade_type != UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if name == "metadata.version":
            def bad_mv(why: str) -> str:
                if self.kafka4:   # Kafka 4.x's FeatureControlManager.unsupportedMetadataDowngrade
                    return f"Unsupported metadata.version downgrade from {current} to {level}. {why}"
                return f"Invalid metadata.version {level}. {why}"
            if level < MIN_BOOTSTRAP_METADATA_VERSION:
                return f"Invalid metadata.version {level}. Unable to set a metadata.version less than " \
                       f"{_mv_name(MIN_BOOTSTRAP_METADATA_VERSION)}"
            if level < current and any(v in METADATA_CHANGED for v in range(level + 1, current + 1)):
                if upgrade_type == UNSAFE_DOWNGRADE:
                    return bad_mv("Unsafe metadata downgrade is not supported in this version.")
                if self.kafka4:   # 4.x dropped the retry advice (unsafe downgrades are not implemented)
                    return bad_mv("Refusing to perform the requested downgrade because it might delete metadata "
                                  "information.")
                return bad_mv("Refusing to perform the requested downgrade because it might delete metadata "
                              "information. Retry using UNSAFE_DOWNGRADE if you want to force the downgrade to "
                              "proceed.")
        elif name == "kraft.version" and self.kafka4 and level != current and upgrade_type != UPGRADE:
            return invalid("Can't downgrade the version of this feature.")
        return None

    async def apply(self, changes: dict[str, int]) -> None:
        """Set the levels (already checked) and persist them with the next epoch; no change, no new epoch. The
        file is written (and fsynced) in a worker thread, one writer at a time, never an older epoch over a newer
        one; the caller answers after it is on disk."""
        changed = {n: lv for n, lv in changes.items() if n in self.rows and self.levels.get(n) != lv}
        if not changed:
            return
        self.levels.update(changed)
        self.epoch += 1
        epoch, data = self.epoch, json.dumps({"epoch": self.epoch, "levels": self.levels}, sort_keys=True).encode()
        async with self._lock:
            if epoch > self._written:
                await trio.to_thread.run_sync(atomic_write, self.path, data)
                self._written = epoch
