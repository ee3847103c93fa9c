"""Topic setup for the tests (through confluent-kafka's admin, the most forgiving client)."""

from __future__ import annotations

import time

from kafkalite.tests.support.requires import missing


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                 timeout_s: float = 30.0, client_conf: dict[str, object] | None = None) -> None:
    """Create a topic with confluent-kafka's admin and wait until metadata shows every partition with a leader
    and every leader answers ListOffsets for it. ``client_conf``: more admin client settings (SASL, ...).

    Apache Kafka publishes a new partition's leader in its metadata cache a moment before the replica manager
    has made the local replica the leader: a Produce in that window gets NOT_LEADER_OR_FOLLOWER (kafkajs then
    retries the whole request and duplicates the partitions that had succeeded). ListOffsets goes through the
    same leader check, so its success means the partitions take records."""
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError as e:
        missing(f"confluent-kafka (used to create topics) missing: {e}")
    adm = AdminClient({"bootstrap.servers": bootstrap, **(client_conf or {})})
    fut = adm.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                      config=dict(config or {}))], operation_timeout=timeout_s)[name]
    fut.result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        md = adm.list_topics(topic=name, timeout=timeout_s)
        tm = md.topics.get(name)
        if tm is not None and tm.error is None and len(tm.partitions) == partitions and all(
                p.leader >= 0 for p in tm.partitions.values()) and _leaders_ready(adm, name, partitions):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} not visible with {partitions} partitions: {tm}")
        time.sleep(0.1)


def _leaders_ready(adm: object, name: str, partitions: int) -> bool:
    """True once ListOffsets (latest) succeeds on every partition (one request for all of them)."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    futs = adm.list_offsets({TopicPartition(name, p): OffsetSpec.latest() for p in range(partitions)},  # type: ignore[attr-defined]
                            request_timeout=10)
    try:
        for f in futs.values():
            f.result(10)
    except KafkaException:
        return False
    return True
