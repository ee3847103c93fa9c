"""``Cluster``: the Python API of several brokers in one process (see the package docstring)."""
from __future__ import annotations

import base64
import functools
import tempfile
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import trio

from kafkalite.cluster.runtime import ClusterOpError, ClusterRuntime
from kafkalite.config.broker import BrokerConfig
from kafkalite.metadata import partitions as placement
from kafkalite.runtime.loopthread import LoopOwner, LoopThread


def _cluster_id(data_dir: Path, node_ids: list[int]) -> str:
    """A reused data dir keeps its cluster id (brokers' meta.properties); a new one gets a random id."""
    for nid in node_ids:
        try:
            text = (data_dir / f"broker-{nid}" / "meta.properties").read_text(encoding="utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def cluster_values(brokers: int, overrides: Mapping[str, str] | None) -> dict[str, str]:
    """Settings every broker of the cluster shares: replicated topics by default (min(3, N) replicas)."""
    rf = str(min(3, brokers))
    values = {"listeners": "PLAINTEXT://127.0.0.1:0", "default.replication.factor": rf,
              "offsets.topic.replication.factor": rf, "transaction.state.log.replication.factor": rf}
    values.update(overrides or {})
    return values


class Cluster(LoopOwner):
    def __init__(self, brokers: int = 3, *, data_dir: str | Path | None = None,
                 overrides: Mapping[str, str] | None = None, emulate_kafka: str | None = None,
                 startup_timeout: float = 120.0) -> None:
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        values = cluster_values(brokers, overrides)
        if emulate_kafka:
            values["kafkalite.emulate.kafka"] = emulate_kafka
        values["log.dirs"] = "."
        BrokerConfig(values)   # a bad setting raises ConfigError here, before a temporary dir exists
        self._own_dir = data_dir is None
        self.data_dir = Path(tempfile.mkdtemp(prefix="kafkalite-cluster-")) if data_dir is None else Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._node_ids = list(range(1, brokers + 1))
        self.runtime = ClusterRuntime(self.data_dir, self._node_ids, values,
                                      _cluster_id(self.data_dir, self._node_ids))
        self.startup_timeout = startup_timeout
        self.sync = SyncCluster(self)
        self._loop = LoopThread(f"kafkalite-cluster-{id(self):x}", "cluster")

    # -- addresses -------------------------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        return self.runtime.cluster_id

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.addresses().values())

    def addresses(self) -> dict[int, tuple[str, int]]:
        """Each broker's (host, port), running or not (a stopped broker comes back on the same port)."""
        return {nid: node.address() for nid, node in sorted(self.runtime.nodes.items())}

    def faults(self, node_id: int) -> Any:
        """Faults on command for one broker (:class:`kafkalite.faults.embedded.BrokerFaults`): inject errors,
        latency, drops, pauses on that broker only. It applies while the broker runs (a restarted broker starts
        with no faults)."""
        from kafkalite.faults.embedded import BrokerFaults  # only when faults are asked for: not at start

        node = self.runtime.node(node_id)
        return BrokerFaults(_BrokerHandle(node.config.log_dir, self))

    def schema_registry_urls(self) -> dict[int, str]:
        """Each running broker's schema registry URL when ``kafkalite.schema.registry.listen`` is set (every
        broker serves it; the leader of ``_schemas-0`` makes the changes)."""
        from kafkalite.registry import bound_address  # only when asked: not imported otherwise

        out = {}
        for nid, node in sorted(self.runtime.nodes.items()):
            bound = bound_address(node.config.log_dir)
            if bound is not None:
                host, port = bound
                out[nid] = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
        return out

    @property
    def control_address(self) -> tuple[str, int] | None:
        """(host, port) of the cluster's HTTP control API when ``kafkalite.control.listen`` is set."""
        # only when asked: the control API is not imported otherwise
        from kafkalite.control import bound_address

        return bound_address(str(self.data_dir))

    # -- ClusterControl ------------------------------------------------------------------------------
    def node_ids(self) -> list[int]:
        return sorted(self.runtime.nodes)

    async def stop_broker(self, node_id: int) -> None:
        await self.runtime.stop_broker(node_id)

    async def start_broker(self, node_id: int) -> None:
        await self.runtime.start_broker(node_id)

    async def restart_broker(self, node_id: int) -> None:
        await self.runtime.stop_broker(node_id)
        await self.runtime.start_broker(node_id)

    def _partition(self, topic: str, partition: int) -> Any:
        ps = self.runtime.meta.partitions.get((topic, partition))
        if ps is None:
            raise ClusterOpError(f"unknown partition {topic}-{partition}")
        return ps

    async def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Make ``node_id`` lead the partition: it must be a live member of the ISR (Kafka never elects
        another without unclean election). The leader epoch goes up by one."""
        ps = self._partition(topic, partition)
        self.runtime.node(node_id)
        if node_id not in ps.replicas:
            raise ClusterOpError(f"broker {node_id} is not a replica of {topic}-{partition} ({ps.replicas})")
        if node_id not in ps.isr:
            raise ClusterOpError(f"broker {node_id} is not in the ISR of {topic}-{partition} ({ps.isr})")
        if not self.runtime.live(node_id):
            raise ClusterOpError(f"broker {node_id} is not running")
        if ps.leader != node_id:
            self.runtime.elect((topic, partition), node_id, "move_leader")

    async def set_isr(self, topic: str, partition: int, node_ids: list[int]) -> None:
        """Set the ISR (replicas, including the leader). Replicas left out stay out until a later set_isr
        names them again (then they rejoin once caught up); the high watermark follows the new ISR."""
        ps = self._partition(topic, partition)
        wanted = [int(n) for n in node_ids]
        unknown = [n for n in wanted if n not in ps.replicas]
        if unknown or not wanted:
            raise ClusterOpError(f"the ISR of {topic}-{partition} must be a non-empty subset of its replicas "
                                 f"{ps.replicas}, not {wanted}")
        if ps.leader >= 0 and ps.leader not in wanted:
            raise ClusterOpError(f"the ISR of {topic}-{partition} must contain its leader {ps.leader}")
        self.runtime.set_isr_now((topic, partition), wanted, hold=True)

    async def move_coordinator(self, kind: str, key: str, node_id: int) -> None:
        """Move the group (transactional id) coordinator of ``key``: the leader of its internal topic
        partition moves; the new coordinator loads that partition from its own replica."""
        try:
            topic = placement.coordinator_topic(kind)
        except ValueError as exc:
            raise ClusterOpError(str(exc)) from None
        info = self.runtime.meta.topics.get(topic)
        if info is None:
            raise ClusterOpError(f"{topic} does not exist yet (it is created when a client first looks up a "
                                 f"{kind} coordinator)")
        await self.move_leader(topic, placement.coordinator_partition(key, info.partitions), node_id)

    def coordinator(self, kind: str, key: str) -> int:
        """The node coordinating group / transactional id ``key`` now (-1: none)."""
        topic = placement.coordinator_topic(kind)
        info = self.runtime.meta.topics.get(topic)
        if info is None:
            return -1
        return self.runtime.leader_of(topic, placement.coordinator_partition(key, info.partitions))

    async def describe(self) -> dict[str, Any]:
        rt = self.runtime
        brokers = [{"node_id": nid, "host": node.address()[0], "port": node.address()[1], "up": node.up}
                   for nid, node in sorted(rt.nodes.items())]
        partitions = [{"topic": t, "partition": p, "leader": ps.leader, "leader_epoch": ps.leader_epoch,
                       "replicas": list(ps.replicas), "isr": list(ps.isr), "elr": list(ps.elr),
                       "last_known_elr": list(ps.last_known_elr), "high_watermark": ps.high_watermark,
                       "internal": t in placement.INTERNAL}
                      for (t, p), ps in sorted(rt.meta.partitions.items())]
        return {"cluster_id": rt.cluster_id, "brokers": brokers, "partitions": partitions}

    # -- running in a thread ---------------------------------------------------------------------------
    def _start_error(self, error: BaseException) -> Exception:
        return RuntimeError(f"kafkalite cluster failed to start: {error}")

    async def _serve(self, shutdown: trio.Event, ready: Callable[[], None]) -> None:
        await self.runtime.run(shutdown=shutdown, control=self, task_status=_Ready(ready))

    def __repr__(self) -> str:
        return f"<kafkalite.Cluster {self.bootstrap_servers} data_dir={str(self.data_dir)!r}>"


class _BrokerHandle:
    """What BrokerFaults needs of a broker: its data dir (where its FaultPlan is registered) and the trio token
    of the loop it runs on (the cluster's)."""

    def __init__(self, data_dir: Any, cluster: Cluster) -> None:
        self.data_dir = data_dir
        self._cluster = cluster

    @property
    def _token(self) -> Any:
        return self._cluster._token


class _Ready:
    """A task status that tells the starting thread the cluster is up."""

    def __init__(self, ready: Callable[[], None]) -> None:
        self._ready = ready

    def started(self, value: Any = None) -> None:
        self._ready()


class SyncCluster:
    """The cluster operations from a plain Python thread (a test): each call runs on the cluster's loop and
    returns its result (or raises its ClusterOpError)."""

    def __init__(self, cluster: Cluster) -> None:
        self._c = cluster

    def _call(self, fn: Any, *args: Any) -> Any:
        if self._c._token is None:
            raise RuntimeError("the cluster is not running (call start() or use it as a context manager)")
        return trio.from_thread.run(fn, *args, trio_token=self._c._token)

    def node_ids(self) -> list[int]:
        return self._c.node_ids()

    def stop_broker(self, node_id: int) -> None:
        self._call(self._c.stop_broker, node_id)

    def start_broker(self, node_id: int) -> None:
        self._call(self._c.start_broker, node_id)

    def restart_broker(self, node_id: int) -> None:
        self._call(self._c.restart_broker, node_id)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self._call(self._c.move_leader, topic, partition, node_id)

    def set_isr(self, topic: str, partition: int, node_ids: list[int]) -> None:
        self._call(self._c.set_isr, topic, partition, list(node_ids))

    def move_coordinator(self, kind: str, key: str, node_id: int) -> None:
        self._call(self._c.move_coordinator, kind, key, node_id)

    def describe(self) -> dict[str, Any]:
        return self._call(self._c.describe)  # type: ignore[no-any-return]

    def coordinator(self, kind: str, key: str) -> int:
        async def ask() -> int:
            return self._c.coordinator(kind, key)
        return self._call(ask)  # type: ignore[no-any-return]


async def serve_cluster(brokers: int, values: Mapping[str, str], data_dir: Path, *,
                        shutdown: trio.Event | None = None,
                        task_status: trio.TaskStatus[Cluster] = trio.TASK_STATUS_IGNORED) -> None:
    """``kafkalite serve --brokers N``: run a cluster on the current trio loop until ``shutdown``."""
    shutdown = trio.Event() if shutdown is None else shutdown
    cluster = Cluster(brokers, data_dir=data_dir, overrides=values)
    cluster._token = trio.lowlevel.current_trio_token()
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(cluster.runtime.run, shutdown=shutdown, control=cluster))
        task_status.started(cluster)
