"""Every share-partition of the broker, and their persistence in ``__share_group_state`` (pure: the caller
gives ``now`` and an ``append`` that writes one batch of records to a state-topic partition, raising
``kafkalite.coordinator.common.errors.AppendError`` when it cannot).

This joins what Kafka splits between the ``SharePartitionManager`` (share-partitions in memory, created on
first use and initialised from the persister) and the share coordinator (``ShareCoordinatorShard``: one
ShareSnapshot, then ShareUpdates, a fresh snapshot every ``updates_per_snapshot`` updates):

- A share-partition without persisted state starts where ``share.auto.offset.reset`` says (latest: the end
  of the log the group may read — the high watermark, or the last stable offset for read_committed;
  earliest: the log start; by_duration:D: the first record stamped at or after now - D, see ``reset``), and that start is written as a snapshot at once, so records produced after it
  are never skipped by a restart.
- Each acknowledgement is written (a ShareUpdate with the new start and the changed runs) before the
  client is answered: an acknowledged record is never delivered again after a restart. Acquisitions are not
  written (as in Kafka): after a crash, a record acquired but not acknowledged is delivered again.
- Lock expiries, releases on session close, and archiving of markers, aborted records and gaps are
  written the same way (a failed write there is logged by the caller; memory stays ahead, which at worst
  delivers those records again after a restart).
- Dead-letter queue (KIP-1191, ``dlq.py``): records a share-partition makes ARCHIVING are handed to
  ``dlq_sink`` (key, [(first, last, count, cause)]) only after the write holding their ARCHIVING state (so a
  restart resumes them, ``partition``); ``dlq_done`` then archives them and the start may move past them.
  Without a sink they are archived at once.
- Replay work is bounded: a share-partition gets a fresh ShareSnapshot once ``updates_per_snapshot``
  (``share.coordinator.snapshot.update.records.per.snapshot``, 500) ShareUpdates follow its last one, so a
  restart reads its snapshot and at most that many updates. And, as Kafka's ``snapshotColdPartitions`` every
  ``share.coordinator.cold.partition.snapshot.interval.ms`` (5 min), an idle share-partition (nothing written
  for it for that long) whose latest snapshot has other records after it in its state-topic partition is
  snapshotted again (``snapshot_cold``): its old snapshot no longer holds back the pruning of that partition
  (``prunable``), so the records a restart reads stay bounded even when most share-partitions are idle.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafkalite.config.share_reset import strategy_or_latest
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.share.config import GroupSettings, ShareConfig
from kafkalite.coordinator.share.partition import (
    CAUSE_LIMIT,
    CAUSE_REJECT,
    INVALID_RECORD_STATE,
    Acquired,
    LogBatch,
    SharePartition,
    StateBatch,
)
from kafkalite.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareKey,
    ShareValue,
    encode_key,
    encode_value,
    partition_for,
)
from kafkalite.coordinator.share.state import PersistedState

#: writes one batch to a state-topic partition; returns the batch's base offset (None if unknown)
Append = Callable[[int, list[tuple[bytes, bytes | None]]], "int | None"]


class NoStartOffset(Exception):
    """share.auto.offset.reset=by_duration found no record at or after its time: the share-partition stays
    uninitialised and the fetch answers OFFSET_NOT_AVAILABLE for it (Kafka 4.x's SharePartition fails its
    initialisation with OffsetNotAvailableException; the next fetch tries again)."""


@dataclass(slots=True)
class _Meta:
    state_epoch: int = 0
    snapshot_epoch: int = -1
    create_ts: int = 0
    updates: int = 0
    last_write: int = 0
    leader_epoch: int = 0           # as the coordinator recorded it (ReadShareGroupState may move it)


class ShareStateManager:
    def __init__(self, config: ShareConfig, append: Append) -> None:
        self.config = config
        self.append = append
        self.persisted: dict[ShareKey, PersistedState] = {}   # loaded, not yet in use
        self.parts: dict[ShareKey, SharePartition] = {}
        self.meta: dict[ShareKey, _Meta] = {}
        self._state_partition: dict[ShareKey, int] = {}
        self.snapshot_offsets: dict[ShareKey, int] = {}     # where each share-partition's last snapshot is
        # state-topic partition -> offset of its last write other than a cold snapshot
        self.last_offsets: dict[int, int] = {}
        # KIP-1191: is share.version 2 finalized (the DLQ on), and who writes the DLQ (dlq.ShareDlqWriter)
        self.dlq_supported: Callable[[], bool] = lambda: False
        self.dlq_sink: Callable[[ShareKey, list[tuple[int, int, int, str]]], None] | None = None

    # -- access --------------------------------------------------------------------------------
    def settings(self, group: str) -> GroupSettings:
        return self.config.for_group(group)

    def dlq_on(self, settings: GroupSettings) -> bool:
        """Rejected and exhausted records of the group go to a DLQ (Kafka's ``isDLQEnabledForGroup``)."""
        return bool(settings.dlq_topic) and self.dlq_supported()

    def known(self, key: ShareKey) -> bool:
        return key in self.parts or key in self.persisted

    def keys(self, group: str | None = None) -> list[ShareKey]:
        keys = set(self.parts) | set(self.persisted)
        return sorted((k for k in keys if group is None or k.group == group),
                      key=lambda k: (k.group, str(k.topic_id), k.partition))

    def groups(self) -> set[str]:
        return {k.group for k in self.parts} | {k.group for k in self.persisted}

    def start_of(self, key: ShareKey) -> int:
        """The share-partition start offset, -1 if the group has no state for it yet."""
        sp = self.parts.get(key)
        if sp is not None:
            return sp.start
        ps = self.persisted.get(key)
        return ps.start if ps is not None else -1

    def partition(self, key: ShareKey, now: int, log_start: int, readable_end: int,
                  offset_for_time: Callable[[int], int | None] | None = None) -> SharePartition:
        """The share-partition, initialised on first use; raises AppendError if its initial snapshot could not
        be written (the fetch answers an error and the next one tries again). ``offset_for_time(ts)`` is the
        first offset below ``readable_end`` whose record timestamp is >= ts, or None (by_duration); with none,
        NoStartOffset is raised and nothing is initialised (Kafka's OffsetNotAvailableException)."""
        settings = self.settings(key.group)
        sp = self.parts.get(key)
        if sp is None:
            ps = self.persisted.get(key)
            meta = _Meta()
            if ps is not None:
                meta = _Meta(ps.state_epoch, ps.snapshot_epoch, ps.create_ts, ps.updates,
                             leader_epoch=ps.leader_epoch)
            if ps is not None and ps.start >= 0:
                sp = SharePartition(ps.start, ps.batches(), settings.limits, self.dlq_on(settings))
                fresh = False
                for b in sp.archiving():    # a DLQ write the last run did not finish: resumed
                    sp.dlq_out.append((b.first, b.last, b.count,
                                       CAUSE_LIMIT if b.count >= settings.delivery_limit else CAUSE_REJECT))
            else:
                start = self._initial_start(key, settings, now, log_start, readable_end, offset_for_time)
                sp = SharePartition(start, (), settings.limits, self.dlq_on(settings))
                meta.create_ts = now
                fresh = True
            self.meta[key] = meta
            if fresh:
                self._snapshot(key, sp, now)          # raises before the partition is registered
            self.parts[key] = sp
            self.persisted.pop(key, None)
            self._flush_dlq(key, sp, now)
        else:
            sp.limits = settings.limits
            sp.dlq = self.dlq_on(settings)
        if sp.move_start(log_start):
            self._write_quietly(key, sp, now, [])
        return sp

    @staticmethod
    def _initial_start(key: ShareKey, settings: GroupSettings, now: int, log_start: int, readable_end: int,
                       offset_for_time: Callable[[int], int | None] | None) -> int:
        """Where share.auto.offset.reset starts a share-partition without state (see ``reset``)."""
        strategy = strategy_or_latest(settings.auto_offset_reset)
        if strategy.kind == "earliest":
            return log_start
        if strategy.kind == "latest":
            return readable_end
        ts = max(strategy.timestamp(now), 0)
        found = offset_for_time(ts) if offset_for_time is not None else None
        if found is None:
            raise NoStartOffset(f"Offset for timestamp {ts} not found for share-partition {key}")
        return max(found, log_start)

    # -- operations ----------------------------------------------------------------------------
    def acquire(self, key: ShareKey, member: str, batches: Sequence[LogBatch], max_records: int, now: int,
                aborted: Sequence[tuple[int, int, int]] = (), record_limit: bool = False,
                ) -> tuple[list[Acquired], list[LogBatch]]:
        sp = self.parts[key]
        got, used, archived = sp.acquire(member, batches, max_records, now, aborted=aborted,
                                         record_limit=record_limit)
        if archived:
            self._write_quietly(key, sp, now, archived)
        return got, used

    def acknowledge(self, key: ShareKey, member: str, batches: Sequence[tuple[int, int, Sequence[int]]], now: int,
                    *, allow_renew: bool = False) -> int:
        """Apply and persist one partition's acknowledgements; the error code for the client."""
        sp = self.parts.get(key)
        if sp is None:
            return INVALID_RECORD_STATE if self.known(key) else E.UNKNOWN_TOPIC_OR_PARTITION
        code, changed = sp.acknowledge(member, batches, now, allow_renew=allow_renew)
        if code or not changed:
            return code
        try:
            self._write(key, sp, now, changed)
        except E.AppendError:
            self.meta[key].updates = self.config.updates_per_snapshot   # next write: a whole snapshot
            self._flush_dlq(key, sp, now)
            return E.KAFKA_STORAGE_ERROR
        self._flush_dlq(key, sp, now)
        return E.NONE

    def dlq_done(self, key: ShareKey, first: int, last: int, now: int) -> bool:
        """The DLQ write of ``first..last`` finished (or gave up, as Kafka: \"proceeding to ARCHIVED
        regardless\"): the records are ARCHIVED and written; True if anything changed."""
        sp = self.parts.get(key)
        if sp is None:
            return False
        changed = sp.complete_archiving(first, last)
        if changed:
            self._write_quietly(key, sp, now, changed)
        return bool(changed)

    def _flush_dlq(self, key: ShareKey, sp: SharePartition, now: int) -> None:
        """Hand the runs that became ARCHIVING (already written) to the DLQ writer."""
        if not sp.dlq_out:
            return
        tasks, sp.dlq_out = sp.dlq_out, []
        if self.dlq_sink is not None:
            self.dlq_sink(key, tasks)
            return
        for first, last, _count, _cause in tasks:
            self.dlq_done(key, first, last, now)

    def release(self, group: str, member: str, keys: Iterable[ShareKey] | None = None, now: int = 0) -> list[ShareKey]:
        """A member's share session closed or the member left: its acquired records become available."""
        out = []
        for key in list(keys) if keys is not None else [k for k in self.parts if k.group == group]:
            sp = self.parts.get(key)
            if sp is None or key.group != group:
                continue
            changed = sp.release_member(member)
            if changed:
                self._write_quietly(key, sp, now, changed)
                out.append(key)
        return out

    def next_deadline(self) -> int | None:
        deadlines = [d for d in (sp.next_deadline() for sp in self.parts.values()) if d is not None]
        return min(deadlines) if deadlines else None

    def poll(self, now: int) -> list[ShareKey]:
        """Expire locks due by ``now``; the share-partitions that have records available again."""
        out = []
        for key, sp in list(self.parts.items()):
            d = sp.next_deadline()
            if d is None or d > now:
                continue
            changed = sp.poll(now)
            if changed:
                self._write_quietly(key, sp, now, changed)
                out.append(key)
        return out

    def alter_start(self, key: ShareKey, offset: int, now: int) -> None:
        """AlterShareGroupOffsets: a new state epoch starting at ``offset`` (-1: re-initialise on first use
        from share.auto.offset.reset), written as a snapshot. Raises AppendError."""
        meta = self.meta.get(key)
        ps = self.persisted.get(key)
        if meta is None:
            meta = _Meta(ps.state_epoch, ps.snapshot_epoch, ps.create_ts) if ps is not None else _Meta(create_ts=now)
        meta.state_epoch += 1
        meta.leader_epoch = 0                     # as Kafka's InitializeShareGroupState writes it
        sp = SharePartition(max(offset, 0), (), self.settings(key.group).limits)
        sp.start = offset
        self.meta[key] = meta
        self._snapshot(key, sp, now)
        self.parts.pop(key, None)
        self.persisted[key] = PersistedState(offset, meta.state_epoch, meta.snapshot_epoch, 0, meta.create_ts)

    def reload(self, key: ShareKey, ps: PersistedState | None) -> None:
        """The coordinator's state of ``key`` changed under the share-partition (a raw InitializeShareGroupState,
        WriteShareGroupState, DeleteShareGroupState, or a ReadShareGroupState at a new leader epoch: see
        ``coordinator_state.py``): forget what is cached and initialise from ``ps`` (None: no state) at the
        next use, as Kafka's SharePartition does when its write is fenced."""
        self.parts.pop(key, None)
        self.meta.pop(key, None)
        if ps is None:
            self.persisted.pop(key, None)
            self.snapshot_offsets.pop(key, None)
        else:
            self.persisted[key] = ps
            self.snapshot_offsets[key] = ps.snapshot_offset

    def delete(self, key: ShareKey) -> None:
        """DeleteShareGroupOffsets / a deleted group or topic: tombstones for both record types. Raises
        AppendError."""
        self._append(key, [(encode_key(SNAPSHOT, key), None), (encode_key(UPDATE, key), None)])
        self.parts.pop(key, None)
        self.persisted.pop(key, None)
        self.meta.pop(key, None)
        self.snapshot_offsets.pop(key, None)

    # -- pruning -------------------------------------------------------------------------------
    def load(self, states: dict[ShareKey, PersistedState]) -> None:
        """Take the replayed state (``StateReplay.states``) of the share-partitions not already in use or
        loaded otherwise meanwhile (in a cluster: adopted from the latest state, see ``cluster.adopt``)."""
        for k, st in states.items():
            if k not in self.parts and k not in self.persisted:
                self.persisted[k] = st
                self.snapshot_offsets[k] = st.snapshot_offset

    def prunable(self) -> dict[int, int | None]:
        """Per state-topic partition, the offset below which every record is redundant: the earliest latest
        snapshot of a share-partition living there (Kafka's ``lastRedundantOffset``); None when no
        share-partition lives there (everything so far is redundant). A share-partition whose snapshot
        offset is unknown pins its partition (nothing pruned)."""
        out: dict[int, int | None] = dict.fromkeys(range(self.config.state_partitions))
        pinned: set[int] = set()
        for key in set(self.parts) | set(self.persisted):
            part = self._partition_of(key)
            off = self.snapshot_offsets.get(key, -1)
            if off < 0:
                pinned.add(part)
                continue
            cur = out.get(part)
            out[part] = off if cur is None else min(cur, off)
        for part in pinned:
            out.pop(part, None)
        return out

    # -- persistence ---------------------------------------------------------------------------
    def _partition_of(self, key: ShareKey) -> int:
        part = self._state_partition.get(key)
        if part is None:
            part = self._state_partition[key] = partition_for(key, self.config.state_partitions)
        return part

    def _write_quietly(self, key: ShareKey, sp: SharePartition, now: int, changed: list[StateBatch]) -> None:
        try:
            self._write(key, sp, now, changed)
        except E.AppendError:
            self.meta[key].updates = self.config.updates_per_snapshot   # next write: a whole snapshot
        self._flush_dlq(key, sp, now)

    def _write(self, key: ShareKey, sp: SharePartition, now: int, changed: list[StateBatch]) -> None:
        meta = self.meta[key]
        if meta.updates >= max(self.config.updates_per_snapshot, 1):
            self._snapshot(key, sp, now)
            return
        value = ShareValue(False, max(meta.snapshot_epoch, 0), meta.leader_epoch, sp.start, changed,
                           delivery_complete_count=sp.delivery_complete_count())
        self._append(key, [(encode_key(UPDATE, key), encode_value(value))])
        meta.updates += 1
        meta.last_write = now

    def _append(self, key: ShareKey, records: list[tuple[bytes, bytes | None]], cold: bool = False) -> int | None:
        part = self._partition_of(key)
        offset = self.append(part, records)
        if offset is not None and not cold:
            self.last_offsets[part] = offset + len(records) - 1
        return offset

    def _snapshot(self, key: ShareKey, sp: SharePartition, now: int, cold: bool = False) -> None:
        meta = self.meta[key]
        epoch = meta.snapshot_epoch + 1
        value = ShareValue(True, epoch, meta.leader_epoch, sp.start, sp.persisted_batches(), meta.state_epoch,
                           meta.create_ts or now, now, sp.delivery_complete_count())
        offset = self._append(key, [(encode_key(SNAPSHOT, key), encode_value(value))], cold)
        self.snapshot_offsets[key] = offset if offset is not None else -1
        meta.snapshot_epoch = epoch
        meta.updates = 0
        meta.last_write = now

    def snapshot_cold(self, now: int, interval_ms: int) -> int:
        """Snapshot again the share-partitions idle for ``interval_ms`` whose latest snapshot has later records
        in its state-topic partition (rewriting it moves the pruning frontier of that partition); cold
        snapshots themselves do not count as later records, so a quiet broker rewrites nothing. Loaded
        share-partitions not yet in use count as idle since the load. Returns how many were written; a failed
        write is left for the next round."""
        written = 0
        for key in list(self.parts) + list(self.persisted):
            part = self._partition_of(key)
            snap = self.snapshot_offsets.get(key, -1)
            last = self.last_offsets.get(part)
            if last is None or snap < 0 or snap >= last:
                continue
            meta = self.meta.get(key)
            if meta is not None and now - meta.last_write < interval_ms:
                continue
            try:
                sp = self.parts.get(key)
                if sp is not None:
                    self._snapshot(key, sp, now, cold=True)
                else:
                    self._snapshot_persisted(key, self.persisted[key], now)
            except E.AppendError:
                continue
            written += 1
        return written

    def _snapshot_persisted(self, key: ShareKey, ps: PersistedState, now: int) -> None:
        ps.snapshot_epoch += 1
        value = ShareValue(True, ps.snapshot_epoch, ps.leader_epoch, ps.start, ps.batches(), ps.state_epoch,
                           ps.create_ts or now, now)
        offset = self._append(key, [(encode_key(SNAPSHOT, key), encode_value(value))], cold=True)
        self.snapshot_offsets[key] = ps.snapshot_offset = offset if offset is not None else -1
        ps.updates = 0
