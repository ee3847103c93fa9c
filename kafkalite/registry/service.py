"""Trio glue around the pure :class:`~kafkalite.registry.core.Registry`: keeps it in the ``_schemas`` topic.

On start the topic (one partition, compacted, as Confluent creates it) is read back from its log start in a
worker thread and every record replayed, in order; the REST API answers 50002 until that is done. A change is
one uncompressed batch appended synchronously to ``_schemas-0`` (the page cache, like the broker's Produce path
and the group coordinator's writes), and applied only once the append returned: what a client was told
succeeded is in the log, and comes back after a restart, SIGKILL included. The topic is created on the first
write if it does not exist.
"""
from __future__ import annotations

import logging
import time

import trio

from kafkalite.coordinator.classic.records import build_batch, iter_records
from kafkalite.coordinator.common.internal_topics import read_chunks
from kafkalite.registry.core import Registry, RegistryError
from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.registry")

TOPIC = "_schemas"
TOPIC_CONFIG = {"cleanup.policy": "compact"}


class RegistryService:
    def __init__(self, state: BrokerState, topic: str = TOPIC) -> None:
        self.state = state
        self.topic = topic
        self.registry = Registry(self._write)
        self.loaded = trio.Event()
        self.load_seconds = 0.0
        self.error: str | None = None   # why ``_schemas`` could not be read (then every request answers 50001)

    async def load(self) -> None:
        """Replay ``_schemas`` into the registry (a worker thread reads and applies; nothing else touches the
        registry until ``loaded`` is set). A failure leaves the registry refusing requests, never empty: an
        empty one would hand out ids already in use."""
        try:
            await self._load()
        except Exception as exc:
            log.exception("schema registry: reading %s failed; the registry answers 50001 until a restart",
                          self.topic)
            self.error = f"reading {self.topic} failed: {exc}"

    async def _load(self) -> None:
        start = time.perf_counter()
        if self.topic in self.state.topics:
            plog = self.state.get_log(self.topic, 0)
            if plog is not None:
                registry = self.registry

                def replay() -> None:
                    for data in read_chunks(plog):
                        for _offset, key, value in iter_records(data):
                            registry.apply(bytes(key), None if value is None else bytes(value))

                await trio.to_thread.run_sync(replay)
        self.load_seconds = time.perf_counter() - start
        reg = self.registry
        log.info("schema registry: %d subjects, %d schema ids from %d %s records in %.3f s%s",
                 len(reg.versions), len(reg.by_id), reg.records, self.topic, self.load_seconds,
                 f" ({reg.skipped} unreadable records skipped)" if reg.skipped else "")
        self.loaded.set()

    def _write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        st = self.state
        if self.topic not in st.topics:
            st.topics.ensure(self.topic, 1, TOPIC_CONFIG)
        plog = st.get_log(self.topic, 0)
        if plog is None:
            raise RegistryError(500, 50001, f"{self.topic}-0 does not exist on this broker")
        if not st.leads(self.topic, 0):
            raise RegistryError(500, 50004, f"{self.topic}-0 is led by another broker")
        now = time.time_ns() // 1_000_000
        plog.append(build_batch(records, now), leader_epoch=0, now_ms=now)
        st.notify_append(self.topic, 0)
