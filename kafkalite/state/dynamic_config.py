"""Dynamic broker configs: the settings AlterConfigs / IncrementalAlterConfigs change on BROKER resources at run time,
and the topic defaults that follow from them (Kafka's ``DynamicBrokerConfig`` and ``DynamicLogConfig``).

The settings themselves live in the shared metadata room, by resource name ("" = the cluster default, "<node id>" =
one broker), so every broker of a cluster sees one set; each broker keeps its own merged view (``overrides``: the
cluster default with its own on top), its effective config (the static settings with that view on top), and the
default ``LogConfig`` every topic's overrides apply over. A change reaches every broker of the room and every log
they have loaded; logs loaded later take their config from the topic manager's ``config_for`` hook.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kafkalite.config.topic_defs import BROKER_TO_TOPIC, INTERNAL_SEGMENT_BYTES
from kafkalite_storage import LogConfig

if TYPE_CHECKING:
    from kafkalite.config.broker import BrokerConfig
    from kafkalite.state import BrokerState


class DynamicConfigs:
    def __init__(self, state: BrokerState) -> None:
        self._state = state
        #: the room's dynamic settings by resource name, persisted (shared by a cluster's brokers)
        self.by_resource: dict[str, dict[str, str]] = state.metadata.dynamic_broker_configs
        #: this broker's view: the cluster default ("") with its own ("<node id>") on top
        self.overrides: dict[str, str] = state.metadata.merged_dynamic(state.node_id)
        self._effective: BrokerConfig | None = None   # built (and validated) once per change of the overrides
        #: what a topic's overrides apply over
        self.default_log_config: LogConfig = self._default_log_config()

    def effective(self, dynamic: Mapping[str, str] | None = None) -> BrokerConfig:
        """Static settings with the dynamic ones (AlterConfigs on BROKER resources) on top (this broker's own:
        kept until they change, since with eligible leader replicas on there is always one, the cluster-level
        min.insync.replicas, and produce paths ask)."""
        config = self._state.config
        if dynamic is None:
            if self._effective is None:
                self._effective = config.with_overrides(self.overrides) if self.overrides else config
            return self._effective
        return config.with_overrides(dynamic) if dynamic else config

    def _default_log_config(self, config: BrokerConfig | None = None) -> LogConfig:
        cfg = self.effective() if config is None else config
        props: dict[str, str] = {}
        for broker_key, topic_key in BROKER_TO_TOPIC.items():
            value = cfg.get_str(broker_key)
            if value:
                props[topic_key] = value
        props["retention.ms"] = str(cfg.retention_ms())
        props["segment.ms"] = str(cfg.roll_ms())
        return LogConfig.from_props(props)

    def log_config_for(self, overrides: Mapping[str, str]) -> LogConfig:
        """A topic's effective log config: its overrides over the broker's current defaults. Kafka 4.x's
        ``internal.segment.bytes`` (a topic config for tests, below segment.bytes' 1 MiB minimum) wins over
        segment.bytes, as in its LogConfig.segmentSize()."""
        props = dict(overrides)
        internal = props.get(INTERNAL_SEGMENT_BYTES)
        if internal is not None and str(internal).strip():
            props["segment.bytes"] = internal
        return LogConfig.from_props(props, base=self.default_log_config)

    def check(self, resource: str, values: Mapping[str, str]) -> None:
        """Raise ValueError unless ``values`` may become the dynamic settings of ``resource``."""
        st = self._state
        trial = dict(self.by_resource)
        trial[resource] = dict(values)
        merged = st.metadata.merged_dynamic(st.node_id, trial)
        default = self._default_log_config(self.effective(merged))
        for info in st.topics.values():
            LogConfig.from_props(dict(info.config), base=default)

    def set(self, resource: str, values: Mapping[str, str]) -> None:
        """Replace the dynamic settings of ``resource`` ("" or a node id): new topic defaults reach every log of
        every broker of the room at once and persist across restarts. Callers check first (``check``)."""
        self.check(resource, values)
        if values:
            self.by_resource[resource] = dict(values)
        else:
            self.by_resource.pop(resource, None)
        for state in self._state.placement.states():
            state.configs.refresh()
        self._state.metadata.write_broker_configs()

    def refresh(self) -> None:
        """The shared dynamic settings changed: recompute this broker's view and its loaded logs' configs."""
        st = self._state
        self.overrides = st.metadata.merged_dynamic(st.node_id)
        self._effective = None
        self.default_log_config = self._default_log_config()
        for (topic, _p), plog in st.logs.loaded_logs():   # logs loaded later take the topic manager's config_for
            info = st.topics.get(topic)
            if info is not None:
                plog.update_config(self.log_config_for(info.config))
