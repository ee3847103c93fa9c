"""Share group membership in ``__consumer_offsets`` (the broker glue of ``grouprecords.py``): the records the
coordinator leaves in its outbox are appended to the group's ``__consumer_offsets`` partition (through the group
coordinator's writer, so they share its partitioning and batches) before the heartbeat is answered; at start they
are read back (record types 10-15; the classic and consumer group loaders skip them) and the groups restored.

ShareGroupStatePartitionMetadata lists, per group, the topic-partitions whose share-partition state exists in
``__share_group_state``: kafkalite initialises a share-partition on its first ShareFetch (or an
AlterShareGroupOffsets), and rewrites the record then; a DeleteShareGroupOffsets or a deleted topic removes
topics from it, a deleted group tombstones it.
"""
from __future__ import annotations

import logging
import uuid
from typing import Any

import trio

from kafkalite.coordinator.classic.records import iter_records
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.common.internal_topics import read_chunks
from kafkalite.coordinator.share import grouprecords as GR

log = logging.getLogger("kafkalite.coordinator.share")


class MembershipStore:
    def __init__(self, service: Any) -> None:
        self.svc = service
        # group -> topic id -> (name, partitions) with share-partition state
        self.initialized_parts: dict[str, dict[uuid.UUID, tuple[str, list[int]]]] = {}

    async def load(self) -> None:
        svc = self.svc
        st = svc.state
        if st is None or OFFSETS_TOPIC not in getattr(st, "topics", {}):
            return
        logs = [st.get_log(OFFSETS_TOPIC, p) for p in range(st.topics[OFFSETS_TOPIC].partitions)]

        def read_all() -> GR.GroupReplay:
            replay = GR.GroupReplay()
            for plog in logs:
                if plog is None:
                    continue
                for data in read_chunks(plog):
                    for _off, key, value in iter_records(data):
                        if GR.record_type(key) in GR.TYPES:
                            replay.feed(bytes(key), None if value is None else bytes(value))
            return replay

        replay = await trio.to_thread.run_sync(read_all)
        groups = replay.groups
        svc.groups.load(groups, svc.now_ms())
        self.initialized_parts = {gid: dict(g.initialized) for gid, g in groups.items() if g.initialized}
        if replay.records:
            log.info("loaded %d share groups (%d members) from %d %s records (%d skipped)", len(groups),
                     sum(len(g.members) for g in groups.values()), replay.records, OFFSETS_TOPIC, replay.skipped)

    async def ensure_topic(self) -> None:
        """``__consumer_offsets`` exists before a heartbeat's records are written (created off the loop)."""
        st = self.svc.state
        groups = getattr(st, "groups", None)
        if groups is not None and OFFSETS_TOPIC not in st.topics:
            await groups.ensure_offsets_topic_async()

    def persist(self) -> int:
        """Append what the coordinator left in its outbox, one batch per group. Returns an error code
        (COORDINATOR_NOT_AVAILABLE when a write failed: memory is ahead of the log until the group's next
        change is written; the member heartbeats again)."""
        outbox = self.svc.groups.take_outbox()
        groups = getattr(self.svc.state, "groups", None)
        if not outbox or groups is None:
            return E.NONE
        code = E.NONE
        for gid, records in outbox.items():
            try:
                groups._append(groups.partition_for(gid), records)
            except E.AppendError as exc:
                log.warning("share group %s: could not write %d membership records: %s", gid, len(records), exc)
                code = E.COORDINATOR_NOT_AVAILABLE
        return code

    # -- ShareGroupStatePartitionMetadata -----------------------------------------------------------
    def initialized(self, group: str, tid: uuid.UUID, p: int) -> None:
        links = self.svc.cluster
        if links is not None and not links.owns(group):   # a partition leader tells the group's coordinator
            owner = links.group_service(group)
            if owner is not None and owner is not self.svc:
                owner.membership.initialized(group, tid, p)
            return
        known = self.initialized_parts.setdefault(group, {})
        name, parts = known.get(tid, (None, []))
        if p in parts:
            return
        known[tid] = (self.svc.topic_name(tid) or name or "", sorted([*parts, p]))
        self._write(group)

    def assigned(self, group: str, parts: set[tuple[uuid.UUID, int]]) -> None:
        """The coordinator assigned these partitions (Kafka 4.x's heartbeat sends InitializeShareGroupState
        for subscribed partitions without state: start offset -1, resolved from share.auto.offset.reset by
        the leader's first ShareFetch): listed from now on, so DescribeShareGroupOffsets shows them with start
        offset and lag -1 until then. One write for all that are new."""
        known = self.initialized_parts.setdefault(group, {})
        changed = False
        for tid, p in sorted(parts, key=lambda tp: (str(tp[0]), tp[1])):
            name, have = known.get(tid, (None, []))
            if p not in have:
                known[tid] = (self.svc.topic_name(tid) or name or "", sorted([*have, p]))
                changed = True
        if changed:
            self._write(group)
        elif not known:
            self.initialized_parts.pop(group, None)

    def forget(self, group: str, tids: set[uuid.UUID]) -> None:
        known = self.initialized_parts.get(group)
        if known and tids & set(known):
            for tid in tids:
                known.pop(tid, None)
            self._write(group)

    def topic_deleted(self, topic_id: uuid.UUID) -> None:
        for group in [g for g, known in self.initialized_parts.items() if topic_id in known]:
            self.forget(group, {topic_id})

    def group_deleted(self, group: str) -> None:
        """The coordinator already queued the group's tombstones (metadata, target, state partitions)."""
        self.initialized_parts.pop(group, None)
        self.persist()

    def _write(self, group: str) -> None:
        known = self.initialized_parts.get(group) or {}
        if not known:
            self.initialized_parts.pop(group, None)
        self.svc.groups._emit(group, (GR.key(GR.STATE_PARTITIONS, group), GR.state_partitions_value(known) if known
                                      else None))
        self.persist()
