"""What a stopped kafkalite data directory holds, read without starting a broker.

Kafka's own files (partition directories, offset checkpoints, ``.kafka_cleanshutdown``, ``meta.properties``) are
read as Kafka would; kafkalite's ``kafkalite-*`` files through the rooms that own them (the metadata room's topic,
broker, quota and group configs and producer-id blocks; the authorizer's ACLs; the SCRAM store; delegation tokens). Nothing here
writes to the data directory: :func:`lock` takes the broker's own ``.lock`` (flock, as ``LogManager.open`` does) so
that neither kafkalite nor Kafka can start on the directory while it is read, and so that a directory a running
broker holds is refused.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.authz.acl import AclBinding
from kafkalite.authz.authorizer import Authorizer
from kafkalite.coordinator.classic.records import RecordDecodeError, iter_records
from kafkalite.coordinator.txn.records import TXN_STATE_TOPIC, decode_txn_key, decode_txn_value
from kafkalite.metadata import INTERNAL_TOPICS, METADATA_TOPIC, MetadataRoom
from kafkalite.metadata.group_configs import GroupConfigStore
from kafkalite.metadata.producer_ids import PRODUCER_IDS_COPY, PRODUCER_IDS_FILE, read_block_start
from kafkalite.metadata.quotas import Entity, QuotaStore
from kafkalite.security.scram import ScramCredential
from kafkalite.security.scram_store import ScramStore
from kafkalite.security.tokens import FILE_NAME as TOKENS_FILE
from kafkalite.security.tokens.manager import TokenInfo, TokenStoreError, read_tokens
from kafkalite_storage.checkpoints import (
    read_leader_epochs,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
    uuid_from_base64,
)
from kafkalite_storage.manager import CLEAN_SHUTDOWN, LEADER_EPOCHS, META, parse_partition_dir
from kafkalite_storage.producer_state import ProducerStateManager

SHARE_STATE_TOPIC = "__share_group_state"
#: TransactionState ids of a transaction that is not finished (Ongoing, PrepareCommit, PrepareAbort,
#: PrepareEpochFence)
OPEN_TXN_STATES = {1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 7: "PrepareEpochFence"}
_SNAPSHOT_RE = re.compile(r"^(\d{20})\.snapshot$")


class EjectError(Exception):
    """The data directory cannot be ejected as it is; the message says why and what to do."""


@dataclass(slots=True)
class PartitionDir:
    name: str                 # <topic>-<partition>
    partition: int
    files: list[str]          # regular files in it
    leader_epoch: int         # the latest epoch of its leader-epoch-checkpoint (0 if none)


@dataclass(slots=True)
class TopicSource:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionDir] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return max(self.partitions) + 1 if self.partitions else 0


@dataclass(slots=True)
class Source:
    data_dir: Path
    cluster_id: str
    node_id: int
    directory_id: uuid.UUID | None
    clean: bool
    topics: dict[str, TopicSource]
    topic_configs: dict[str, dict[str, str]]
    broker_configs: dict[str, dict[str, str]]
    group_configs: dict[str, dict[str, str]]
    acls: list[AclBinding]
    scram: dict[str, dict[str, ScramCredential]]
    quotas: dict[Entity, dict[str, float]]
    next_producer_id: int
    open_transactions: list[tuple[str, str]]      # (transactional id, state name)
    skipped: list[str]                             # directory entries left behind, with the reason
    tokens: list[TokenInfo] = field(default_factory=list)   # delegation tokens (kafkalite.security.tokens)


def lock(data_dir: Path) -> int:
    """Take the data directory's ``.lock`` (exclusive, non-blocking); the descriptor holds it until closed.
    Raises EjectError when a broker holds it."""
    path = data_dir / ".lock"
    if not path.exists() and not (data_dir / META).exists():
        raise EjectError(f"{data_dir} is not a kafkalite data directory (no meta.properties)")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise EjectError(f"{data_dir} is in use: a broker (kafkalite or Kafka) holds its .lock. Stop it "
                             "first (SIGTERM, so it shuts down cleanly), then eject.") from None
        raise
    return fd


def _meta(data_dir: Path) -> tuple[str, int, uuid.UUID | None]:
    meta = read_properties(str(data_dir / META))
    cluster = meta.get("cluster.id", "").strip()
    node = (meta.get("node.id") or meta.get("broker.id") or "").strip()
    if not cluster or not node.lstrip("-").isdigit():
        raise EjectError(f"{data_dir / META} has no cluster.id or node.id")
    dir_id = None
    if meta.get("directory.id"):
        try:
            dir_id = uuid_from_base64(meta["directory.id"])
        except ValueError:
            dir_id = None
    return cluster, int(node), dir_id


def _partition_dir(path: Path, partition: int) -> tuple[PartitionDir, uuid.UUID | None]:
    with os.scandir(path) as it:
        files = sorted(e.name for e in it if e.is_file(follow_symlinks=False))
    epochs = read_leader_epochs(str(path / "leader-epoch-checkpoint")) or []
    epoch = max((e for e, _o in epochs), default=0)
    topic_id = read_partition_metadata(str(path / "partition.metadata"))
    return PartitionDir(path.name, partition, files, epoch), topic_id


def _scan_topics(data_dir: Path, skipped: list[str]) -> dict[str, TopicSource]:
    saved_epochs: dict[tuple[str, int], int] = {}
    if (data_dir / LEADER_EPOCHS).exists():
        try:
            saved_epochs = read_offset_checkpoint(str(data_dir / LEADER_EPOCHS))
        except ValueError:
            saved_epochs = {}
    topics: dict[str, TopicSource] = {}
    ids: dict[str, set[uuid.UUID]] = {}
    with os.scandir(data_dir) as it:
        entries = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    for name in entries:
        if name.endswith(("-delete", "-future", "-stray")):
            skipped.append(f"{name} (a directory Kafka {'removes' if name.endswith('-delete') else 'leaves alone'})")
            continue
        if name.startswith("broker-") and name[7:].isdigit() and (data_dir / name / META).exists():
            raise EjectError(f"{data_dir} is the data directory of a kafkalite cluster (--brokers N): eject "
                             "takes one broker's data directory")
        tp = parse_partition_dir(name)
        if tp is None:
            skipped.append(f"{name} (not a partition directory)")
            continue
        topic, p = tp
        if topic == METADATA_TOPIC:
            skipped.append(f"{name} (kafkalite keeps no KRaft metadata log; eject writes a new one)")
            continue
        pdir, topic_id = _partition_dir(data_dir / name, p)
        pdir.leader_epoch = max(pdir.leader_epoch, saved_epochs.get(tp, 0))
        t = topics.get(topic)
        if t is None:
            t = topics[topic] = TopicSource(topic, uuid.UUID(int=0))
        t.partitions[p] = pdir
        if topic_id is not None:
            ids.setdefault(topic, set()).add(topic_id)
    for name, t in topics.items():
        found = ids.get(name, set())
        if len(found) > 1:
            raise EjectError(f"the partitions of topic {name} name different topic ids in partition.metadata "
                             f"({', '.join(sorted(str(u) for u in found))}); Kafka would take all but one for "
                             "stray logs")
        t.topic_id = next(iter(found)) if found else uuid.uuid4()
    return topics


def _open_transactions(data_dir: Path, topic: TopicSource | None) -> tuple[list[tuple[str, str]], int]:
    """The unfinished transactions of ``__transaction_state`` and the highest producer id it names."""
    if topic is None:
        return [], -1
    latest: dict[str, tuple[int, int]] = {}      # transactional id -> (status, producer id)
    top = -1
    for pdir in topic.partitions.values():
        for f in pdir.files:
            if not f.endswith(".log"):
                continue
            data = (data_dir / pdir.name / f).read_bytes()
            for _off, key, value in iter_records(data):
                try:
                    txn_id = decode_txn_key(key)
                except RecordDecodeError:
                    continue
                if value is None:
                    latest.pop(txn_id, None)
                    continue
                try:
                    v = decode_txn_value(value)
                except RecordDecodeError:
                    continue
                latest[txn_id] = (v.status, v.producer_id)
                top = max(top, v.producer_id)
    open_ = sorted((t, OPEN_TXN_STATES[s]) for t, (s, _pid) in latest.items() if s in OPEN_TXN_STATES)
    return open_, top


def _highest_producer_id_in_logs(data_dir: Path, topics: dict[str, TopicSource]) -> int:
    """The highest producer id in any partition's newest producer-state snapshot."""
    top = -1
    for t in topics.values():
        for pdir in t.partitions.values():
            snaps = [f for f in pdir.files if _SNAPSHOT_RE.match(f)]
            if not snaps:
                continue
            try:
                entries = ProducerStateManager.decode_snapshot((data_dir / pdir.name / max(snaps)).read_bytes())
            except (OSError, ValueError):
                continue
            top = max([top, *(e.producer_id for e in entries)])
    return top


