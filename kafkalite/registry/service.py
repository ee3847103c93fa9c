"""Trio glue around the pure :class:`~kafkalite.registry.core.Registry`: keeps it in the ``_schemas`` topic.

On start the topic (one partition, compacted, as Confluent creates it) is read back from its log start in a
worker thread and every record replayed, in order; the REST API answers 50002 until that is done. Then the
registry follows the topic: every append to ``_schemas-0`` on this broker (its own writes, or a replica's copy
of the leader's) wakes :meth:`RegistryService.tail`, which applies the records up to the committed offset (the
high watermark), so every broker of a cluster serves the same registry from its own replica.

One writer, as Confluent's registries elect one: the broker that leads ``_schemas-0``. A change sent to any
broker's registry is made by the writer's :class:`Registry` (:meth:`writer`), which first applies its whole log,
appends one uncompressed batch synchronously to ``_schemas-0`` (the page cache, like the broker's Produce path
and the group coordinator's writes) and applies it once the append returned. The answer waits until the batch
is committed (the high watermark passed it: every in-sync replica has it) and until the broker that was asked
has applied it (read your writes). What a client was told succeeded is in the log of every in-sync replica and
comes back after a restart, SIGKILL included. The topic is created on the first write if it does not exist.
"""
from __future__ import annotations

import logging
import time
from typing import Any

import trio

from kafkalite.coordinator.classic.records import build_batch, iter_records
from kafkalite.coordinator.common.internal_topics import next_offset
from kafkalite.registry.core import Registry, RegistryError
from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.registry")

TOPIC = "_schemas"
TOPIC_CONFIG = {"cleanup.policy": "compact"}
REPLICATION_FACTOR = 3   # Confluent's kafkastore.topic.replication.factor (a cluster of fewer brokers: all)
READ_CHUNK = 1024 * 1024
COMMIT_TIMEOUT_S = 30.0
TAIL_RECHECK_S = 5.0   # a missed wake-up costs at most this (appends and HW moves wake the tail at once)


