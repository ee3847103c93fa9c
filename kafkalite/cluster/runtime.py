"""The trio side of a cluster in one process: brokers, leadership, ISR and high watermarks.

Each broker is a whole ``kafkalite.server.serve`` (its own listener, node id, log dir ``<data>/broker-<id>``,
coordinators, supervisor) started in the runtime's nursery; all of them share one
:class:`~kafkalite.metadata.MetadataRoom`, whose ``partitions`` hold each partition's replicas, ISR, leader
and leader epoch (what Kafka's controller keeps in its metadata log). The runtime is the controller:

- topic creation places replicas (``placement.assign``) and creates a log on every replica broker;
- each follower replica runs a replication task (``replication.follow``) copying the leader's batches into its
  own storage, byte for byte at the same offsets;
- the leader's high watermark is the lowest log end offset over the ISR (``update_hw``); storage serves
  consumers no further (``PartitionLog.hw_limit``);
- a follower that has not caught up with the leader's log end for ``replica.lag.time.max.ms`` leaves the ISR
  (``_isr_checker``), and rejoins once it reaches the high watermark;
- leadership moves only to a live ISR member and bumps the leader epoch; the new leader starts the epoch at
  its log end (Kafka's leader-epoch cache), and followers truncate to the epoch boundary before fetching;
- with ``eligible.leader.replicas.version`` finalized at 1 (KIP-966), ISR and leader changes follow Kafka 4.4's
  partition-change rule (``kafkalite.cluster.elr``: eligible leader replicas, last-known ELR, election from
  the ELR, an empty ISR), and the high watermark advances only while the ISR holds min.insync.replicas.

Everything runs on the one trio thread; handlers reach the runtime as ``state.cluster``.
"""
from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.cluster import coordinators, elr, replication
from kafkalite.cluster.views import ClusterPlacement
from kafkalite.config.addresses import parse_address
from kafkalite.config.broker import BrokerConfig
from kafkalite.config.sidecars import CONSOLE_LISTEN, CONTROL_LISTEN, METRICS_LISTEN, SCHEMA_REGISTRY_LISTEN
from kafkalite.errors import describe
from kafkalite.faults.control import ClusterOpError as ClusterOpError  # (re-exported: the fault tools' seam)
from kafkalite.metadata import MetadataRoom, PartitionState, registrations
from kafkalite.metadata import partitions as placement
from kafkalite.metadata.elr_configs import elr_on
from kafkalite.server.serve import serve
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.cluster")


class Node:
    """One broker of the cluster: its settings, and while it runs its state and replication nursery."""

    def __init__(self, node_id: int, config: BrokerConfig) -> None:
        self.node_id = node_id
        self.config = config
        self.port = 0
        self.state: BrokerState | None = None     # while it runs
        self.up = False
        self.shutdown = trio.Event()
        self.stopped = trio.Event()
        self.repl: trio.Nursery | None = None
        self.repl_scope: trio.CancelScope | None = None
        self.error: str | None = None
        self.following: set[tuple[str, int]] = set()

    def address(self, listener: str | None = None) -> tuple[str, int]:
        if self.state is not None:
            lst = self.state.advertised_for(listener)
            return lst.host, lst.port
        return "127.0.0.1", self.port

    def running(self) -> BrokerState:
        """The broker's state, which exists from ``_attach`` until its server returns."""
        if self.state is None:
            raise RuntimeError(f"broker {self.node_id} is not running")
        return self.state


CONTROL_REMOTE = "kafkalite.control.allow.remote"


