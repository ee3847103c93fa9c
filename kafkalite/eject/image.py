"""The KRaft metadata image of an ejected data directory: what Kafka 4.4's controller would hold for it.

The records come in the order Kafka's ``MetadataImage.write`` puts them in a snapshot: feature levels, the cluster
(this node's broker registration), topics (each TopicRecord followed by its PartitionRecords), configs, client
quotas, producer ids, ACLs, SCRAM credentials, delegation tokens.

- **Features**: what ``kafka-storage format`` of Kafka 4.4 finalizes (metadata.version 33 = 4.4-IV2 first, as every
  snapshot starts); kraft.version stays 0 (a static quorum, ``controller.quorum.voters``: no record).
- **Broker registration**: node ``node_id`` as a controlled shutdown leaves it (fenced), with the broker epoch that
  NEW_DIR's ``.kafka_cleanshutdown`` names. When Kafka's broker registers, the controller compares the two: equal
  means a clean shutdown, so the partitions keep their leader and ISR (with no registration at all, Kafka 4.4 with
  eligible leader replicas on treats the first registration as an unclean shutdown and takes the node out of
  every ISR).
- **Partitions**: as a controlled shutdown of a one-node Kafka 4.4 leaves them: replicas = the node, in NEW_DIR's
  directory id, no leader, an empty ISR and the node as the (last known) eligible leader replica. The leader epoch
  is the partition's latest in its ``leader-epoch-checkpoint``; when the broker registers and is unfenced, the
  controller elects it from the ELR at the next epoch, above every epoch in the batches. (Written with leader and
  ISR = the node instead, the registration would first move the node out of every ISR and then elect it again:
  two epochs, and each coordinator partition loaded twice.)
- **Configs**: topic overrides Kafka 4.4 knows (others are reported and left out); the internal topics get the
  configs Kafka's coordinators create them with, kafkalite's overrides on top; dynamic broker configs (cluster
  default "" and per node) except kafkalite's own ``kafkalite.*``; the cluster-level ``min.insync.replicas``
  Kafka 4.4 writes when eligible leader replicas are on; group configs.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkalite.eject import records
from kafkalite.eject.source import SHARE_STATE_TOPIC, Source

#: what ``kafka-storage format`` of Kafka 4.4.0 finalizes (its "Bootstrap metadata" line)
KAFKA_44_FEATURES: tuple[tuple[str, int], ...] = (
    ("metadata.version", 33),                      # 4.4-IV2, first: it says how to read the rest
    ("eligible.leader.replicas.version", 1),
    ("group.version", 1),
    ("share.version", 2),
    ("streams.version", 1),
    ("transaction.version", 2),
)
#: the feature ranges a Kafka 4.4.0 broker registers with (min, max)
KAFKA_44_SUPPORTED: tuple[tuple[str, int, int], ...] = (
    ("group.version", 0, 1), ("kraft.version", 0, 1), ("share.version", 0, 2), ("metadata.version", 7, 33),
    ("streams.version", 0, 1), ("transaction.version", 0, 2), ("eligible.leader.replicas.version", 0, 1),
)

#: topic configs Kafka 4.4's LogConfig defines (message.format.version, message.timestamp.difference.max.ms and
#: message.downconversion.enable were removed in 4.0)
KAFKA_44_TOPIC_CONFIGS = frozenset({
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type", "compression.zstd.level",
    "delete.retention.ms", "errors.deadletterqueue.group.enable", "file.delete.delay.ms", "flush.messages",
    "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms",
    "max.message.bytes", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas",
    "preallocate", "remote.copy.lag.bytes", "remote.copy.lag.ms", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes",
    "segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
})


#: lower bounds Kafka 4.x puts on values kafkalite (as Kafka 3.9) accepts lower
KAFKA_44_MINIMUMS = {"segment.bytes": 1024 * 1024, "log.segment.bytes": 1024 * 1024}
#: broker settings Kafka 4.0 removed (kafkalite, as Kafka 3.9, still takes them)
REMOVED_BROKER_CONFIGS = frozenset({"log.message.timestamp.difference.max.ms", "log.message.format.version"})


def _refused(key: str, value: str) -> str | None:
    """Why Kafka 4.4 would refuse ``key=value`` (None: it takes it)."""
    if key in REMOVED_BROKER_CONFIGS:
        return "removed in Kafka 4.0"
    low = KAFKA_44_MINIMUMS.get(key)
    try:
        if low is not None and int(value) < low:
            return f"Kafka 4.4 requires at least {low}"
    except ValueError:
        return "not a number"
    return None


def internal_topic_configs(settings: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The configs Kafka's coordinators give their topics when they create them (GroupCoordinatorService,
    TransactionStateManager, ShareCoordinatorService), from the broker ``settings``."""
    return {
        "__consumer_offsets": {"cleanup.policy": "compact", "compression.type": "producer",
                               "segment.bytes": settings["offsets.topic.segment.bytes"]},
        "__transaction_state": {"cleanup.policy": "compact", "compression.type": "uncompressed",
                                "min.insync.replicas": settings["transaction.state.log.min.isr"],
                                "segment.bytes": settings["transaction.state.log.segment.bytes"],
                                "unclean.leader.election.enable": "false"},
        SHARE_STATE_TOPIC: {"cleanup.policy": "delete", "compression.type": "producer",
                            "segment.bytes": settings["share.coordinator.state.topic.segment.bytes"],
                            "min.insync.replicas": settings["share.coordinator.state.topic.min.isr"],
                            "retention.ms": "-1"},
    }


