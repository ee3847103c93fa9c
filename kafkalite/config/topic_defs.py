"""Which broker settings supply a topic config's default, and which broker settings can change at run time.

``BROKER_TO_TOPIC``: a broker setting (``log.retention.bytes``) -> the topic config whose default it is
(``retention.bytes``), as Kafka's ``ServerTopicConfigSynonyms`` pairs them; ``DYNAMIC_BROKER_CONFIGS``: what
AlterConfigs / IncrementalAlterConfigs on a BROKER resource may set without a restart.
"""
from __future__ import annotations

# broker setting -> topic setting it provides the default for
BROKER_TO_TOPIC = {
    "log.segment.bytes": "segment.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.cleanup.policy": "cleanup.policy",
    "log.retention.bytes": "retention.bytes",
    "message.max.bytes": "max.message.bytes",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "compression.type": "compression.type",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
}


#: Kafka 4.x's internal topic config (LogConfig.defineInternal): a segment size below segment.bytes' 1 MiB minimum,
#: for tests; listed by DescribeConfigs only when set
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"

# broker settings AlterConfigs may change at runtime (Kafka's DynamicLogConfig: those behind topic defaults;
# min.insync.replicas has the topic config's own name, and with eligible leader replicas on it is cluster-level
# only: kafkalite.metadata.elr_configs)
DYNAMIC_BROKER_CONFIGS = frozenset(BROKER_TO_TOPIC) | {
    "log.retention.ms", "log.retention.minutes", "log.retention.hours", "log.roll.ms", "log.roll.hours",
    "min.insync.replicas",
    # Kafka 4.4's group coordinator reconfigures these (GroupCoordinatorConfig.RECONFIGURABLE_CONFIGS; KIP-1191)
    "errors.deadletterqueue.auto.create.topics.enable", "errors.deadletterqueue.topic.name.prefix"}
