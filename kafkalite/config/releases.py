"""The Kafka release a broker presents (``--emulate-kafka X.Y``): the API version ranges ApiVersions advertises
and, through ``CONFIG_RELEASE``, the config tables (``kafkalite.config.defs``).

Each profile has a table api key -> (lowest, highest) version (:func:`table_for`). ApiVersions advertises, for every
registered handler, the overlap of the handler's range with the table's; an API the table lacks, or whose overlap is
empty, is not advertised at all.

- ``4.3`` and ``4.4``: the real brokers' own ApiVersions answers, captured by ``tools/capture_kafka.py`` into
  ``kafkalite.config.kafka_releases`` (KIP-896's raised minimums included: Kafka 4.0 removed Produce v0-2,
  Fetch v0-3, ListOffsets v0, OffsetCommit v0-1, ...; the share group APIs start at their GA version 1).
  Kafka 4.x lists Produce from v0 although it serves v3+ (``ADVERTISED_BELOW_SERVED``): so do these profiles.
- ``2.8``, ``3.6``, ``3.9``: the highest *stable* version each client-facing API had (from the request JSON specs
  of tags 2.8.2, 3.6.2 and 3.9.0); no version had been removed, so their lowest is 0.
- ``3.9+4.4`` (the default): Kafka 4.4's table widened to every version Kafka 3.9 served, so old clients keep
  KIP-896's removed versions (kafka-python 2.x's ListOffsets v0, aiokafka's old Metadata, ...) while the broker
  presents itself as Kafka 4.4 (features, configs); ``3.9+4.3`` is the previous default, 3.9 with 4.3's
  additions, presenting itself as Kafka 3.9.

Broker-internal APIs (LeaderAndIsr, Vote, WriteTxnMarkers, the share group state RPCs, ...) appear in the
captured tables but kafkalite has no handler for them, so they are not advertised; neither are versions above a
handler's maximum.
"""
from __future__ import annotations

from kafkalite.config.kafka_releases import api_versions as _captured

KAFKA_2_8: dict[int, int] = {
    0: 9, 1: 12, 2: 6, 3: 11, 8: 8, 9: 7, 10: 3, 11: 7, 12: 4, 13: 4, 14: 5, 15: 5, 16: 4, 17: 1, 18: 3,
    19: 7, 20: 6, 21: 2, 22: 4, 23: 4, 24: 3, 25: 3, 26: 3, 28: 3, 29: 2, 30: 2, 31: 2, 32: 4, 33: 2,
    35: 2, 36: 2, 37: 3, 42: 2, 44: 1, 47: 0, 48: 1, 49: 1, 50: 0, 51: 0, 57: 0, 60: 0,
    34: 2, 43: 2, 45: 0, 46: 0, 61: 0,   # replication admin APIs (#15)
}

KAFKA_3_6: dict[int, int] = {
    0: 9, 1: 15, 2: 8, 3: 12, 8: 8, 9: 8, 10: 4, 11: 9, 12: 4, 13: 5, 14: 5, 15: 5, 16: 4, 17: 1, 18: 3,
    19: 7, 20: 6, 21: 2, 22: 4, 23: 4, 24: 4, 25: 3, 26: 3, 28: 3, 29: 3, 30: 3, 31: 3, 32: 4, 33: 2,
    35: 4, 36: 2, 37: 3, 42: 2, 44: 1, 47: 0, 48: 1, 49: 1, 50: 0, 51: 0, 57: 1, 60: 0, 61: 0, 65: 0,
    66: 0,
    34: 2, 43: 2, 45: 0, 46: 0, 55: 1,   # replication admin APIs (#15)
}

KAFKA_3_9: dict[int, int] = {
    0: 11, 1: 17, 2: 9, 3: 12, 8: 9, 9: 9, 10: 6, 11: 9, 12: 4, 13: 5, 14: 5, 15: 5, 16: 5, 17: 1, 18: 4,
    19: 7, 20: 6, 21: 2, 22: 5, 23: 4, 24: 5, 25: 4, 26: 4, 28: 4, 29: 3, 30: 3, 31: 3, 32: 4, 33: 2,
    35: 4, 36: 2, 37: 3, 42: 2, 44: 1, 47: 0, 48: 1, 49: 1, 50: 0, 51: 0, 57: 1, 60: 1, 61: 0, 65: 0,
    66: 1, 68: 0, 69: 0, 75: 0,
    34: 2, 43: 2, 45: 0, 46: 0, 55: 2,   # replication admin APIs (#15)
    74: 0,                               # ListClientMetricsResources (4.1+: ListConfigResources)
}