@dataclass(slots=True)
class Image:
    records: list[bytes]
    broker_epoch: int
    dropped: list[str] = field(default_factory=list)     # what was left out, one line each
    counts: dict[str, int] = field(default_factory=dict)


def build(src: Source, *, node_id: int, directory_id: uuid.UUID, endpoints: list[records.Endpoint],
          settings: Mapping[str, str], carry: set[str]) -> Image:
    """The records of the image. ``settings`` holds the broker settings the image repeats (internal topics'
    configs, ``min.insync.replicas``); ``carry`` the topics whose partitions are copied."""
    out: list[bytes] = []
    dropped: list[str] = []
    counts = dict.fromkeys(("topics", "partitions", "configs", "quotas", "acls", "scram", "tokens"), 0)
    for name, level in KAFKA_44_FEATURES:
        out.append(records.feature_level(name, level))
    broker_epoch = len(out) + 1        # as if registered right after the features: below every later offset
    out.append(records.register_broker(node_id, uuid.uuid4(), broker_epoch, endpoints, KAFKA_44_SUPPORTED,
                                       [directory_id]))
    for t in sorted(src.topics.values(), key=lambda t: t.name):
        if t.name not in carry:
            continue
        out.append(records.topic(t.name, t.topic_id))
        counts["topics"] += 1
        for p in range(t.count):
            pdir = t.partitions.get(p)
            epoch = pdir.leader_epoch if pdir is not None else 0
            # as a controlled shutdown of a one-node Kafka 4.4 leaves it: no leader, the node moved from the
            # ISR to the eligible leader replicas; unfencing the node elects it again (epoch + 1)
            out.append(records.partition(t.topic_id, p, replicas=[node_id], isr=[], leader=-1,
                                         leader_epoch=epoch, partition_epoch=epoch, directories=[directory_id],
                                         elr=[node_id], last_known_elr=[node_id]))
            counts["partitions"] += 1

    def cfg(rtype: int, rname: str, key: str, value: str) -> None:
        out.append(records.config(rtype, rname, key, value))
        counts["configs"] += 1

    internal = internal_topic_configs(settings)
    for name in sorted(carry):
        configs = {**internal.get(name, {}), **src.topic_configs.get(name, {})}
        for key, value in sorted(configs.items()):
            why = "Kafka 4.4 has no such topic config" if key not in KAFKA_44_TOPIC_CONFIGS else _refused(key, value)
            if why is None:
                cfg(records.CONFIG_TOPIC, name, key, value)
            else:
                dropped.append(f"topic {name}: config {key}={value} ({why}; Kafka's default applies)")
    broker = {k: dict(v) for k, v in src.broker_configs.items()}
    if "min.insync.replicas" not in broker.get("", {}):
        broker.setdefault("", {})["min.insync.replicas"] = settings["min.insync.replicas"]
    for rname in sorted(broker):
        if rname not in ("", str(src.node_id)):
            dropped.append(f"broker {rname}: dynamic configs of another node ({', '.join(sorted(broker[rname]))})")
            continue
        for key, value in sorted(broker[rname].items()):
            why = "a kafkalite setting" if key.startswith("kafkalite.") else _refused(key, value)
            if why is not None:
                dropped.append(f"broker {rname or '<cluster default>'}: {key}={value} ({why})")
                continue
            cfg(records.CONFIG_BROKER, "" if rname == "" else str(node_id), key, value)
    for group in sorted(src.group_configs):
        for key, value in sorted(src.group_configs[group].items()):
            cfg(records.CONFIG_GROUP, group, key, value)
    for entity, values in sorted(src.quotas.items(), key=lambda kv: repr(kv[0])):
        for qkey, qvalue in sorted(values.items()):
            out.append(records.client_quota(list(entity), qkey, qvalue))
            counts["quotas"] += 1
    out.append(records.producer_ids(src.next_producer_id))
    for b in sorted(src.acls, key=lambda b: (int(b.resource_type), b.name, int(b.pattern_type), b.principal,
                                             b.host, int(b.operation), int(b.permission))):
        out.append(records.access_control_entry(uuid.uuid4(), int(b.resource_type), b.name, int(b.pattern_type),
                                                b.principal, b.host, int(b.operation), int(b.permission)))
        counts["acls"] += 1
    for user in sorted(src.scram):
        for mech, cred in sorted(src.scram[user].items()):
            code = records.SCRAM_MECHANISMS.get(mech)
            if code is None:
                dropped.append(f"user {user}: {mech} credential (not a SCRAM mechanism Kafka knows)")
                continue
            out.append(records.user_scram_credential(user, code, cred.salt, cred.stored_key, cred.server_key,
                                                     cred.iterations))
            counts["scram"] += 1
    for tok in src.tokens:   # after the SCRAM credentials, as MetadataImage.write orders them
        out.append(records.delegation_token(tok.token_id, str(tok.owner), str(tok.requester),
                                            [str(r) for r in tok.renewers], tok.issue_ms, tok.max_ms, tok.expiry_ms))
        counts["tokens"] += 1
    return Image(out, broker_epoch, dropped, counts)
