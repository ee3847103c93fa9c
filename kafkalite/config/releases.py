"""Per-release caps and floors on advertised API versions (``--emulate-kafka X.Y``).

ApiVersions advertises, for every registered handler, ``max(handler min, floor)`` to ``min(handler max, cap of
the emulated release)``; an API the emulated release does not have (no entry), or whose range comes out empty,
is not advertised at all. The tables hold the highest *stable* version each client-facing API had in that
Apache Kafka release (taken from the request JSON specs of tags 2.8.2, 3.6.2 and 3.9.0 and of the 4.3 branch;
versions marked ``latestVersionUnstable`` excluded, e.g. 4.3's InitProducerId v6). Broker-internal APIs
(LeaderAndIsr, Vote, ...) are not listed since we never serve them.

Floors: Kafka 4.0 removed the protocol versions KIP-896 deprecated (Produce v0-2, Fetch v0-3, ListOffsets v0,
OffsetCommit v0-1, OffsetFetch v0, CreateTopics v0-1, DeleteTopics v0, OffsetForLeaderEpoch v0-1, the ACL APIs'
and DescribeConfigs' v0, ...); the 4.3 profile advertises none of them, as a Kafka 4.3 broker does (the share
group APIs start at their GA version 1, KIP-932). Older releases have no floors.
"""
from __future__ import annotations

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

KAFKA_4_3: dict[int, int] = {
    0: 13, 1: 18, 2: 11, 3: 13, 8: 10, 9: 10, 10: 6, 11: 9, 12: 4, 13: 5, 14: 5, 15: 6, 16: 5, 17: 1,
    18: 4, 19: 7, 20: 6, 21: 2, 22: 5, 23: 4, 24: 5, 25: 4, 26: 5, 27: 2, 28: 5, 29: 3, 30: 3, 31: 3,
    32: 4, 33: 2, 34: 2, 35: 5, 36: 2, 37: 3, 38: 3, 39: 2, 40: 2, 41: 3, 42: 2, 43: 2, 44: 1, 45: 1,
    46: 0, 47: 0, 48: 1, 49: 1, 50: 0, 51: 0, 55: 2, 57: 2, 60: 2, 61: 0, 64: 0, 65: 0, 66: 2, 68: 1,
    69: 1, 71: 0, 72: 0, 74: 1, 75: 0, 76: 1, 77: 1, 78: 2, 79: 2, 80: 1, 81: 0, 83: 0, 84: 0, 85: 1,
    86: 0, 87: 1, 88: 0, 89: 0, 90: 1, 91: 0, 92: 0,
}
KAFKA_4_3_FLOORS: dict[int, int] = {
    0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 27: 1, 29: 1, 30: 1, 31: 1, 32: 1, 34: 1, 35: 1,
    38: 1, 39: 1, 40: 1, 41: 1, 76: 1, 77: 1, 78: 1, 79: 1,
}

#: the previous default: every version Kafka 3.9 or 4.3 serves (each API up to the higher of the two stable caps,
#: no floors), so old clients keep KIP-896's removed versions and new ones get 4.x's (ConsumerGroupHeartbeat v1,
#: which librdkafka 2.16 needs for group.protocol=consumer, and the share group APIs)
KAFKA_3_9_AND_4_3: dict[int, int] = {k: max(KAFKA_3_9.get(k, -1), KAFKA_4_3.get(k, -1))
                                     for k in sorted(set(KAFKA_3_9) | set(KAFKA_4_3))}
#: the default: Kafka 4.4 (its configs), serving also every version Kafka 3.9 served
DEFAULT_PROFILE = "3.9+4.4"

RELEASES: dict[str, dict[int, int]] = {
    "2.8": KAFKA_2_8, "3.6": KAFKA_3_6, "3.9": KAFKA_3_9, "4.3": KAFKA_4_3, "3.9+4.3": KAFKA_3_9_AND_4_3,
    DEFAULT_PROFILE: KAFKA_3_9_AND_4_3,
}
FLOORS: dict[str, dict[int, int]] = {"4.3": KAFKA_4_3_FLOORS}

#: profile -> the Kafka release whose configs it presents: topic and broker config names, defaults, validation
#: and how DescribeConfigs lists them (``kafkalite.config.defs.topic_defs``/``broker_defs``). Kafka 4.0 removed
#: and changed configs (KIP-724, KIP-1030); profiles of older releases keep Kafka 3.9's tables.
CONFIG_RELEASE: dict[str, str] = {"2.8": "3.9", "3.6": "3.9", "3.9": "3.9", "3.9+4.3": "3.9", "4.3": "4.3",
                                  DEFAULT_PROFILE: "4.4"}


def config_release(profile: str | None) -> str:
    """The config release ("3.9", "4.3", "4.4") of a profile; ``None``/"" is the default profile."""
    return CONFIG_RELEASE.get(profile or DEFAULT_PROFILE, "3.9")


def caps_for(release: str | None) -> dict[int, int] | None:
    """The cap table for ``release`` ("2.8", "3.6", "3.9"); ``None``/"" means no cap."""
    if not release:
        return None
    try:
        return RELEASES[release]
    except KeyError:
        raise ValueError(f"unknown Kafka release to emulate: {release!r} (known: {', '.join(RELEASES)})") from None


def floors_for(release: str | None) -> dict[int, int]:
    """The lowest version of each API the emulated release still serves (KIP-896); {} when none was removed."""
    return FLOORS.get(release or "", {})
