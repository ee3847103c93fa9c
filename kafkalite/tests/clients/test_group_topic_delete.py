"""Deleting a topic removes the committed offsets groups held for it (Kafka's handleDeletedPartitions)."""
from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.requires("confluent_kafka")


def test_committed_offsets_of_a_deleted_topic_are_removed() -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite import Broker

    with Broker() as broker:
        bs = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        for name in ("doomed", "kept"):
            admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
        consumer = Consumer({"bootstrap.servers": bs, "group.id": "g-del", "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition("doomed", 0, 5), TopicPartition("kept", 0, 7)], asynchronous=False)
        admin.delete_topics(["doomed"])["doomed"].result(30)
        deadline = time.monotonic() + 60   # bounds a hang only: the loop ends as soon as the offset is gone
        while True:
            got = {tp.topic: tp.offset
                   for tp in consumer.committed([TopicPartition("doomed", 0), TopicPartition("kept", 0)], 10)}
            if got["doomed"] < 0 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        consumer.close()
        assert got == {"doomed": -1001, "kept": 7}
