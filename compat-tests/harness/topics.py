"""Topic setup for the tests (through confluent-kafka's admin, the most forgiving client)."""

from __future__ import annotations

import time

from kafkalite.tests.support.requires import missing


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                 timeout_s: float = 30.0) -> None:
    """Create a topic with confluent-kafka's admin and wait until metadata shows every partition."""
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError as e:
        missing(f"confluent-kafka (used to create topics) missing: {e}")
    adm = AdminClient({"bootstrap.servers": bootstrap})
    fut = adm.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1,
                                      config=dict(config or {}))], operation_timeout=timeout_s)[name]
    fut.result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        md = adm.list_topics(topic=name, timeout=timeout_s)
        tm = md.topics.get(name)
        if tm is not None and tm.error is None and len(tm.partitions) == partitions and all(
                p.leader >= 0 for p in tm.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} not visible with {partitions} partitions: {tm}")
        time.sleep(0.1)
