"""BrokerState: everything handlers share — config, the storage LogManager, topic metadata, coordinators.

What several brokers of one cluster share (the topic catalog, topic and dynamic broker configs, producer-id
allocation, partition leadership) lives in the metadata room, ``kafkalite.metadata.MetadataRoom``
(``state.metadata``); ``state.topics``, ``topics_by_id``, ``pending_topics`` and ``dynamic_broker_configs``
are the room's own dicts and sets, so existing readers see the shared view unchanged. What stays here is the
broker's own: its config and node id, its listeners, its logs, its coordinators, its long-poll waiters.

Topic metadata lives with the logs: each partition directory's ``partition.metadata`` holds the topic id
(storage writes it), so the topic table is rebuilt from ``LogManager.logs()`` at startup. Two small files of
our own sit in the metadata room's dir (a single broker's log dir) next to Kafka's (Kafka ignores plain files there): ``kafkalite-topic-configs.json``
(per-topic config overrides, which Kafka keeps in its metadata quorum) and ``kafkalite-producer-ids`` (the
next unallocated producer-id block, so ids stay unique across restarts).

All methods run on the trio thread unless noted; none of them awaits, so a handler's check-then-mutate
sequence is atomic. Creating and deleting partition directories is blocking work proportional to what a client
asked for, so the admin handlers do it in worker threads (``create_topic_logs``, ``remove_topic_logs``) between
two trio-thread steps: first the name is reserved in ``pending_topics`` (a CreateTopics for it answers
TOPIC_ALREADY_EXISTS, Metadata LEADER_NOT_AVAILABLE, as Kafka does for a topic being created or marked for
deletion), then the topic is published (``register_topic``) or forgotten, and the reservation released.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.config.addresses import Listener
from kafkalite.config.broker import BrokerConfig
from kafkalite.metadata import MetadataRoom, TopicInfo
from kafkalite.metadata.quotas import QUOTAS_FILE
from kafkalite.runtime.gcpolicy import freeze_long_lived
from kafkalite.runtime.supervisor import Supervisor
from kafkalite.state.dynamic_config import DynamicConfigs
from kafkalite.state.placement import Placement, SingleNode
from kafkalite.state.purgatory import Purgatory
from kafkalite.state.topics import TopicManager

if TYPE_CHECKING:
    from kafkalite.authz import Authorizer
    from kafkalite.cluster.runtime import ClusterRuntime
    from kafkalite.coordinator.classic.service import GroupService
    from kafkalite.coordinator.share.service import ShareService
    from kafkalite.coordinator.txn.service import TransactionService
    from kafkalite.faults.plan import FaultPlan
    from kafkalite.metadata.features import FeatureLevels
    from kafkalite.metadata.group_configs import GroupConfigStore
    from kafkalite.metrics.requests import RequestMetrics
    from kafkalite.quotas import QuotaManager
    from kafkalite.registry.service import RegistryService
    from kafkalite.runtime.loopwatch import LoopWatch
    from kafkalite.security.listeners import ListenerSecurity
    from kafkalite.security.scram_store import ScramStore
    from kafkalite.security.tokens.manager import TokenManager
    from kafkalite.server.connection import Connection
    from kafkalite.server.connection_quotas import ConnectionQuotas
    from kafkalite.server.request_memory import RequestMemoryPool
    from kafkalite_storage import LogManager, PartitionLog

log = logging.getLogger(__name__)

#: kafkalite.metadata.quotas.QUOTAS_FILE, named here so a start without quotas does not import kafkalite.quotas
#: (kafkalite/tests/broker/test_lazy_state.py checks the two agree)
_QUOTAS_FILE = "kafkalite-client-quotas.json"


def leader_epoch(plog: PartitionLog | None) -> int:
    """The leader epoch we serve a partition at: the log's latest epoch (a data dir written by Kafka carries
    its own history in leader-epoch-checkpoint), or 0 for a log that has none."""
    epochs = getattr(plog, "leader_epochs", None)
    return max(epochs[-1][0], 0) if epochs else 0


class BrokerState:
    def __init__(self, config: BrokerConfig, logs: LogManager, *, cluster_id: str | None = None,
                 metadata: MetadataRoom | None = None, authorizer: Authorizer | None = None,
                 scram: ScramStore | None = None,
                 make_quotas: Callable[[BrokerState], QuotaManager] | None = None) -> None:
        """``authorizer``, ``scram`` and ``make_quotas`` come from the server (kafkalite.server.serve.open_state),
        which builds them over the metadata room's shared stores; this room imports none of them."""
        self.config = config
        self.logs = logs
        self.node_id = config.node_id
        self.cluster_id: str = cluster_id or getattr(logs, "cluster_id", None) or _random_cluster_id()
        self.log_dir = Path(config.log_dir)
        # the shared metadata room (kafkalite.metadata): a single broker's own, in its log dir; a cluster's
        # brokers share one. Its dicts and sets are the same objects here, so handlers read them at no cost.
        self.metadata = MetadataRoom(self.log_dir) if metadata is None else metadata
        # the topic catalog (a Mapping over the room's) and the topic life cycle (kafkalite.state.topics)
        self.topics = TopicManager(self)
        self.topics_by_id: dict[uuid.UUID, TopicInfo] = self.topics.by_id
        self.cluster: ClusterRuntime | None = None   # kafkalite.cluster's runtime when brokers share the room
        # who leads what, which brokers there are, where coordinators live: this broker alone until a
        # kafkalite.cluster installs its ClusterPlacement (handlers ask only this, never ``cluster``)
        self.placement: Placement = SingleNode(self)
        # the coordinators, set by the server as it starts them (kafkalite.server.serve._start_services); None
        # before. Each may be the server's ``OnFirstUse`` stand-in while its state topic does not exist, which
        # builds the service when first used (it forwards every attribute, and answers the few calls that need no
        # service with the service's signatures)
        self.groups: GroupService | None = None
        self.txns: TransactionService | None = None
        self.shares: ShareService | None = None          # share groups (kafkalite.coordinator.share.service)
        self.listeners: list[Listener] = []        # bound (actual ports)
        self.advertised_listeners: list[Listener] = []
        self.request_pool: RequestMemoryPool | None = None   # queued.max.request.bytes, set by the server
        self.connection_quotas: ConnectionQuotas | None = None   # max.connections(.per.ip), set by the server
        self.supervisor = Supervisor()  # background loops run under it; .tasks holds a record per loop
        # ACLs (kafkalite.authz): None unless authorizer.class.name is set; handlers ask it through kafkalite.authz.
        # One per metadata room, so every broker of a cluster enforces the same ACLs.
        self.authorizer = authorizer
        # client quotas (kafkalite.quotas, the ``quotas`` property): a saved quota file is read now (a bad one
        # fails the start, saved quotas apply to the first request); with none, the manager is built on first use
        self._make_quotas = make_quotas
        if make_quotas is not None and (self.metadata.dir / QUOTAS_FILE).exists():
            self.__dict__["quotas"] = make_quotas(self)
        # SCRAM users (AlterUserScramCredentials), kept in the metadata room; each listener's security (server)
        self.scram = scram
        # delegation tokens (kafkalite.security.tokens), one manager per metadata room; None unless configured
        self.tokens: TokenManager | None = None
        self.listener_security: dict[str, ListenerSecurity] = {}
        # dynamic broker settings (AlterConfigs on BROKER resources) and the topic defaults that follow from them
        self.configs = DynamicConfigs(self)
        self.purgatory = Purgatory()   # long polls parked until an append (kafkalite.state.purgatory)
        # set by the rooms that own them, once the broker runs: request metrics (kafkalite.metrics), the fault
        # plan (kafkalite.faults), the event-loop stall probe (kafkalite.runtime.loopwatch), and the server's
        # live connections (read by the metrics endpoint)
        self.metrics: RequestMetrics | None = None
        self.faults: FaultPlan | None = None
        self.schema_registry: RegistryService | None = None   # the built-in schema registry, when it is served
        self.loopwatch: LoopWatch | None = None
        self.connections: set[Connection] = set()
        # ``await internal_request(api_key, version, request)``: a request this broker sends itself, answered by
        # the same handler a client's would be (set by the server, kafkalite.server.serve; None before). The share
        # group DLQ writes its records with it, as Kafka's broker sends Produce/CreateTopics to the leader.
        self.internal_request: Callable[[int, int, Any], Awaitable[Any]] | None = None
        # names whose partition directories are being created or removed in a worker thread right now
        self.pending_topics: set[str] = self.metadata.pending_topics
        self.topics.load()

    # -- built on first use (start-up does not pay for features a broker may never be asked about) ----------
    @cached_property
    def quotas(self) -> QuotaManager:
        """Client quotas (kafkalite.quotas): ``.active`` is False until a quota is configured. Built at start
        when a quota file is saved, else on first use (the first connection)."""
        if self._make_quotas is None:
            raise RuntimeError("this BrokerState was built without a quota manager factory (make_quotas)")
        return self._make_quotas(self)

    @cached_property
    def group_config_store(self) -> GroupConfigStore:
        """Per-group config overrides (GROUP config resources, kafkalite.metadata.group_configs), persisted; read on
        first use (an unreadable file is ignored with a warning, as it was at start)."""
        # on first use (a group's config is read or altered): not at start
        from kafkalite.metadata.group_configs import GroupConfigStore

        room = self.metadata
        return room.shared("group-configs", lambda: GroupConfigStore(room.dir))

    @cached_property
    def features(self) -> FeatureLevels:
        """Finalized feature levels (UpdateFeatures, kafkalite.metadata.features), persisted; read on first use (the
        first ApiVersions; an unreadable file is ignored with a warning, as it was at start)."""
        # on first use (the first ApiVersions): not at start
        from kafkalite.metadata.features import FeatureLevels

        room = self.metadata
        return room.shared("features", lambda: FeatureLevels(room.dir, self.config.emulate_kafka, self.node_id))

    # -- addresses -----------------------------------------------------------------------------------
    @property
    def advertised(self) -> tuple[str, int]:
        lst = self.advertised_for(None)
        return lst.host, lst.port

    def advertised_for(self, listener_name: str | None) -> Listener:
        """The address clients should use, for the listener they connected through."""
        candidates = self.advertised_listeners or self.listeners
        if not candidates:
            return Listener("PLAINTEXT", "127.0.0.1", 9092)
        for lst in candidates:
            if lst.name == listener_name:
                return lst
        return candidates[0]

    def group_configs(self, group_id: str) -> Mapping[str, str]:
        """A group's config overrides (consumer.* / share.*), clamped into the broker's bounds: the hook the
        KIP-848 and share coordinators read their per-group session timeouts, lock durations etc. through."""
        if not self.group_config_store.get(group_id):
            return {}
        return self.group_config_store.effective(self.configs.effective(), group_id)

    def leader_epoch_of(self, topic: str, partition: int) -> int:
        """The epoch we serve a partition at (see ``leader_epoch``), without loading a lazily opened log."""
        return max(self.logs.leader_epoch_of(topic, partition), 0)

    async def ensure_loaded(self, keys: Iterable[tuple[str, int]]) -> None:
        """Load, in a worker thread, those partitions storage registered at start but has not loaded yet
        (after a clean start logs load on first use; a request naming thousands must not load them on the
        event loop)."""
        pending = self.logs.unloaded(list(keys))
        if pending:
            await trio.to_thread.run_sync(self.logs.load, pending)
            if len(pending) > 100:
                freeze_long_lived()

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get_log(topic, partition)

    def leads(self, topic: str, partition: int) -> bool:
        """Whether this broker leads the partition (always, without a cluster)."""
        return self.placement.leads(topic, partition)

    # -- producer ids ----------------------------------------------------------------------------------
    def allocate_producer_id(self) -> int:
        """A producer id never handed out before (the metadata room reserves them in persisted blocks; see
        :mod:`kafkalite.metadata.producer_ids`). Raises OSError when the next block cannot be persisted and
        ``ProducerIdsExhausted`` when Kafka's int64 range is used up."""
        return self.metadata.allocate_producer_id(self._producer_ids_handed_out, self._producer_ids_in_use)

    def _producer_ids_handed_out(self) -> list[int]:
        """Producer ids the transaction coordinators hold: ids kafkalite handed out (clients cannot write
        ``__transaction_state``); what rebuilds allocation when its files are lost."""
        out: list[int] = []
        for state in self.placement.states():
            coordinator = getattr(state.txns, "coordinator", None)
            for meta in getattr(coordinator, "txns", {}).values():
                out.append(meta.producer_id)
                out.append(meta.last_producer_id)
        return out

    def _producer_ids_in_use(self) -> set[int]:
        """Producer ids in any partition's producer state (client-chosen ones included): allocation only
        steps around them, so a live producer's id is not handed to another."""
        out: set[int] = set()
        for state in self.placement.states():
            for _k, plog in state.logs.logs():
                producers = getattr(getattr(plog, "producer_state", None), "producers", None)
                if producers:
                    out.update(producers)
        return out

    # -- append notification (Fetch long polls) ------------------------------------------------------
    def notify_append(self, topic: str, partition: int) -> None:
        self.placement.appended(topic, partition)   # in a cluster the high watermark may move
        self.purgatory.wake(topic, partition)


def _random_cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