def read(data_dir: Path) -> Source:
    """Everything eject carries, from a data directory whose ``.lock`` the caller holds."""
    cluster_id, node_id, dir_id = _meta(data_dir)
    skipped: list[str] = []
    topics = _scan_topics(data_dir, skipped)
    room = MetadataRoom(data_dir)
    topic_configs = {n: c for n, c in room.saved_topic_configs().items() if n in topics}
    groups = GroupConfigStore(data_dir)
    try:
        acls = Authorizer(data_dir).acls()
        quotas = QuotaStore(data_dir).entries
    except RuntimeError as exc:
        raise EjectError(str(exc)) from None
    try:
        scram = ScramStore(data_dir).users
    except Exception as exc:   # ScramStoreError: a damaged credentials file
        raise EjectError(str(exc)) from None
    try:
        tokens = sorted(read_tokens(Path(room.dir) / TOKENS_FILE).values(), key=lambda t: t.token_id)
    except TokenStoreError as exc:
        raise EjectError(str(exc)) from None
    open_txns, txn_top = _open_transactions(data_dir, topics.get(TXN_STATE_TOPIC))
    starts = [read_block_start(data_dir / PRODUCER_IDS_FILE), read_block_start(data_dir / PRODUCER_IDS_COPY)]
    next_pid = max([0, *(s for s in starts if s is not None), txn_top + 1,
                    _highest_producer_id_in_logs(data_dir, topics) + 1])
    return Source(
        data_dir=data_dir, cluster_id=cluster_id, node_id=node_id, directory_id=dir_id,
        clean=(data_dir / CLEAN_SHUTDOWN).exists(), topics=topics, topic_configs=topic_configs,
        broker_configs=dict(room.dynamic_broker_configs), group_configs=groups.all(),
        acls=acls, scram=scram, quotas=dict(quotas), next_producer_id=next_pid, open_transactions=open_txns,
        skipped=skipped, tokens=tokens)


def internal(name: str) -> bool:
    return name in INTERNAL_TOPICS