class ClusterRuntime:
    def __init__(self, data_dir: Path, node_ids: list[int], values: dict[str, str], cluster_id: str) -> None:
        self.data_dir = data_dir
        self.meta = MetadataRoom(data_dir)
        self.meta.cluster_id = cluster_id
        self.cluster_id = cluster_id
        self.nodes: dict[int, Node] = {}
        listener = BrokerConfig(values).listeners()[0]
        # the control API is one for the whole cluster (served by run(), with the cluster's operations); the
        # console and the metrics endpoint are served by the first broker only (one address each)
        values = dict(values)
        self.control_listen = values.pop(CONTROL_LISTEN, None) or None
        self.control_allow_remote = values.pop(CONTROL_REMOTE, "false").strip().lower() == "true"
        for i, nid in enumerate(node_ids):
            v = dict(values)
            if i:
                v.pop(METRICS_LISTEN, None)
                v.pop(CONSOLE_LISTEN, None)
            registry = (v.get(SCHEMA_REGISTRY_LISTEN) or "").strip()
            if registry and i:   # every broker serves the schema registry: a fixed port p gives p, p+1, ...
                host, port = parse_address(registry)
                shown = f"[{host}]" if ":" in host else host
                v[SCHEMA_REGISTRY_LISTEN] = f"{shown}:{port + i if port else 0}"
            # one PLAINTEXT listener each: a fixed port p gives brokers p, p+1, ...; port 0 a free one each
            v["listeners"] = f"PLAINTEXT://{listener.host or '127.0.0.1'}:{listener.port + i if listener.port else 0}"
            v["node.id"] = str(nid)
            v.pop("broker.id", None)
            v["log.dirs"] = str(data_dir / f"broker-{nid}")
            self.nodes[nid] = Node(nid, BrokerConfig(v))
        any_config = next(iter(self.nodes.values())).config
        self.lag_ms = any_config.get_int("replica.lag.time.max.ms")
        self.fetch_wait_s = any_config.get_int("replica.fetch.wait.max.ms") / 1000
        self.nursery: trio.Nursery | None = None
        self.started = False
        self._changed: dict[tuple[str, int], trio.Event] = {}
        self.caught_up: dict[tuple[tuple[str, int], int], float] = {}
        self.held_out: dict[tuple[str, int], set[int]] = {}      # set_isr exclusions
        self.loading: dict[int, set[tuple[str, int]]] = {}        # coordinator partitions loading per node
        self._rf: dict[str, int] = {}

    # -- lifecycle -------------------------------------------------------------------------------------
    async def run(self, *, shutdown: trio.Event | None = None, control: Any = None,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start every broker, then run until ``shutdown`` is set (or cancelled): then every broker drains and
        closes its storage cleanly. ``control`` (a ClusterControl: the ``Cluster``) is what the HTTP control
        API operates when ``kafkalite.control.listen`` is set."""
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            try:
                for node in self.nodes.values():
                    await self.start_broker(node.node_id)
                self._adopt_existing()
                self.started = True
                self.meta.catalog_complete = True
                nursery.start_soon(self._isr_checker)
                if self.control_listen and control is not None:
                    await self._serve_control(control, nursery)
                task_status.started()
                await (trio.Event() if shutdown is None else shutdown).wait()
                for node in self.nodes.values():
                    if node.up:
                        await self._stop(node, move=False)
                nursery.cancel_scope.cancel()
            finally:
                with trio.CancelScope(shield=True):
                    for node in self.nodes.values():
                        if node.up:
                            await self._stop(node, move=False)
                nursery.cancel_scope.cancel()

    def fault_plans(self) -> dict[int, Any]:
        """node id -> the running broker's FaultPlan (kafkalite.faults; a stopped broker has none)."""
        return {nid: node.state.faults for nid, node in sorted(self.nodes.items())
                if node.state is not None and getattr(node.state, "faults", None) is not None}

    async def _serve_control(self, control: Any, nursery: trio.Nursery) -> None:
        from kafkalite.control import serve_control  # only with a control address: not at start otherwise

        host, port = parse_address(self.control_listen or "")
        await serve_control(control, self.fault_plans, host, port, nursery,
                            allow_remote=self.control_allow_remote, key=str(self.data_dir))

    def node(self, node_id: int) -> Node:
        node = self.nodes.get(node_id)
        if node is None:
            raise ClusterOpError(f"no broker {node_id} (brokers: {sorted(self.nodes)})")
        return node

    def running_states(self) -> list[Any]:
        return [n.state for n in self.nodes.values() if n.state is not None]

    def live(self, node_id: int) -> bool:
        node = self.nodes.get(node_id)
        return node is not None and node.up

    def placement(self, topic: str, p: int) -> tuple[int, int, list[int], list[int], list[int]] | None:
        """(leader, leader epoch, replicas, isr, offline replicas) of a placed partition, else None."""
        ps = self.meta.partitions.get((topic, p))
        if ps is None:
            return None
        return ps.leader, ps.leader_epoch, list(ps.replicas), list(ps.isr), [r for r in ps.replicas if not self.live(r)]

    def broker_rows(self, listener: str | None = None) -> list[dict[str, Any]]:
        """Every broker of the cluster, running or not, with its address (the console's broker table)."""
        rows = []
        for nid, node in sorted(self.nodes.items()):
            host, port = node.address(listener)
            rows.append({"node_id": nid, "host": host, "port": port, "up": node.up})
        return rows

    def state_of(self, node_id: int) -> Any:
        node = self.nodes.get(node_id)
        return node.state if node is not None and node.up else None

    async def start_broker(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.up or node.state is not None:
            raise ClusterOpError(f"broker {node_id} is already running")
        assert self.nursery is not None
        node.shutdown, node.stopped = trio.Event(), trio.Event()
        ready = trio.Event()
        node.error = None
        self.nursery.start_soon(self._run_node, node, ready)
        await ready.wait()
        if node.error is not None:
            raise ClusterOpError(f"broker {node_id} could not start: {node.error}")
        await self._broker_up(node)

    async def _run_node(self, node: Node, ready: trio.Event) -> None:
        config = node.config
        if node.port:   # a restart comes back on the same port: clients hold it in their metadata
            config = config.with_overrides({"listeners": f"PLAINTEXT://127.0.0.1:{node.port}"})
        try:
            async with trio.open_nursery() as inner:
                addrs = await inner.start(functools.partial(
                    serve, config, shutdown=node.shutdown, metadata=self.meta,
                    attach=functools.partial(self._attach, node)))
                node.port = addrs[0][1]
                with trio.CancelScope() as scope:
                    node.repl_scope = scope
                    async with trio.open_nursery() as repl:
                        node.repl = repl
                        ready.set()
                        await trio.sleep_forever()
        except Exception as exc:
            if ready.is_set():
                log.exception("broker %d failed", node.node_id)
            known = describe(exc)
            node.error = known[1] if known is not None else f"{type(exc).__name__}: {exc}"
        finally:
            node.up = False
            node.state = None
            node.repl = None
            node.following.clear()
            node.stopped.set()
            ready.set()

    def _attach(self, node: Node, state: BrokerState) -> None:
        """Called by serve once the broker's state exists (before its listeners and coordinators start)."""
        state.cluster = self
        state.placement = ClusterPlacement(state)
        node.state = state

    async def _broker_up(self, node: Node) -> None:
        st = node.running()
        nid = node.node_id
        if self.started:
            await trio.to_thread.run_sync(self._reconcile_logs, node)
        coordinators.install(self, st)
        node.up = True
        registrations.of(self.meta).started(nid)   # a (re)started node registers again
        for tp, ps in list(self.meta.partitions.items()):
            if nid not in ps.replicas:
                continue
            plog = st.logs.get_log(*tp)
            if plog is not None:
                plog.hw_limit = ps.high_watermark
            if ps.leader < 0 and self.elr_enabled():   # a leaderless partition: elect (ISR, ELR, last leader)
                self.change_partition(tp, ps.isr, reason=f"broker {nid} is back")
                if ps.leader != nid:
                    self.ensure_follower(node, tp)
            elif ps.leader < 0 and nid in ps.isr:   # the last ISR member is back: it leads again
                self.elect(tp, nid, "the last in-sync replica came back")
            elif ps.leader != nid:
                self.ensure_follower(node, tp)
        self.nursery.start_soon(coordinators.prune_when_loaded, self, st)   # type: ignore[union-attr]
        log.info("broker %d is up on %s:%d", nid, *node.address())

    def _reconcile_logs(self, node: Node) -> None:
        """A broker coming back: remove logs of topics deleted meanwhile (blocking; worker thread) and create
        the ones of partitions placed on it while it was down."""
        state = node.running()
        logs = state.logs
        names = logs.partitions() if hasattr(logs, "partitions") else [k for k, _ in logs.logs()]
        for topic, p in list(names):
            ps = self.meta.partitions.get((topic, p))
            info = self.meta.topics.get(topic)
            tid = logs.topic_id_of(topic, p) if hasattr(logs, "topic_id_of") else None
            if ps is None or node.node_id not in ps.replicas or info is None or (
                    tid is not None and tid != info.topic_id):
                log.info("broker %d: removing stale replica %s-%d", node.node_id, topic, p)
                logs.delete_log(topic, p)
        for (topic, p), ps in list(self.meta.partitions.items()):
            info = self.meta.topics.get(topic)
            if info is not None and node.node_id in ps.replicas and logs.get_log(topic, p) is None:
                logs.create_log(topic, p, info.topic_id, state.configs.log_config_for(info.config))

    def _adopt_existing(self) -> None:
        """Topics found on disk at the first start (a data dir reused): replicas are the brokers holding a log,
        the first of them leads, all are in sync."""
        for info in list(self.meta.topics.values()):
            for p in range(info.partitions):
                if (info.name, p) in self.meta.partitions:
                    continue
                states = {n.node_id: n.state for n in self.nodes.values()
                          if n.state is not None and n.state.logs.get_log(info.name, p) is not None}
                holders = list(states)
                if not holders:
                    continue
                epoch = max(st.leader_epoch_of(info.name, p) for st in states.values())
                ps = PartitionState(replicas=holders, isr=list(holders), leader=holders[0], leader_epoch=epoch)
                self.meta.partitions[(info.name, p)] = ps
                for nid in holders[1:]:
                    self.ensure_follower(self.nodes[nid], (info.name, p))
                self.update_hw((info.name, p))

    async def stop_broker(self, node_id: int, *, move: bool = True) -> None:
        node = self.node(node_id)
        if not node.up:
            raise ClusterOpError(f"broker {node_id} is not running")
        await self._stop(node, move=move)

    async def _stop(self, node: Node, *, move: bool) -> None:
        """Controlled shutdown: followers catch up, leadership moves to another ISR member, the broker leaves
        every ISR, then its server drains and closes storage (its listener refuses connections)."""
        nid = node.node_id
        if move and self.elr_enabled():   # Kafka's controlled shutdown: out of every ISR, leaders elected
            for tp, ps in list(self.meta.partitions.items()):
                if nid in ps.isr:
                    self.change_partition(tp, [r for r in ps.isr if r != nid], removing=nid,
                                          reason=f"broker {nid} is stopping")
        elif move:
            for tp, ps in list(self.meta.partitions.items()):
                if nid not in ps.replicas:
                    continue
                if ps.leader == nid:
                    target = next((r for r in ps.isr if r != nid and self.live(r)), None)
                    if target is not None:
                        self.elect(tp, target, f"broker {nid} is stopping")
                    else:   # no other live ISR member: the partition is offline until one returns
                        self._set_leader(tp, ps, -1)
                        continue
                if nid in ps.isr and len(ps.isr) > 1:
                    self.set_isr_now(tp, [r for r in ps.isr if r != nid], hold=False)
        node.up = False
        if node.repl_scope is not None:
            node.repl_scope.cancel()
        node.shutdown.set()
        await node.stopped.wait()
        log.info("broker %d stopped", nid)

    # -- topics ------------------------------------------------------------------------------------------
    def plan_replication(self, topic: str, replication_factor: int) -> None:
        """CreateTopics: the replication factor asked for (-1: the default), before the logs are made."""
        self._rf[topic] = replication_factor

    def replication_factor(self, state: BrokerState, topic: str, requested: int | None = None) -> int:
        rf = self._rf.get(topic, -1) if requested is None else requested
        if rf < 1:
            cfg = state.configs.effective()
            key = {placement.OFFSETS_TOPIC: "offsets.topic.replication.factor",
                   placement.TXN_TOPIC: "transaction.state.log.replication.factor"}.get(
                topic, "default.replication.factor")
            rf = cfg.get_int(key, 1)
        return max(1, min(rf, len(self.nodes)))

    def assignment(self, state: BrokerState, topic: str, partitions: int, start: int = 0) -> list[list[int]]:
        """Replica lists of partitions ``start..partitions-1`` (existing ones keep theirs)."""
        out = []
        fresh = placement.assign(sorted(self.nodes), partitions, self.replication_factor(state, topic), start)
        for p in range(start, partitions):
            ps = self.meta.partitions.get((topic, p))
            out.append(list(ps.replicas) if ps is not None else fresh[p - start])
        return out

    def create_topic_logs(self, state: BrokerState, name: str, partitions: int, overrides: Any, topic_id: Any,
                          start: int = 0) -> None:
        """Blocking (worker thread): each partition's log on every running replica broker, all or nothing."""
        log_config = state.configs.log_config_for(overrides)
        made: list[tuple[Any, int]] = []
        try:
            for p, replicas in enumerate(self.assignment(state, name, partitions, start), start):
                for nid in replicas:
                    st = self.nodes[nid].state
                    if st is not None:
                        st.logs.create_log(name, p, topic_id, log_config)
                        made.append((st, p))
        except BaseException:
            for st, p in made:
                try:
                    st.logs.delete_log(name, p)
                except Exception:
                    log.exception("could not remove partition %s-%d after a failed creation", name, p)
            raise

    def register_partitions(self, state: BrokerState, name: str, partitions: int, start: int = 0) -> None:
        """Publish the new partitions' places (trio thread): the first live replica of each leads."""
        for p, replicas in enumerate(self.assignment(state, name, partitions, start), start):
            if (name, p) in self.meta.partitions:
                continue
            live = [r for r in replicas if self.live(r) or self.nodes[r].state is not None]
            leader = live[0] if live else -1
            self.meta.partitions[(name, p)] = PartitionState(replicas=list(replicas), isr=list(live), leader=leader)
            for r in replicas:
                st = self.nodes[r].state
                plog = st.logs.get_log(name, p) if st is not None else None
                if plog is not None:
                    plog.hw_limit = 0
                if r != leader and self.nodes[r].repl is not None:
                    self.ensure_follower(self.nodes[r], (name, p))
        self._rf.pop(name, None)

    def detach_elsewhere(self, state: BrokerState, names: list[str]) -> None:
        """DeleteTopics: the other brokers' replicas go too (their directories removed at once)."""
        for st in self.running_states():
            if st is state:
                continue
            for plogs in st.logs.detach_topics(names).values():
                for plog in plogs:
                    try:
                        st.logs.remove_detached(plog)
                    except OSError as exc:
                        log.warning("broker %d: could not remove a replica of a deleted topic: %s",
                                    st.node_id, exc)

    # -- leadership and ISR ---------------------------------------------------------------------------
    def leader_of(self, topic: str, partition: int) -> int:
        ps = self.meta.partitions.get((topic, partition))
        return ps.leader if ps is not None else -1

    def leads(self, node_id: int, topic: str, partition: int) -> bool:
        ps = self.meta.partitions.get((topic, partition))
        return ps is None or ps.leader == node_id

    def leader_state(self, topic: str, partition: int) -> Any:
        ps = self.meta.partitions.get((topic, partition))
        return None if ps is None else self.state_of(ps.leader)

    def changed(self, tp: tuple[str, int]) -> trio.Event:
        ev = self._changed.get(tp)
        if ev is None:
            ev = self._changed[tp] = trio.Event()
        return ev

    def signal(self, tp: tuple[str, int]) -> None:
        """Leadership, ISR or high watermark of ``tp`` changed: wake acks=all waiters, replication tasks and
        long polls on every broker (they look again)."""
        ev = self._changed.pop(tp, None)
        if ev is not None:
            ev.set()
        for st in self.running_states():
            st.purgatory.wake(*tp)

    def elect(self, tp: tuple[str, int], new_leader: int, reason: str) -> None:
        ps = self.meta.partitions[tp]
        old = ps.leader
        if old >= 0 and old != new_leader and self.live(old) and self.live(new_leader):
            replication.catch_up_now(self, tp, old, new_leader)   # a controlled move loses nothing
        self._set_leader(tp, ps, new_leader)
        log.info("%s-%d: leader %d -> %d (epoch %d): %s", *tp, old, new_leader, ps.leader_epoch, reason)

    def _set_leader(self, tp: tuple[str, int], ps: PartitionState, new_leader: int) -> None:
        old = ps.leader
        ps.leader = new_leader
        ps.leader_epoch += 1
        st = self.state_of(new_leader)
        if st is not None:
            plog = st.logs.get_log(*tp)
            if plog is not None:
                # the new epoch starts at the leader's log end (Kafka's LeaderEpochFileCache.assign)
                plog._assign_epoch(ps.leader_epoch, plog.log_end_offset)
        for r in ps.replicas:
            node = self.nodes[r]
            if r != new_leader and node.up:
                self.ensure_follower(node, tp)
        if tp[0] in (placement.OFFSETS_TOPIC, placement.TXN_TOPIC) and old != new_leader:
            coordinators.moved(self, tp, old, new_leader)
        if old != new_leader:   # share-partitions live with the leader (kafkalite.coordinator.share.cluster)
            # the share room: loaded on the first leader move, not at start
            from kafkalite.coordinator.share.cluster import leader_moved
            leader_moved(self, tp, old, new_leader)
        self.update_hw(tp)
        self.signal(tp)

    # -- eligible leader replicas (KIP-966) ------------------------------------------------------------
    def elr_enabled(self) -> bool:
        """``eligible.leader.replicas.version`` is finalized at 1 or more (the cluster's shared feature levels)."""
        st = next((n.state for n in self.nodes.values() if n.state is not None), None)
        return st is not None and elr_on(st)

    def effective_min_isr(self, tp: tuple[str, int], ps: PartitionState, state: Any = None) -> int:
        st = state if state is not None else self.state_of(ps.leader)
        if st is None:
            st = next((n.state for n in self.nodes.values() if n.state is not None), None)
        if st is None:
            return 1
        return elr.effective_min_isr(self.min_insync(st, tp[0]), ps.replicas)

    def change_partition(self, tp: tuple[str, int], target_isr: list[int], *, removing: int | None = None,
                         reason: str) -> None:
        """Apply the controller's partition-change rule (``kafkalite.cluster.elr``) for a wanted ISR; ``removing``:
        a broker shutting down, which may not lead."""
        ps = self.meta.partitions[tp]
        ch = elr.partition_change(
            replicas=ps.replicas, isr=ps.isr, leader=ps.leader, elr=ps.elr, last_known_elr=ps.last_known_elr,
            target_isr=[r for r in ps.replicas if r in target_isr], min_isr=self.effective_min_isr(tp, ps),
            acceptable=lambda r: r != removing and self.live(r), elr_enabled=True)
        if ch.isr != ps.isr or ch.elr != ps.elr or ch.last_known_elr != ps.last_known_elr:
            log.info("%s-%d: ISR %s -> %s, ELR %s -> %s, last-known ELR %s -> %s (%s)", *tp, ps.isr, ch.isr,
                     ps.elr, ch.elr, ps.last_known_elr, ch.last_known_elr, reason)
        ps.isr, ps.elr, ps.last_known_elr = ch.isr, ch.elr, ch.last_known_elr
        if ch.leader_changed:
            how = " (unclean: the last known leader)" if ch.unclean else ""
            self.elect(tp, ch.leader, reason + how)
        else:
            self.update_hw(tp)
            self.signal(tp)

    def set_isr_now(self, tp: tuple[str, int], isr: list[int], *, hold: bool) -> None:
        ps = self.meta.partitions[tp]
        if self.elr_enabled():
            if hold:
                self.held_out[tp] = set(ps.replicas) - set(isr)
            self.change_partition(tp, isr, reason="ISR change")
            return
        removed = set(ps.isr) - set(isr)
        ps.isr = [r for r in ps.replicas if r in isr]
        if hold:
            self.held_out[tp] = set(ps.replicas) - set(isr)
        if removed:
            log.info("%s-%d: ISR shrinks to %s", *tp, ps.isr)
        self.update_hw(tp)
        self.signal(tp)

    def update_hw(self, tp: tuple[str, int]) -> None:
        """High watermark = the lowest log end offset over the live ISR; it never moves back."""
        ps = self.meta.partitions.get(tp)
        st = self.state_of(ps.leader) if ps is not None else None
        if ps is None or st is None:
            return
        llog = st.logs.get_log(*tp)
        if llog is None:
            return
        if len(ps.isr) < len(ps.replicas) and self.elr_enabled() and \
                len(ps.isr) < self.effective_min_isr(tp, ps, st):
            return   # under min ISR the high watermark holds (Kafka 4.4's Partition.maybeIncrementLeaderHW)
        hw = llog.log_end_offset
        for r in ps.isr:
            if r == ps.leader:
                continue
            fst = self.state_of(r)
            flog = fst.logs.get_log(*tp) if fst is not None else None
            if flog is not None:
                hw = min(hw, flog.log_end_offset)
        if hw > ps.high_watermark:
            ps.high_watermark = hw
            for r in ps.replicas:
                rst = self.state_of(r) if r != ps.leader else st
                rlog = rst.logs.get_log(*tp) if rst is not None else None
                if rlog is not None:
                    rlog.hw_limit = hw
            self.signal(tp)

    def appended(self, state: BrokerState, topic: str, partition: int) -> None:
        """An append on ``state``'s replica (produce, coordinator, marker): the HW may move (ISR of one)."""
        ps = self.meta.partitions.get((topic, partition))
        if ps is not None and ps.leader == state.node_id and len(ps.isr) <= 1:
            self.update_hw((topic, partition))

    def follower_progress(self, tp: tuple[str, int], node_id: int, follower_leo: int, leader_leo: int) -> None:
        ps = self.meta.partitions.get(tp)
        if ps is None:
            return
        if follower_leo >= leader_leo:
            self.caught_up[(tp, node_id)] = trio.current_time()
        if node_id in ps.isr:
            self.update_hw(tp)
        elif node_id not in self.held_out.get(tp, ()) and follower_leo >= max(ps.high_watermark, 0) and \
                follower_leo >= leader_leo and self.elr_enabled():
            self.change_partition(tp, [*ps.isr, node_id], reason=f"broker {node_id} caught up")
        elif node_id not in self.held_out.get(tp, ()) and follower_leo >= max(ps.high_watermark, 0) and \
                follower_leo >= leader_leo:
            ps.isr = [r for r in ps.replicas if r in ps.isr or r == node_id]
            log.info("%s-%d: broker %d caught up and rejoins the ISR %s", *tp, node_id, ps.isr)
            self.update_hw(tp)
            self.signal(tp)

    def ensure_follower(self, node: Node, tp: tuple[str, int]) -> None:
        if tp in node.following or node.repl is None or node.state is None:
            return
        node.following.add(tp)
        node.repl.start_soon(replication.run_follower, self, node, tp)

    async def _isr_checker(self) -> None:
        """Kafka's isr-expiration task: a follower not caught up for replica.lag.time.max.ms leaves the ISR."""
        interval = max(self.lag_ms / 2000, 0.05)
        while True:
            await trio.sleep(interval)
            now = trio.current_time()
            for tp, ps in list(self.meta.partitions.items()):
                st = self.state_of(ps.leader)
                llog = st.logs.get_log(*tp) if st is not None else None
                if llog is None or len(ps.isr) <= 1:
                    continue
                leo = llog.log_end_offset
                lagging = []
                for r in ps.isr:
                    if r == ps.leader:
                        continue
                    fst = self.state_of(r)
                    flog = fst.logs.get_log(*tp) if fst is not None else None
                    if flog is not None and flog.log_end_offset >= leo:
                        self.caught_up[(tp, r)] = now
                    elif now - self.caught_up.setdefault((tp, r), now) > self.lag_ms / 1000:
                        lagging.append(r)
                if lagging:
                    log.info("%s-%d: brokers %s lag more than replica.lag.time.max.ms", *tp, lagging)
                    self.set_isr_now(tp, [r for r in ps.isr if r not in lagging], hold=False)

    # -- produce (acks and min.insync.replicas) --------------------------------------------------------
    def min_insync(self, state: BrokerState, topic: str) -> int:
        info = self.meta.topics.get(topic)
        raw = info.config.get("min.insync.replicas") if info is not None else None
        return int(raw) if raw else state.configs.effective().get_int("min.insync.replicas")

    async def await_acks(self, state: BrokerState, waits: list[tuple[str, int, int, Any]], timeout_ms: int) -> None:
        """acks=all: wait until each partition's high watermark passes its append (or the ISR falls below
        min.insync.replicas: NOT_ENOUGH_REPLICAS_AFTER_APPEND; or the timeout: REQUEST_TIMED_OUT)."""
        deadline = trio.current_time() + max(timeout_ms, 0) / 1000
        for topic, partition, needed, resp in waits:
            tp = (topic, partition)
            while True:
                ps = self.meta.partitions.get(tp)
                if ps is None or ps.leader != state.node_id:
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif len(ps.isr) < self.min_insync(state, topic):   # (Kafka's checkEnoughReplicasReachOffset)
                    code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                elif ps.high_watermark >= needed:
                    break
                else:
                    with trio.move_on_at(deadline):
                        await self.changed(tp).wait()
                        continue
                    code = ErrorCode.REQUEST_TIMED_OUT
                resp.error_code = code
                resp.base_offset = -1
                break
