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
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkalite.config.addresses import Listener
from kafkalite.config.broker import BrokerConfig
from kafkalite.config.topic_defs import BROKER_TO_TOPIC
from kafkalite.metadata import INTERNAL_TOPICS, MetadataRoom, TopicInfo
from kafkalite.metadata.quotas import QUOTAS_FILE
from kafkalite.runtime.gcpolicy import freeze_long_lived
from kafkalite.runtime.supervisor import Supervisor
from kafkalite.state.placement import Placement, SingleNode
from kafkalite.state.purgatory import Purgatory

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
    from kafkalite.server.connection import Connection
    from kafkalite.server.connection_quotas import ConnectionQuotas
    from kafkalite.server.request_memory import RequestMemoryPool
    from kafkalite_storage import LogConfig, LogManager, PartitionLog

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
        self.topics: dict[str, TopicInfo] = self.metadata.topics
        self.topics_by_id: dict[uuid.UUID, TopicInfo] = self.metadata.topics_by_id
        self.cluster: ClusterRuntime | None = None   # kafkalite.cluster's runtime when brokers share the room
        # who leads what, which brokers there are, where coordinators live: this broker alone until a
        # kafkalite.cluster installs its ClusterPlacement (handlers ask only this, never ``cluster``)
        self.placement: Placement = SingleNode(self)
        # the coordinators, set by the server as it starts them (kafkalite.server.serve._start_services); None
        # before. ``shares`` may be the server's ``OnFirstUse`` stand-in, which builds the ShareService when first
        # used (it forwards every attribute, and answers the calls made before that with the service's signatures)
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
        self.listener_security: dict[str, ListenerSecurity] = {}
        # dynamic broker settings by resource name ("" = cluster default, "<node id>" = this broker), persisted
        self.dynamic_broker_configs: dict[str, dict[str, str]] = self.metadata.dynamic_broker_configs
        self.broker_config_overrides: dict[str, str] = self._merged_dynamic()
        self.purgatory = Purgatory()   # long polls parked until an append (kafkalite.state.purgatory)
        # set by the rooms that own them, once the broker runs: request metrics (kafkalite.metrics), the fault
        # plan (kafkalite.faults), the event-loop stall probe (kafkalite.runtime.loopwatch), and the server's
        # live connections (read by the metrics endpoint)
        self.metrics: RequestMetrics | None = None
        self.faults: FaultPlan | None = None
        self.schema_registry: RegistryService | None = None   # the built-in schema registry, when it is served
        self.loopwatch: LoopWatch | None = None
        self.connections: set[Connection] = set()
        # names whose partition directories are being created or removed in a worker thread right now
        self.pending_topics: set[str] = self.metadata.pending_topics
        self.default_log_config = self._default_log_config()
        self._load_topics()

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
        from kafkalite.metadata.group_configs import GroupConfigStore

        room = self.metadata
        return room.shared("group-configs", lambda: GroupConfigStore(room.dir))

    @cached_property
    def features(self) -> FeatureLevels:
        """Finalized feature levels (UpdateFeatures, kafkalite.metadata.features), persisted; read on first use (the
        first ApiVersions; an unreadable file is ignored with a warning, as it was at start)."""
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
        return self.group_config_store.effective(self.effective_config(), group_id)

    # -- topics --------------------------------------------------------------------------------------
    def _merged_dynamic(self) -> dict[str, str]:
        return self.metadata.merged_dynamic(self.node_id)

    def effective_config(self, dynamic: Mapping[str, str] | None = None) -> BrokerConfig:
        """Static settings with the dynamic ones (AlterConfigs on BROKER resources) on top."""
        dyn = self.broker_config_overrides if dynamic is None else dynamic
        return self.config.with_overrides(dyn) if dyn else self.config

    def _default_log_config(self, config: BrokerConfig | None = None) -> LogConfig:
        from kafkalite_storage import LogConfig

        cfg = self.effective_config() if config is None else config
        props: dict[str, str] = {}
        for broker_key, topic_key in BROKER_TO_TOPIC.items():
            value = cfg.get_str(broker_key)
            if value:
                props[topic_key] = value
        props["retention.ms"] = str(cfg.retention_ms())
        props["segment.ms"] = str(cfg.roll_ms())
        return LogConfig.from_props(props)

    def check_broker_configs(self, resource: str, values: Mapping[str, str]) -> None:
        """Raise ValueError unless ``values`` may become the dynamic settings of ``resource``."""
        from kafkalite_storage import LogConfig

        trial = dict(self.dynamic_broker_configs)
        trial[resource] = dict(values)
        merged = self.metadata.merged_dynamic(self.node_id, trial)
        default = self._default_log_config(self.effective_config(merged))
        for info in self.topics.values():
            LogConfig.from_props(dict(info.config), base=default)

    def set_broker_configs(self, resource: str, values: Mapping[str, str]) -> None:
        """Replace the dynamic settings of ``resource`` ("" or our node id): new topic defaults reach every
        log at once and persist across restarts. Callers check first (``check_broker_configs``)."""
        self.check_broker_configs(resource, values)
        if values:
            self.dynamic_broker_configs[resource] = dict(values)
        else:
            self.dynamic_broker_configs.pop(resource, None)
        for state in self._room_states():
            state.refresh_dynamic_configs()
        self.metadata.write_broker_configs()

    def refresh_dynamic_configs(self) -> None:
        """The shared dynamic settings changed: recompute this broker's view and its logs' configs."""
        self.broker_config_overrides = self._merged_dynamic()
        self.default_log_config = self._default_log_config()
        for (topic, _p), plog in self._loaded_logs():   # logs loaded later take config_for's
            info = self.topics.get(topic)
            if info is not None:
                plog.update_config(self.log_config_for(info.config))

    def _room_states(self) -> list[BrokerState]:
        """Every running broker sharing this metadata room (just this one without a cluster)."""
        return self.placement.states()

    def log_config_for(self, overrides: Mapping[str, str]) -> LogConfig:
        from kafkalite_storage import LogConfig

        return LogConfig.from_props(dict(overrides), base=self.default_log_config)

    def _load_topics(self) -> None:
        saved = self.metadata.saved_topic_configs()
        counts: dict[str, int] = {}
        ids: dict[str, uuid.UUID] = {}
        # storage loads logs lazily: names from directories, ids from one each
        for topic, partition in self.logs.partitions():
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        for topic, n in counts.items():
            for p in range(n):
                tid = self.logs.topic_id_of(topic, p)
                if tid is not None and tid != uuid.UUID(int=0):
                    ids[topic] = tid
                    break
        for (topic, partition), plog in self._loaded_logs():
            counts[topic] = max(counts.get(topic, 0), partition + 1)
            tid = getattr(plog, "topic_id", None)
            if tid is not None and tid != uuid.UUID(int=0):
                ids[topic] = tid
        for topic, n in counts.items():
            known = self.topics.get(topic)   # another broker of the room loaded it first
            if known is not None:
                known.partitions = max(known.partitions, n)
                continue
            if self.metadata.catalog_complete:   # a broker rejoining: a topic deleted meanwhile stays deleted
                continue
            info = TopicInfo(topic, ids.get(topic) or uuid.uuid4(), n, dict(saved.get(topic, {})),
                             internal=topic in INTERNAL_TOPICS)
            self.metadata.add_topic(info)
        for (topic, _p), plog in self._loaded_logs():   # (lazily loaded logs: loaded after a clean stop only)
            if getattr(plog, "topic_id", 0) is None:   # partition.metadata was missing or damaged: rewrite it
                try:
                    plog.set_topic_id(self.topics[topic].topic_id)
                except OSError as exc:
                    log.warning("could not rewrite partition.metadata of %s: %s", plog, exc)
        # storage opened every log with bare defaults: give each its topic's effective config again
        effective: dict[str, LogConfig] = {}

        def config_for(topic: str) -> LogConfig:
            if topic not in effective:
                info = self.topics.get(topic)
                try:
                    effective[topic] = self.log_config_for(info.config if info is not None else {})
                except ValueError as exc:
                    log.warning("ignoring invalid saved configs of topic %s: %s", topic, exc)
                    effective[topic] = self.default_log_config
            return effective[topic]

        for (topic, _p), plog in self._loaded_logs():
            plog.update_config(config_for(topic))

        def current_config_for(topic: str) -> LogConfig:   # for logs storage loads later (lazily)
            info = self.topics.get(topic)
            try:
                return self.log_config_for(info.config if info is not None else {})
            except ValueError:
                return self.default_log_config

        self.logs.config_for = current_config_for

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

    def _loaded_logs(self) -> Iterable[tuple[tuple[str, int], PartitionLog]]:
        return self.logs.loaded_logs()

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get_log(topic, partition)

    def leads(self, topic: str, partition: int) -> bool:
        """Whether this broker leads the partition (always, without a cluster)."""
        return self.placement.leads(topic, partition)

    def create_topic(self, name: str, partitions: int, config: Mapping[str, str] | None = None, *,
                     topic_id: uuid.UUID | None = None) -> TopicInfo:
        """Create a topic and its partition logs (callers validate first). Raises ValueError on bad config,
        StorageError when a partition cannot be created (then none of this topic's logs is left)."""
        overrides = {k: str(v) for k, v in (config or {}).items() if v is not None}
        tid = topic_id or uuid.uuid4()
        self.create_topic_logs(name, partitions, overrides, tid)
        return self.register_topic(name, partitions, overrides, tid)

    def create_topic_logs(self, name: str, partitions: int, overrides: Mapping[str, str], topic_id: uuid.UUID,
                          start: int = 0) -> None:
        """Create partition logs ``start..partitions-1`` (blocking; safe in a worker thread while the name
        is reserved). All or nothing: if one fails, the ones made here are removed and the error raised.
        In a cluster every replica broker gets the log (``kafkalite.cluster``)."""
        if self.placement.create_topic_logs(name, partitions, overrides, topic_id, start):
            return   # the cluster made every replica's log
        log_config = self.log_config_for(overrides)
        made: list[int] = []
        try:
            for p in range(start, partitions):
                self.logs.create_log(name, p, topic_id, log_config)
                made.append(p)
        except BaseException:
            for p in made:
                try:
                    self.logs.delete_log(name, p)
                except Exception:
                    log.exception("could not remove partition %s-%d after a failed creation", name, p)
            raise

    def register_topic(self, name: str, partitions: int, overrides: Mapping[str, str], topic_id: uuid.UUID, *,
                       write_configs: bool = True) -> TopicInfo:
        """Publish a topic whose logs exist (trio thread)."""
        info = self.metadata.add_topic(
            TopicInfo(name, topic_id, partitions, dict(overrides), internal=name in INTERNAL_TOPICS))
        self.placement.register_partitions(name, partitions)   # replicas, ISR and leaders of its partitions
        if overrides and write_configs:
            self._write_topic_configs()
        log.info("created topic %s (%d partitions, id %s)", name, partitions, info.topic_id)
        return info

    def ensure_topic(self, name: str, partitions: int | None = None,
                     config: Mapping[str, str] | None = None) -> TopicInfo:
        """The topic, created with the defaults if it does not exist (internal topics use this too)."""
        info = self.topics.get(name)
        if info is None:
            info = self.create_topic(name, partitions or self.config.num_partitions, config)
        return info

    def add_partitions(self, name: str, total: int) -> None:
        info = self.topics[name]
        old = info.partitions
        self.create_topic_logs(name, total, info.config, info.topic_id, old)
        info.partitions = total
        self.placement.register_partitions(name, total, old)

    def delete_topic(self, name: str) -> None:
        for plog in self.unregister_topic(name):
            self.logs.remove_detached(plog)

    def unregister_topic(self, name: str, *, write_configs: bool = True) -> list[PartitionLog | str]:
        """Forget a topic (trio thread): wake its long polls, drop its committed offsets, and return its
        logs, detached from storage, for ``remove_topic_logs`` (blocking) to delete."""
        info = self.forget_topic(name)
        return self.detach_topics([name], write_configs=write_configs and bool(info.config))[name]

    def forget_topic(self, name: str) -> TopicInfo:
        """The first half of ``unregister_topic``: the topic is unknown from now on (its long polls woken);
        its logs stay in storage until ``detach_topics``. A deletion of many topics forgets them one by one
        in slices and detaches them all at once."""
        info = self.metadata.remove_topic(name)
        for p in range(info.partitions):
            self.notify_append(name, p)
        if self.shares is not None:
            self.shares.on_topic_deleted(info.topic_id)   # share groups' delivery state goes with the topic
        log.info("deleted topic %s", name)
        return info

    def detach_topics(self, names: list[str], *, write_configs: bool = True) -> dict[str, list[PartitionLog | str]]:
        """The second half: take the forgotten topics' logs out of storage (one pass over the partitions),
        drop their committed offsets (as Kafka does), and persist the topic configs."""
        out = self.logs.detach_topics(names)
        self.placement.detach_elsewhere(names)   # the other brokers' replicas, in a cluster
        if self.groups is not None:
            self.groups.on_topics_deleted(list(names))
        if write_configs:
            self._write_topic_configs()
        return out

    def remove_topic_logs(self, plogs: list[PartitionLog | str]) -> None:
        """Delete detached partition directories (blocking: a worker thread)."""
        for plog in plogs:
            self.logs.remove_detached(plog)

    def set_topic_config(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's overrides (AlterConfigs semantics); applies to its logs if storage allows."""
        info = self.topics[name]
        log_config = self.log_config_for(overrides)
        info.config = dict(overrides)
        for state in self._room_states():
            for p in range(info.partitions):
                plog = state.logs.get_log(name, p)
                setter = getattr(plog, "update_config", None)
                if setter is not None:
                    setter(log_config)
        self._write_topic_configs()

    def _write_topic_configs(self) -> None:
        self.metadata.write_topic_configs()

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
        for state in self._room_states():
            coordinator = getattr(state.txns, "coordinator", None)
            for meta in getattr(coordinator, "txns", {}).values():
                out.append(meta.producer_id)
                out.append(meta.last_producer_id)
        return out

    def _producer_ids_in_use(self) -> set[int]:
        """Producer ids in any partition's producer state (client-chosen ones included): allocation only
        steps around them, so a live producer's id is not handed to another."""
        out: set[int] = set()
        for state in self._room_states():
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
