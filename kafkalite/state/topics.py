"""The topic manager: this broker's view of the topic catalog, and the topic life cycle (Kafka splits it between
``ReplicationControlManager`` on the controller and ``ReplicaManager``/``LogManager`` on each broker).

``state.topics`` is a ``Mapping[str, TopicInfo]`` over the shared metadata room's catalog, so readers write
``state.topics.get(name)`` and ``name in state.topics`` as before; the life cycle is its methods:

- ``load()`` at start: the catalog from the partition directories (names, counts, topic ids from
  ``partition.metadata``) and the saved per-topic overrides, each log given its topic's effective config;
- ``create`` = ``create_logs`` (blocking: a worker thread while the name is reserved in ``pending``) +
  ``register`` (trio thread: the topic is published); ``ensure`` creates with the defaults when absent;
- ``add_partitions``; ``set_config`` (AlterConfigs semantics, to every broker of the room);
- deletion in two halves: ``forget`` (unknown from now on, long polls woken) and ``detach`` (logs out of storage,
  committed offsets dropped), then ``remove_logs`` (blocking) deletes the directories; ``unregister`` and ``delete``
  combine them.

All of it runs on the trio thread unless noted; nothing awaits, so a handler's check-then-mutate is atomic. In a
cluster, replicas, leaders and the other brokers' logs follow through ``state.placement``.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import TYPE_CHECKING

from kafkalite.metadata import INTERNAL_TOPICS, TopicInfo

if TYPE_CHECKING:
    from kafkalite.state import BrokerState
    from kafkalite_storage import LogConfig, PartitionLog

log = logging.getLogger("kafkalite.state")


class TopicManager(Mapping[str, TopicInfo]):
    def __init__(self, state: BrokerState) -> None:
        self._state = state
        room = state.metadata
        self._topics: dict[str, TopicInfo] = room.topics
        #: the same topics by id (shared with the room)
        self.by_id: dict[uuid.UUID, TopicInfo] = room.topics_by_id
        #: names whose partition directories are being created or removed in a worker thread right now
        self.pending: set[str] = room.pending_topics

    # -- the Mapping (the room's dict, read at dict speed where it matters) ------------------------------
    def __getitem__(self, name: str) -> TopicInfo:
        return self._topics[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)

    def __contains__(self, name: object) -> bool:
        return name in self._topics

    def get(self, name: str, default: TopicInfo | None = None) -> TopicInfo | None:  # type: ignore[override]
        return self._topics.get(name, default)

    def keys(self) -> KeysView[str]:
        return self._topics.keys()

    def values(self) -> ValuesView[TopicInfo]:
        return self._topics.values()

    def items(self) -> ItemsView[str, TopicInfo]:
        return self._topics.items()

    # -- start --------------------------------------------------------------------------------------
    def load(self) -> None:
        """The catalog from this broker's partition directories (a cluster's other brokers may have added
        topics to the room first), each loaded log given its topic's effective config, and the hook storage
        asks for the config of logs it loads later."""
        st = self._state
        logs, room, configs = st.logs, st.metadata, st.configs
        saved = room.saved_topic_configs()
        counts: dict[str, int] = {}
        ids: dict[str, uuid.UUID] = {}
        # storage loads logs lazily: names from directories, ids from one each
        for topic, partition in logs.partitions():
            counts[topic] = max(counts.get(topic, 0), partition + 1)
        for topic, n in counts.items():
            for p in range(n):
                tid = logs.topic_id_of(topic, p)
                if tid is not None and tid != uuid.UUID(int=0):
                    ids[topic] = tid
                    break
        for (topic, partition), plog in logs.loaded_logs():
            counts[topic] = max(counts.get(topic, 0), partition + 1)
            tid = getattr(plog, "topic_id", None)
            if tid is not None and tid != uuid.UUID(int=0):
                ids[topic] = tid
        for topic, n in counts.items():
            known = self._topics.get(topic)   # another broker of the room loaded it first
            if known is not None:
                known.partitions = max(known.partitions, n)
                continue
            if room.catalog_complete:   # a broker rejoining: a topic deleted meanwhile stays deleted
                continue
            info = TopicInfo(topic, ids.get(topic) or uuid.uuid4(), n, dict(saved.get(topic, {})),
                             internal=topic in INTERNAL_TOPICS)
            room.add_topic(info)
        for (topic, _p), plog in logs.loaded_logs():   # (lazily loaded logs: loaded after a clean stop only)
            if getattr(plog, "topic_id", 0) is None:   # partition.metadata was missing or damaged: rewrite it
                try:
                    plog.set_topic_id(self._topics[topic].topic_id)
                except OSError as exc:
                    log.warning("could not rewrite partition.metadata of %s: %s", plog, exc)
        # storage opened every log with bare defaults: give each its topic's effective config again
        effective: dict[str, LogConfig] = {}

        def config_for(topic: str) -> LogConfig:
            if topic not in effective:
                info = self._topics.get(topic)
                try:
                    effective[topic] = configs.log_config_for(info.config if info is not None else {})
                except ValueError as exc:
                    log.warning("ignoring invalid saved configs of topic %s: %s", topic, exc)
                    effective[topic] = configs.default_log_config
            return effective[topic]

        for (topic, _p), plog in logs.loaded_logs():
            plog.update_config(config_for(topic))

        def current_config_for(topic: str) -> LogConfig:   # for logs storage loads later (lazily)
            info = self._topics.get(topic)
            try:
                return configs.log_config_for(info.config if info is not None else {})
            except ValueError:
                return configs.default_log_config

        logs.config_for = current_config_for

    # -- creation -----------------------------------------------------------------------------------
    def create(self, name: str, partitions: int, config: Mapping[str, str] | None = None, *,
               topic_id: uuid.UUID | None = None) -> TopicInfo:
        """Create a topic and its partition logs (callers validate first). Raises ValueError on bad config,
        StorageError when a partition cannot be created (then none of this topic's logs is left)."""
        overrides = {k: str(v) for k, v in (config or {}).items() if v is not None}
        tid = topic_id or uuid.uuid4()
        self.create_logs(name, partitions, overrides, tid)
        return self.register(name, partitions, overrides, tid)

    def create_logs(self, name: str, partitions: int, overrides: Mapping[str, str], topic_id: uuid.UUID,
                    start: int = 0) -> None:
        """Create partition logs ``start..partitions-1`` (blocking; safe in a worker thread while the name
        is reserved). All or nothing: if one fails, the ones made here are removed and the error raised.
        In a cluster every replica broker gets the log (``kafkalite.cluster``)."""
        st = self._state
        if st.placement.create_topic_logs(name, partitions, overrides, topic_id, start):
            return   # the cluster made every replica's log
        log_config = st.configs.log_config_for(overrides)
        made: list[int] = []
        try:
            for p in range(start, partitions):
                st.logs.create_log(name, p, topic_id, log_config)
                made.append(p)
        except BaseException:
            for p in made:
                try:
                    st.logs.delete_log(name, p)
                except Exception:
                    log.exception("could not remove partition %s-%d after a failed creation", name, p)
            raise

    def register(self, name: str, partitions: int, overrides: Mapping[str, str], topic_id: uuid.UUID, *,
                 write_configs: bool = True) -> TopicInfo:
        """Publish a topic whose logs exist (trio thread)."""
        st = self._state
        info = st.metadata.add_topic(
            TopicInfo(name, topic_id, partitions, dict(overrides), internal=name in INTERNAL_TOPICS))
        st.placement.register_partitions(name, partitions)   # replicas, ISR and leaders of its partitions
        if overrides and write_configs:
            st.metadata.write_topic_configs()
        log.info("created topic %s (%d partitions, id %s)", name, partitions, info.topic_id)
        return info

    def ensure(self, name: str, partitions: int | None = None,
               config: Mapping[str, str] | None = None) -> TopicInfo:
        """The topic, created with the defaults if it does not exist (internal topics use this too)."""
        info = self._topics.get(name)
        if info is None:
            info = self.create(name, partitions or self._state.config.num_partitions, config)
        return info

    def add_partitions(self, name: str, total: int) -> None:
        info = self._topics[name]
        old = info.partitions
        self.create_logs(name, total, info.config, info.topic_id, old)
        info.partitions = total
        self._state.placement.register_partitions(name, total, old)

    # -- configs -------------------------------------------------------------------------------------
    def set_config(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's overrides (AlterConfigs semantics); applies to its logs on every broker."""
        st = self._state
        info = self._topics[name]
        log_config = st.configs.log_config_for(overrides)
        info.config = dict(overrides)
        for state in st.placement.states():
            for p in range(info.partitions):
                plog = state.logs.get_log(name, p)
                setter = getattr(plog, "update_config", None)
                if setter is not None:
                    setter(log_config)
        st.metadata.write_topic_configs()

    # -- deletion -----------------------------------------------------------------------------------
    def delete(self, name: str) -> None:
        for plog in self.unregister(name):
            self._state.logs.remove_detached(plog)

    def unregister(self, name: str, *, write_configs: bool = True) -> list[PartitionLog | str]:
        """Forget a topic (trio thread): wake its long polls, drop its committed offsets, and return its
        logs, detached from storage, for ``remove_logs`` (blocking) to delete."""
        info = self.forget(name)
        return self.detach([name], write_configs=write_configs and bool(info.config))[name]

    def forget(self, name: str) -> TopicInfo:
        """The first half of ``unregister``: the topic is unknown from now on (its long polls woken); its logs
        stay in storage until ``detach``. A deletion of many topics forgets them one by one in slices and
        detaches them all at once."""
        st = self._state
        info = st.metadata.remove_topic(name)
        for p in range(info.partitions):
            st.notify_append(name, p)
        if st.shares is not None:
            st.shares.on_topic_deleted(info.topic_id)   # share groups' delivery state goes with the topic
        log.info("deleted topic %s", name)
        return info

    def detach(self, names: list[str], *, write_configs: bool = True) -> dict[str, list[PartitionLog | str]]:
        """The second half: take the forgotten topics' logs out of storage (one pass over the partitions),
        drop their committed offsets (as Kafka does), and persist the topic configs."""
        st = self._state
        out = st.logs.detach_topics(names)
        st.placement.detach_elsewhere(names)   # the other brokers' replicas, in a cluster
        if st.groups is not None:
            st.groups.on_topics_deleted(list(names))
        if write_configs:
            st.metadata.write_topic_configs()
        return out

    def remove_logs(self, plogs: list[PartitionLog | str]) -> None:
        """Delete detached partition directories (blocking: a worker thread)."""
        for plog in plogs:
            self._state.logs.remove_detached(plog)
