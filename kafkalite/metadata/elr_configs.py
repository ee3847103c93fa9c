"""The cluster-level min.insync.replicas that eligible leader replicas rely on (KIP-966), as Kafka 4.4 keeps it.

An eligible leader replica is safe to elect only if every broker holds the partition to the same min ISR, so
while ``eligible.leader.replicas.version`` is at 1 or more Kafka 4.4's controller
(``ConfigurationControlManager``, read from kafka-metadata-4.4.0.jar):

- keeps a cluster-level ``min.insync.replicas`` (BROKER resource ""): when ELR turns on (a new cluster's
  bootstrap, or UpdateFeatures) and there is none, it writes the broker's static value (default 1) there and
  removes every per-broker override (``maybeGenerateElrSafetyRecords``). DescribeConfigs then shows the
  setting as DYNAMIC_DEFAULT_BROKER_CONFIG, for brokers and as every topic's default;
- refuses, with INVALID_CONFIG, to remove the cluster-level setting ("Cluster-level min.insync.replicas cannot
  be removed while ELR is enabled.") or to set it on one broker ("Broker-level min.insync.replicas cannot be
  altered while ELR is enabled.");
- clears the eligible leader replicas and the last-known ELR of a topic whose min.insync.replicas changes, and of
  every topic when the cluster-level one is set (``createClearElrRecordsAsNeeded``: an ELR is eligible only
  under the min ISR it was recorded with). ``min_isr_altered`` does it here.

kafkalite has no format step: a broker starting (``ensure_cluster_min_isr`` from the server) or UpdateFeatures
turning ELR on does what the controller does when it activates. The settings live in the metadata room's
dynamic broker configs, shared by a cluster's brokers.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

MIN_ISR = "min.insync.replicas"
#: the feature (named here, not imported from kafkalite.metadata.features: a broker starts without that module)
ELR_FEATURE = "eligible.leader.replicas.version"
CLUSTER_REMOVAL = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
BROKER_LEVEL = "Broker-level min.insync.replicas cannot be altered while ELR is enabled."


#: the emulation profiles whose feature table finalizes ELR at 1 (``kafkalite.metadata.features``; a unit test
#: keeps the two equal) and the file UpdateFeatures writes: a broker starting on a data dir with no such file has
#: its profile's levels, so start decides without importing the feature tables (~4 ms)
ELR_BY_DEFAULT = frozenset({"4.3", "4.4", "3.9+4.4"})
FEATURES_FILE = "kafkalite-features.json"


def elr_on(state: BrokerState) -> bool:
    """``eligible.leader.replicas.version`` is finalized at 1 or more (the room's feature levels)."""
    return state.features.levels.get(ELR_FEATURE, 0) >= 1


def _elr_on_at_start(state: BrokerState) -> bool:
    if not (Path(state.metadata.dir) / FEATURES_FILE).exists():
        return state.config.emulate_kafka in ELR_BY_DEFAULT
    return elr_on(state)


def ensure_cluster_min_isr(state: BrokerState, *, at_start: bool = False) -> bool:
    """With ELR on and no cluster-level min.insync.replicas: write the static one there, drop per-broker ones
    (persisted; every running broker of the room sees it). -> whether anything changed."""
    if not (_elr_on_at_start(state) if at_start else elr_on(state)):
        return False
    by_resource = state.configs.by_resource
    changed = False
    if MIN_ISR not in by_resource.get("", {}):
        value = str(state.config.get_int(MIN_ISR))
        by_resource.setdefault("", {})[MIN_ISR] = value
        log.info("Generating cluster-level %s of %s.", MIN_ISR, value)
        changed = True
    for resource in [r for r in by_resource if r != ""]:
        if MIN_ISR in by_resource[resource]:
            del by_resource[resource][MIN_ISR]
            if not by_resource[resource]:
                del by_resource[resource]
            log.info("Removing broker-level %s for broker %s.", MIN_ISR, resource)
            changed = True
    if changed:
        state.metadata.write_broker_configs()
        for st in {id(s): s for s in [state, *state.placement.states()]}.values():
            st.configs.refresh()
    return changed


def alter_error(state: BrokerState, resource: str, new: Mapping[str, str]) -> tuple[int, str] | None:
    """INVALID_CONFIG when making ``new`` the dynamic settings of BROKER ``resource`` would remove the cluster-level
    min.insync.replicas or set one broker's while ELR is on (``isDisallowed{Cluster,Broker}MinIsrTransition``)."""
    if not elr_on(state):
        return None
    old = state.configs.by_resource.get(resource, {})
    if resource == "" and MIN_ISR in old and MIN_ISR not in new:
        return ErrorCode.INVALID_CONFIG, CLUSTER_REMOVAL
    if resource != "" and MIN_ISR in new:
        return ErrorCode.INVALID_CONFIG, BROKER_LEVEL
    return None


def min_isr_altered(state: BrokerState, topic: str | None) -> None:
    """min.insync.replicas was set on ``topic`` (None: on a BROKER resource): with ELR on, the topic's (every
    topic's) partitions lose their ELR and last-known ELR (Kafka's ClearElrRecord)."""
    if not elr_on(state):
        return
    for (name, _p), ps in state.metadata.partitions.items():
        if topic is None or name == topic:
            if ps.elr or ps.last_known_elr:
                log.info("%s-%d: ELR %s and last-known ELR %s cleared (min.insync.replicas changed)", name, _p,
                         ps.elr, ps.last_known_elr)
            ps.elr, ps.last_known_elr = [], []
