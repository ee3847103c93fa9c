"""The bound on how much one admin request may create, as Kafka's controller bounds it.

Kafka's KRaft controller turns every admin operation into metadata records and refuses one that would produce
more than ``QuorumController.MAX_RECORDS_PER_USER_OP`` (10,000) of them: the whole request fails, every topic in
it answered POLICY_VIOLATION "Unable to perform excessively large batch operation." CreateTopics counts a
TopicRecord, one PartitionRecord per partition and one ConfigRecord per config of each topic that passed its own
checks; CreatePartitions one PartitionRecord per new partition. kafkalite applies the same bound, which also
bounds the files one request makes (each partition is a directory and its files): without it a CreateTopics of
2^31-1 partitions ran in a worker thread for ever.
"""
from __future__ import annotations

MAX_RECORDS_PER_USER_OP = 10_000
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."


def topic_records(partitions: int, configs: int) -> int:
    """Metadata records Kafka writes for one new topic."""
    return 1 + partitions + configs
