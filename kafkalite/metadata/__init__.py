"""The shared metadata room: what every broker of a cluster sees alike, kept apart from each broker's own
request handling (as Kafka separates its metadata image, replayed from the controller quorum, from each
broker's ``ReplicaManager`` and network threads).

One :class:`MetadataRoom` holds

- the topic catalog (``topics`` by name, ``topics_by_id``) and the names being created or removed right now
  (``pending_topics``), with each topic's config overrides (``kafkalite-topic-configs.json``);
- the dynamic broker and cluster configs (AlterConfigs on BROKER resources, ``kafkalite-broker-configs.json``,
  keyed by resource name: "" for the cluster default, "<node id>" for one broker);
- producer-id allocation (:mod:`kafkalite.metadata.producer_ids`: blocks persisted in ``kafkalite-producer-ids``,
  so ids stay unique across restarts, as Kafka's controller hands out blocks of 1,000 ids to brokers);
- partition leadership (``partitions``: leader, replicas, ISR, leader epoch, high watermark), filled only when
  several brokers share the room (``kafkalite.cluster``). A single broker leaves it empty and leads every
  partition itself, exactly as before the split.

A single broker's room lives in its log dir (the files above sit next to Kafka's, as they always did); a
cluster's room lives in the cluster's data dir, above the brokers' own ``broker-<id>/`` log dirs. Everything
here runs on the trio thread except the file writes, which are small.
"""
from __future__ import annotations

import json
import logging
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kafkalite.metadata.producer_ids import (  # noqa: F401 (re-exported)
    PRODUCER_ID_BLOCK,
    PRODUCER_IDS_FILE,
    ProducerIdAllocator,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

TOPIC_CONFIGS_FILE = "kafkalite-topic-configs.json"
BROKER_CONFIGS_FILE = "kafkalite-broker-configs.json"
MAX_TOPIC_NAME_LENGTH = 249
_TOPIC_NAME_RE = re.compile(r"[a-zA-Z0-9._-]+\Z")
#: Kafka's ``Topic.isInternal`` names: topics the broker's coordinators own (clients cannot produce to them,
#: delete their records, resize or delete them, nor create them)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
#: the KRaft metadata log: never a topic (Kafka answers its creation INVALID_REQUEST, and it exists in no
#: topic catalog, so every other operation on it answers UNKNOWN_TOPIC_OR_PARTITION); storage never loads it
METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_PROHIBITED = f"Creation of internal topic {METADATA_TOPIC} is prohibited."
#: names no client request can bring into being as topics
RESERVED_TOPICS = INTERNAL_TOPICS | {METADATA_TOPIC}


def invalid_topic_name(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name, in Kafka's words (``Topic.validate``), or None if it is legal."""
    if not name:
        why = "the empty string is not allowed"
    elif name in (".", ".."):
        why = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        why = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _TOPIC_NAME_RE.match(name):
        why = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return f"Topic name is invalid: {why}"


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int
    config: dict[str, str] = field(default_factory=dict)   # overrides only
    internal: bool = False


@dataclass(slots=True)
class PartitionState:
    """One partition's place in a cluster (Kafka's PartitionRegistration): ``replicas`` in preference order
    (the first is the preferred leader), the in-sync replicas, the current leader (-1: none alive in the ISR)
    and its epoch, bumped at every leader change so fenced leaders and stale fetches can be told apart; with
    eligible leader replicas on (KIP-966, ``kafkalite.cluster.elr``) the ELR and the last-known ELR."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    high_watermark: int = 0
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)


class MetadataRoom:
    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.topics: dict[str, TopicInfo] = {}
        self.topics_by_id: dict[uuid.UUID, TopicInfo] = {}
        # names whose partition directories are being created or removed in a worker thread right now
        self.pending_topics: set[str] = set()
        self.dynamic_broker_configs: dict[str, dict[str, str]] = self.read_json(BROKER_CONFIGS_FILE)
        self.partitions: dict[tuple[str, int], PartitionState] = {}   # cluster only
        self.cluster_id: str | None = None   # a cluster's (a single broker keeps its log dir's)
        # set once a cluster's brokers have all loaded: a broker starting later adds no topic from its disk
        self.catalog_complete = False
        self.producer_ids = ProducerIdAllocator(self.dir)
        self._shared: dict[str, Any] = {}

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """The room's one ``key`` object, built by ``make`` for the first broker that asks. What Kafka keeps in its
        metadata log and every broker enforces alike -- ACLs, SCRAM credentials, client quota configs, finalized
        feature levels, group configs -- is built this way from files in the room's directory, so the brokers of a
        cluster share one of each (a single broker's room is its own)."""
        obj = self._shared.get(key)
        if obj is None:
            obj = self._shared[key] = make()
        return obj

    # -- files -----------------------------------------------------------------------------------------
    def read_json(self, name: str) -> dict[str, dict[str, str]]:
        path = self.dir / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            log.warning("ignoring unreadable %s", path)
            return {}
        return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in data.items() if isinstance(v, dict)}

    def saved_topic_configs(self) -> dict[str, dict[str, str]]:
        return self.read_json(TOPIC_CONFIGS_FILE)

    def write_topic_configs(self) -> None:
        data = {t.name: t.config for t in self.topics.values() if t.config}
        atomic_write(self.dir / TOPIC_CONFIGS_FILE, json.dumps(data, sort_keys=True, indent=1).encode())

    def write_broker_configs(self) -> None:
        atomic_write(self.dir / BROKER_CONFIGS_FILE,
                     json.dumps(self.dynamic_broker_configs, sort_keys=True, indent=1).encode())

    def merged_dynamic(self, node_id: int, configs: Mapping[str, Mapping[str, str]] | None = None
                       ) -> dict[str, str]:
        """One broker's dynamic settings: the cluster default ("") with its own ("<node id>") on top."""
        d = self.dynamic_broker_configs if configs is None else configs
        return {**d.get("", {}), **d.get(str(node_id), {})}

    # -- topics ------------------------------------------------------------------------------------------
    def add_topic(self, info: TopicInfo) -> TopicInfo:
        self.topics[info.name] = info
        self.topics_by_id[info.topic_id] = info
        return info

    def remove_topic(self, name: str) -> TopicInfo:
        info = self.topics.pop(name)
        self.topics_by_id.pop(info.topic_id, None)
        for p in range(info.partitions):
            self.partitions.pop((name, p), None)
        return info

    # -- producer ids --------------------------------------------------------------------------------------
    def allocate_producer_id(self, handed_out: Callable[[], Iterable[int]],
                             in_use: Callable[[], Iterable[int]]) -> int:
        """A producer id never handed out before by this room, from blocks persisted in
        ``kafkalite-producer-ids`` (:mod:`kafkalite.metadata.producer_ids`: client-chosen ids in batches
        never move allocation). Raises OSError when the next block cannot be persisted (a full disk: the
        caller answers a retriable error and hands out nothing) and ``ProducerIdsExhausted`` past 2^63-1."""
        return self.producer_ids.allocate(handed_out, in_use)


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