#: the previous default: every version Kafka 3.9 or 4.3 serves (each API up to the higher of the two stable caps,
#: no floors), so old clients keep KIP-896's removed versions and new ones get 4.x's (ConsumerGroupHeartbeat v1,
#: which librdkafka 2.16 needs for group.protocol=consumer, and the share group APIs)
KAFKA_3_9_AND_4_3: dict[int, int] = {k: max(KAFKA_3_9.get(k, -1), hi)
                                     for k, (_lo, hi) in sorted({**{k: (0, v) for k, v in KAFKA_3_9.items()},
                                                                 **_captured("4.3")}.items())}
#: the default: Kafka 4.4 (its configs, features and version ranges), serving also every version Kafka 3.9 served
DEFAULT_PROFILE = "3.9+4.4"
#: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge: the default also serves their v0 (Kafka
#: 4.0's early access, what the Java client 3.9.1's KafkaShareConsumer speaks), as the previous default did
SHARE_EARLY_ACCESS = frozenset({76, 77, 78, 79})
#: profiles whose table is a captured release's exact ApiVersions answer (``kafkalite.config.kafka_releases``)
CAPTURED_PROFILES = ("4.3", "4.4")

RELEASES: dict[str, dict[int, int]] = {
    "2.8": KAFKA_2_8, "3.6": KAFKA_3_6, "3.9": KAFKA_3_9, "3.9+4.3": KAFKA_3_9_AND_4_3,
    "4.3": {k: hi for k, (_lo, hi) in _captured("4.3").items()},
    "4.4": {k: hi for k, (_lo, hi) in _captured("4.4").items()},
    DEFAULT_PROFILE: {k: max(KAFKA_3_9.get(k, -1), hi) for k, (_lo, hi) in
                      sorted({**{k: (0, v) for k, v in KAFKA_3_9.items()}, **_captured("4.4")}.items())},
}

#: profile -> the Kafka release whose configs it presents: topic and broker config names, defaults, validation
#: and how DescribeConfigs lists them (``kafkalite.config.defs.topic_defs``/``broker_defs``). Kafka 4.0 removed
#: and changed configs (KIP-724, KIP-1030); profiles of older releases keep Kafka 3.9's tables.
CONFIG_RELEASE: dict[str, str] = {"2.8": "3.9", "3.6": "3.9", "3.9": "3.9", "3.9+4.3": "3.9", "4.3": "4.3",
                                  "4.4": "4.4", DEFAULT_PROFILE: "4.4"}

#: Kafka 4.x advertises Produce from v0 though it serves v3+ (KAFKA-18659: librdkafka enables its compression
#: codecs only when Produce v0 is listed; a v0-2 request closes the connection there, as here)
ADVERTISED_BELOW_SERVED: dict[int, int] = {0: 0}


def table_for(profile: str | None) -> dict[int, tuple[int, int]] | None:
    """api key -> (lowest, highest) version the emulated release advertises; ``None``/"" means no limit.
    Older releases' tables name only the highest (their lowest is 0: no version had been removed); 4.3's and
    4.4's are their brokers' own answers, KIP-896's raised minimums included; the default is the union of 3.9's
    and 4.4's."""
    if not profile:
        return None
    if profile not in RELEASES:
        raise ValueError(f"unknown Kafka release to emulate: {profile!r} (known: {', '.join(RELEASES)})")
    if profile in CAPTURED_PROFILES:
        return _captured(profile)
    if profile == DEFAULT_PROFILE:
        new = _captured("4.4")
        return {k: (0 if k in KAFKA_3_9 or k in SHARE_EARLY_ACCESS else new[k][0], hi)
                for k, hi in RELEASES[profile].items()}
    return {k: (0, hi) for k, hi in RELEASES[profile].items()}


def below_served(profile: str | None) -> dict[int, int]:
    """APIs whose advertised minimum is lower than any version served (Produce under Kafka 4.x's tables)."""
    return ADVERTISED_BELOW_SERVED if profile in (*CAPTURED_PROFILES, DEFAULT_PROFILE) else {}


def config_release(profile: str | None) -> str:
    """The config release ("3.9", "4.3", "4.4") of a profile; ``None``/"" is the default profile."""
    return CONFIG_RELEASE.get(profile or DEFAULT_PROFILE, "3.9")
