"""Feature flags a broker advertises in ApiVersions v3+ (KIP-584): supported ranges and finalized levels.

Kafka 4.x brokers advertise, as tagged fields of ApiVersionsResponse, the features of their KRaft cluster:
``metadata.version`` (the IBP; 4.3-IV0 is level 30), ``kraft.version`` (1: dynamic quorum, KIP-853),
``group.version`` (1: the consumer group protocol of KIP-848 is enabled; Kafka 4.0's brokers refuse
ConsumerGroupHeartbeat below it) and ``share.version`` (1: share groups, KIP-932, GA in 4.2). Levels from Kafka
4.3's ``server-common`` (MetadataVersion, KRaftVersion, GroupVersion, ShareVersion).

``transaction.version`` is deliberately absent: kafkalite serves the classic (pre-KIP-890 v2) transaction flow,
and a client seeing transaction.version >= 2 would switch to the new one.

Only emulation profiles that name a table here advertise features: writing these tagged fields breaks clients
built on librdkafka < 2.2 (kcat 1.7), which mis-skip tagged fields, so the default (3.9) profile keeps the
response free of them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Feature:
    """One feature: the levels this broker supports and the level finalized for the cluster."""

    name: str
    min_level: int
    max_level: int
    finalized: int


KAFKA_4_3: tuple[Feature, ...] = (
    Feature("metadata.version", 7, 30, 30),   # 3.3-IV3 (the minimum) .. 4.3-IV0
    Feature("kraft.version", 0, 1, 1),
    Feature("group.version", 0, 1, 1),
    Feature("share.version", 0, 1, 1),
)

#: emulation profile -> the features it advertises
FEATURES: dict[str, tuple[Feature, ...]] = {"4.3": KAFKA_4_3}
#: Kafka reports the metadata log offset of the last feature change; a fixed positive epoch is as good for a
#: single broker whose features never change
FINALIZED_EPOCH = 1


def features_for(release: str | None) -> tuple[Feature, ...]:
    return FEATURES.get(release or "", ())