class RegistryService:
    def __init__(self, state: BrokerState, topic: str = TOPIC) -> None:
        self.state = state
        self.topic = topic
        self.registry = Registry(self._write)
        self.loaded = trio.Event()
        self.load_seconds = 0.0
        self.error: str | None = None   # why ``_schemas`` could not be read (then every request answers 50001)
        self.applied = 0                # the next offset of _schemas-0 to apply

    # -- reading the topic ------------------------------------------------------------------------------
    def _log(self) -> Any:
        if self.topic not in self.state.topics:
            return None
        return self.state.get_log(self.topic, 0)

    def committed(self) -> int:
        """The offset up to which ``_schemas-0`` is committed (the leader's high watermark; this broker's log
        end when it stands alone or leads with no other in-sync replica)."""
        plog = self._log()
        if plog is None:
            return 0
        end: int = plog.log_end_offset
        hw: int = plog.high_watermark
        leader = self._leader_state()
        if leader is not None and leader is not self.state:
            lplog = leader.get_log(self.topic, 0) if self.topic in leader.topics else None
            if lplog is not None:
                hw = max(hw, lplog.high_watermark)
        return min(end, hw)

    def _apply_range(self, start: int, end: int) -> int:
        """Apply the records of offsets [start, end) of the local log (blocking reads); -> the next offset."""
        plog = self._log()
        if plog is None or start >= end:
            return start
        offset: int = max(start, int(plog.log_start_offset))
        while offset < end:
            data = plog.read_bytes(offset, READ_CHUNK)
            if not data:
                break
            for rec_offset, key, value in iter_records(data):
                if offset <= rec_offset < end:
                    self.registry.apply(bytes(key), None if value is None else bytes(value))
            nxt = next_offset(data)
            if nxt is None or nxt <= offset:
                break
            offset = min(int(nxt), end)
        return max(offset, start)

    async def load(self) -> None:
        """Replay ``_schemas`` into the registry (a worker thread reads and applies; nothing else touches the
        registry until ``loaded`` is set), then follow it. A failure leaves the registry refusing requests,
        never empty: an empty one would hand out ids already in use."""
        try:
            await self._load()
        except Exception as exc:
            log.exception("schema registry: reading %s failed; the registry answers 50001 until a restart",
                          self.topic)
            self.error = f"reading {self.topic} failed: {exc}"
            return
        # a failure while following is logged and the loop restarted by the supervisor: never the broker's end
        await self.state.supervisor.run("schema-registry.tail", self.tail)

    async def _load(self) -> None:
        start = time.perf_counter()
        end = self.committed()
        self.applied = await trio.to_thread.run_sync(self._apply_range, 0, end)
        self.load_seconds = time.perf_counter() - start
        reg = self.registry
        log.info("schema registry: %d subjects, %d schema ids from %d %s records in %.3f s%s",
                 len(reg.versions), len(reg.by_id), reg.records, self.topic, self.load_seconds,
                 f" ({reg.skipped} unreadable records skipped)" if reg.skipped else "")
        self.loaded.set()

    def catch_up(self, to_end: bool = False) -> None:
        """Apply what was committed since (``to_end``: everything in the local log, for the writer)."""
        plog = self._log()
        if plog is None:
            return
        end = plog.log_end_offset if to_end else self.committed()
        if end > self.applied:
            self.applied = self._apply_range(self.applied, end)

    async def tail(self) -> None:
        """Follow ``_schemas-0``: woken by every append and high-watermark move on this broker."""
        while True:
            ev = self.state.purgatory.partition_event(self.topic, 0)
            try:
                self.catch_up()
                with trio.move_on_after(TAIL_RECHECK_S):
                    await ev.wait()
            finally:
                self.state.purgatory.drop_waiter([(self.topic, 0)], ev)
            if self.state.purgatory.draining:
                return

    # -- the one writer ----------------------------------------------------------------------------------
    def _leader_state(self) -> BrokerState | None:
        placement = self.state.placement
        try:
            views = placement.partitions(self.topic, 1) if self.topic in self.state.topics else []
        except (KeyError, ValueError):
            views = []
        if not views:
            return self.state
        leader = views[0][0]
        for st in placement.states():
            if st.node_id == leader:
                return st
        return None

    def writer(self) -> RegistryService:
        """The registry that makes changes: this broker's, or the one of the broker leading ``_schemas-0``
        (50003 when that broker is down or serves no registry)."""
        st = self._leader_state()
        service = st.schema_registry if st is not None else None
        if service is None:
            raise RegistryError(500, 50003, f"Error while forwarding the request to the leader: the leader of "
                                            f"{self.topic}-0 is unavailable or serves no schema registry")
        if service.error is not None or not service.loaded.is_set():
            raise RegistryError(500, 50003, "Error while forwarding the request to the leader: it is still "
                                            f"reading {self.topic}")
        service.catch_up(to_end=True)
        return service

    def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        st = self.state
        if self.topic not in st.topics:
            st.placement.plan_replication(self.topic, REPLICATION_FACTOR)   # at most the cluster's size
            st.topics.ensure(self.topic, 1, TOPIC_CONFIG)
        plog = st.get_log(self.topic, 0)
        if plog is None:
            raise RegistryError(500, 50001, f"{self.topic}-0 does not exist on this broker")
        if not st.leads(self.topic, 0):
            raise RegistryError(500, 50004, f"{self.topic}-0 is led by another broker")
        self.catch_up(to_end=True)
        now = time.time_ns() // 1_000_000
        plog.append(build_batch(records, now), leader_epoch=st.leader_epoch_of(self.topic, 0), now_ms=now)
        self.applied = plog.log_end_offset   # the registry applies these records itself, after this returns
        st.notify_append(self.topic, 0)

    def end_offset(self) -> int:
        plog = self._log()
        return int(plog.log_end_offset) if plog is not None else 0

    async def wait_committed(self, offset: int) -> None:
        """Until ``_schemas-0`` is committed up to ``offset`` (50002 after COMMIT_TIMEOUT_S)."""
        with trio.move_on_after(COMMIT_TIMEOUT_S):
            while self.committed() < offset:
                ev = self.state.purgatory.partition_event(self.topic, 0)
                try:
                    if self.committed() >= offset:
                        break
                    with trio.move_on_after(TAIL_RECHECK_S):
                        await ev.wait()
                finally:
                    self.state.purgatory.drop_waiter([(self.topic, 0)], ev)
            return
        raise RegistryError(500, 50002, f"Write to the Kafka store timed out: {self.topic}-0 not committed up to "
                                        f"offset {offset}")

    async def wait_applied(self, offset: int) -> None:
        """Until this broker's registry has applied ``_schemas-0`` up to ``offset`` (read your writes)."""
        with trio.move_on_after(COMMIT_TIMEOUT_S):
            while True:
                ev = self.state.purgatory.partition_event(self.topic, 0)
                try:
                    self.catch_up()
                    if self.applied >= offset:
                        return
                    with trio.move_on_after(TAIL_RECHECK_S):
                        await ev.wait()
                finally:
                    self.state.purgatory.drop_waiter([(self.topic, 0)], ev)
        raise RegistryError(500, 50002, f"Timed out reading {self.topic} up to offset {offset} on this broker")
