"""Trio glue for share groups: membership (``group.py``), share sessions (``sessions.py``), share-partition
state (``manager.py``) and its topic ``__share_group_state``.

The broker creates ``ShareService(state)`` (``state.shares``), starts it with ``await nursery.start(run)``
and closes it before storage. ``run`` reports started at once, reads ``__share_group_state`` back in a
worker thread (until then share requests answer COORDINATOR_LOAD_IN_PROGRESS), then runs the timer loop
— member session expiry and acquisition-lock expiry — under the broker's supervisor as
``share-coordinator.timers``.

Long polls, as Kafka's ``DelayedShareFetch``: a ShareFetch answers at once when at least MinBytes of records
can be acquired from its partitions (measured on the log from each share-partition's next fetch offset, before
anything is acquired); otherwise it waits — for an append to one of its partitions or for records of its
share-partitions becoming available again (a release, an expired lock, a closed session, a start offset moving),
never on a sleep — and looks again, until MaxWaitMs have passed; then it acquires whatever there is.

Time: as the group coordinator, trio's clock shifted to wall-clock ms (MockClock moves the timers).
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.coordinator.classic.records import build_batch, iter_records
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.runtime import CoordinatorRuntime
from kafkalite.coordinator.share import offsets
from kafkalite.coordinator.share.cluster import ShareClusterLinks, adopt, stale
from kafkalite.coordinator.share.config import STATE_TOPIC, ShareConfig
from kafkalite.coordinator.share.dlq import ShareDlqWriter
from kafkalite.coordinator.share.group import HeartbeatResult, ShareGroupCoordinator
from kafkalite.coordinator.share.logread import aborted_ranges, read_batches
from kafkalite.coordinator.share.manager import NoStartOffset, ShareStateManager
from kafkalite.coordinator.share.membership import MembershipStore
from kafkalite.coordinator.share.partition import INVALID_RECORD_STATE, Acquired, split_acquired
from kafkalite.coordinator.share.records import ShareKey
from kafkalite.coordinator.share.sessions import Context, ShareSessionCache
from kafkalite.coordinator.share.state import StateReplay
from kafkalite.errors import error_code_for
from kafkalite.runtime.close_hooks import on_close
from kafkalite.runtime.supervisor import supervise
from kafkalite_storage.errors import StorageError

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.coordinator.share")

TP = tuple[uuid.UUID, int]
COORDINATOR_LOAD_IN_PROGRESS = 14
UNKNOWN_TOPIC_ID = 100
OFFSET_NOT_AVAILABLE = 78   # by_duration found no record at or after its time (Kafka: OffsetNotAvailableException)


@dataclass(slots=True)
class FetchedPartition:
    error: int = 0
    records: list[Any] = field(default_factory=list)      # file regions (handle, position, length)
    acquired: list[Acquired] = field(default_factory=list)
    leader_epoch: int = 0
    size: int = 0


class _Timers:
    """What TimerLoop drives: member sessions and acquisition locks."""

    def __init__(self, service: ShareService) -> None:
        self.s = service

    def next_deadline(self) -> int | None:
        left = min(self.s._left.values()) if self.s._left else None
        ds = [d for d in (self.s.groups.next_deadline(), self.s.states.next_deadline(), left) if d is not None]
        return min(ds) if ds else None

    def poll(self, now: int) -> None:
        s = self.s
        for group, member in s.groups.poll(now):
            log.info("share group %s: member %s session expired", group, member)
            s.member_gone(group, member, now)
        s.membership.persist()
        for (group, member), due in list(s._left.items()):
            if due <= now:
                del s._left[(group, member)]
                g = s.groups.groups.get(group)
                if g is None or member not in g.members:      # it did not come back
                    s.member_gone(group, member, now)
        if s.states.poll(now):
            s.wake()


class ShareService(CoordinatorRuntime):
    state_topic = STATE_TOPIC
    task_name = "share-coordinator"
    load_failed_message = "share groups start without state"
    logger = log
    state: BrokerState   # a share service always belongs to a broker

    def __init__(self, state: BrokerState, config: ShareConfig | None = None) -> None:
        super().__init__(state)
        self.config = config or ShareConfig.from_broker(getattr(state, "config", None))
        if self.config.group_configs is None and state is not None:
            self.config.group_configs = self._group_configs
        self.groups = ShareGroupCoordinator(self.config, self._topics)
        self.states = ShareStateManager(self.config, self._append)
        self.dlq = ShareDlqWriter(self)      # the share group dead-letter queue (KIP-1191, dlq.py)
        if state is not None:
            self.states.dlq_supported = self._dlq_supported
            self.states.dlq_sink = self.dlq.submit
        self.sessions = ShareSessionCache(self.config.max_sessions)
        self.coordinator = _Timers(self)
        self.loading = True
        self._waiters: set[trio.Event] = set()
        self._left: dict[tuple[str, str], int] = {}     # members that left with a session open -> when to close it
        self._by_conn: dict[int, set[tuple[str, str]]] = {}   # connection id -> (group, member) of sessions it opened
        self.membership = MembershipStore(self)
        self.cluster = ShareClusterLinks.of(state)   # in a kafkalite.cluster (see ``cluster.py``)
        self.adopted: dict[ShareKey, int] = {}       # cluster: share-partition -> leader epoch it was adopted at
        self.adopt_lock = trio.Lock()
        # the share coordinator's view of each __share_group_state partition: (leader epoch, Shard)
        self.shards: dict[int, tuple[int, Any]] = {}
        self.shard_lock = trio.Lock()

    def _group_configs(self, group_id: str) -> Mapping[str, str]:
        """The group's configs (``share.*``) from the broker's group config store, ``state.group_configs(id)``,
        when the broker has one (IncrementalAlterConfigs on GROUP resources); none otherwise."""
        lookup = getattr(self.state, "group_configs", None)
        return lookup(group_id) if callable(lookup) else {}

    def _dlq_supported(self) -> bool:
        """share.version 2 is finalized (Kafka's ShareVersion.supportsShareGroupDLQ)."""
        features = getattr(self.state, "features", None)
        return features is not None and features.finalized().get("share.version", 0) >= 2

    # -- wakeups -------------------------------------------------------------------------------
    def wake(self) -> None:
        """Records became available again somewhere: parked ShareFetches look again."""
        waiters, self._waiters = self._waiters, set()
        for ev in waiters:
            ev.set()

    # -- lifecycle (CoordinatorRuntime) ------------------------------------------------------------
    async def load(self) -> None:
        await self.membership.load()
        replay = StateReplay()

        def feed(data: bytes) -> None:
            for off, key, value in iter_records(data):
                replay.feed(bytes(key), None if value is None else bytes(value), off)

        partitions = await self.read_state_topic(feed)
        if partitions is None:
            return
        self.config.state_partitions = partitions
        # a share-partition adopted while this read ran (a service started on first use) keeps the latest state
        self.states.load({k: v for k, v in replay.states.items() if k not in self.adopted})
        for key in replay.states:
            self.groups.ensure_group(key.group)
        log.info("loaded %d share-partitions of %d share groups from %d %s records", len(replay.states),
                 len({k.group for k in replay.states}), replay.records, STATE_TOPIC)

    def after_load(self) -> None:
        self.loading = False

    async def run_loops(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervise, self.state, "share-coordinator.prune", self._prune_loop)
            nursery.start_soon(supervise, self.state, "share-coordinator.cold-snapshots", self._cold_loop)
            nursery.start_soon(supervise, self.state, "share-coordinator.dlq", self.dlq.run)
            await supervise(self.state, "share-coordinator.timers", self._timers.run)

    def begin_drain(self) -> None:
        self.wake()

    def close(self) -> None:
        self.wake()
        super().close()

    # -- storage -------------------------------------------------------------------------------
    def _overrides(self) -> dict[str, str]:
        # KIP-932's settings for the state topic: deleted, never by time (a snapshot is rewritten regularly)
        return {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
                "segment.bytes": str(self.config.state_segment_bytes)}

    async def ensure_state_topic(self) -> bool:
        return await self.create_state_topic(self.config.state_partitions, self._overrides())

    def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> int | None:
        st = self.state
        if st is None:
            return None
        if STATE_TOPIC not in st.topics:
            try:
                st.topics.ensure(STATE_TOPIC, self.config.state_partitions, self._overrides())
            except (StorageError, OSError) as exc:
                raise E.AppendError(E.UNKNOWN_TOPIC_OR_PARTITION, f"{STATE_TOPIC}: {exc}") from exc
        parts = st.topics[STATE_TOPIC].partitions
        plog = st.get_log(STATE_TOPIC, partition % parts)
        if plog is None:
            raise E.AppendError(E.UNKNOWN_TOPIC_OR_PARTITION, f"{STATE_TOPIC}-{partition} does not exist")
        if st.cluster is not None and not st.leads(STATE_TOPIC, partition % parts):
            peer = self.cluster.peer(STATE_TOPIC, partition % parts) if self.cluster is not None else None
            if peer is None or peer is self:
                raise E.AppendError(E.NOT_LEADER_OR_FOLLOWER, f"{STATE_TOPIC}-{partition} is led by another broker")
            # the share coordinator's write (WriteShareGroupState)
            written: int | None = peer._append(partition, records)
            return written
        now = time.time_ns() // 1_000_000
        try:
            info = plog.append(build_batch(records, now), leader_epoch=0, now_ms=now)
        except StorageError as exc:
            raise E.AppendError(int(error_code_for(exc)), f"{STATE_TOPIC}-{partition}: {exc}") from exc
        return int(info.base_offset)

    def prune(self) -> int:
        """Drop the records of ``__share_group_state`` that no replay needs any more: below the oldest latest
        snapshot of the share-partitions in each of its partitions (as Kafka's share coordinator does with
        DeleteRecords; the topic is never cleaned by time). Returns the partitions whose start moved."""
        st = self.state
        if st is None or STATE_TOPIC not in st.topics or self.cluster is not None:   # see cluster.py
            return 0
        moved = 0
        for part, offset in self.states.prunable().items():
            plog = st.get_log(STATE_TOPIC, part)
            if plog is None:
                continue
            target = plog.log_end_offset if offset is None else min(offset, plog.log_end_offset)
            if target > plog.log_start_offset:
                plog.delete_records_before(target)
                moved += 1
        return moved

    async def _cold_loop(self) -> None:
        """Kafka's cold-partition snapshots (``ShareStateManager.snapshot_cold``), every
        ``share.coordinator.cold.partition.snapshot.interval.ms``."""
        interval = max(self.config.cold_snapshot_interval_ms, 1000)
        while True:
            await trio.sleep(interval / 1000)
            n = self.states.snapshot_cold(self.now_ms(), interval)
            if n:
                log.debug("wrote %d snapshots of idle share-partitions", n)

    async def _prune_loop(self) -> None:
        while True:
            await trio.sleep(max(self.config.prune_interval_ms, 1000) / 1000)
            self.prune()

    # -- topics --------------------------------------------------------------------------------
    def _topics(self) -> Mapping[str, tuple[uuid.UUID, int]]:
        topics = getattr(self.state, "topics", {}) if self.state is not None else {}
        return {n: (i.topic_id, i.partitions) for n, i in topics.items() if not getattr(i, "internal", False)}

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        info = getattr(self.state, "topics_by_id", {}).get(topic_id) if self.state is not None else None
        return None if info is None else str(info.name)

    # -- membership ----------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed: list[str] | None, client_id: str, client_host: str) -> HeartbeatResult:
        if self.loading:
            return HeartbeatResult(COORDINATOR_LOAD_IN_PROGRESS)
        if self.cluster is not None and not self.cluster.owns(group_id):
            return HeartbeatResult(E.NOT_COORDINATOR, "This is not the correct coordinator.")
        now = self.now_ms()
        res = self.groups.heartbeat(now, group_id, member_id, member_epoch, rack_id, subscribed, client_id,
                                    client_host)
        g = self.groups.groups.get(group_id) if not res.error else None
        if g is not None and g.target:
            self.membership.assigned(group_id, {tp for parts in g.target.values() for tp in parts})
        if self.membership.persist() and not res.error:
            res = HeartbeatResult(E.COORDINATOR_NOT_AVAILABLE, "The membership change could not be written.")
        # a member leaving keeps its share session: a closing consumer's last acknowledgements (ShareAcknowledge
        # with epoch -1, on another connection) may still arrive after its leave heartbeat, as in Kafka. A
        # session still open one lock duration later is closed (Kafka closes it when the connection drops)
        if member_epoch == -1 and res.error == E.NONE and (group_id, member_id) in self.sessions.sessions:
            self._left[(group_id, member_id)] = now + self.states.settings(group_id).lock_ms
        self.kick()
        return res

    def member_gone(self, group: str, member: str, now: int) -> None:
        """A member's group session expired (or it left and its share session stayed open a lock duration):
        its share session closes and its acquired records are released as when its connection closes
        (Kafka's ShareGroupListener.onMemberLeave)."""
        session = self.sessions.remove(group, member)
        keys = [ShareKey(group, tid, p) for tid, p in session.partitions] if session is not None else None
        if self.states.release(group, member, keys, now):
            self.wake()

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.groups.groups

    def list_groups(self, states: list[str] | None, types: list[str] | None) -> list[dict[str, str]]:
        """ListGroups rows of share groups (protocol type and group type "share"; state Empty or Stable)."""
        wanted_states = {s.lower() for s in states or []}
        wanted_types = {t.lower() for t in types or []}
        if wanted_types and "share" not in wanted_types:
            return []
        # in a cluster every broker replays its replica of __consumer_offsets: only the coordinator lists a group
        return [{"group_id": g.group_id, "protocol_type": "share", "group_state": g.state, "group_type": "share"}
                for g in self.groups.groups.values() if (not wanted_states or g.state.lower() in wanted_states)
                and (self.cluster is None or self.cluster.owns(g.group_id))]

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups of a share group: refused while it has members; its state records are tombstoned."""
        err = self.groups.delete(group_id)
        if err:
            return err
        self.membership.group_deleted(group_id)
        for key in self.states.keys(group_id):
            try:
                self.states.delete(key)
            except E.AppendError:
                return E.UNKNOWN_SERVER_ERROR
        return E.NONE

    def on_topic_deleted(self, topic_id: uuid.UUID) -> None:
        """A deleted topic's share-partition state goes too (tombstones), as Kafka deletes it; members drop the
        topic's partitions at their next heartbeat."""
        for key in [k for k in self.states.keys(None) if k.topic_id == topic_id]:
            try:
                self.states.delete(key)
            except E.AppendError as exc:
                log.warning("could not delete the share state of %s: %s", key, exc)
        self.membership.topic_deleted(topic_id)
        for s in self.sessions.sessions.values():
            for tp in [tp for tp in s.partitions if tp[0] == topic_id]:
                del s.partitions[tp]

    # -- ShareFetch / ShareAcknowledge ---------------------------------------------------------
    def open_fetch(self, group: str, member: str, epoch: int, add: Sequence[TP], forget: Sequence[TP],
                   has_acks: bool, conn_id: int = 0) -> Context:
        ctx = self.sessions.fetch_context(group, member, epoch, add, forget, has_acks, self.now_ms(), conn_id)
        if ctx.replaced is not None:
            self._release_session(ctx.replaced)
        if epoch == 0 and ctx.session is not None and conn_id:
            keys = self._by_conn.get(conn_id)
            if keys is None:
                keys = self._by_conn[conn_id] = set()
                on_close(conn_id, lambda: self.connection_closed(conn_id))
            keys.add((group, member))
        return ctx

    def connection_closed(self, conn_id: int) -> None:
        """The connection ``conn_id`` closed: the share sessions it opened end and their members' acquired
        records are available at once (Kafka's disconnect listener -> ``onMemberLeave`` -> release; see
        ``SharePartition.release_member`` for the delivery count). Sessions since reopened elsewhere stay."""
        for group, member in self._by_conn.pop(conn_id, ()):
            s = self.sessions.sessions.get((group, member))
            if s is not None and s.conn_id == conn_id:
                log.debug("share group %s: member %s's connection closed; its share session ends", group, member)
                self.sessions.remove(group, member)
                self._release_session(s)

    def open_ack(self, group: str, member: str, epoch: int) -> Context:
        return self.sessions.ack_context(group, member, epoch, self.now_ms())

    def close_session(self, ctx: Context) -> None:
        """After a request with epoch -1 was answered: the session goes, its records are released."""
        s = ctx.session
        if s is not None and self.sessions.sessions.get((s.group, s.member)) is s:
            self.sessions.remove(s.group, s.member)
            self._release_session(s)
            keys = self._by_conn.get(s.conn_id)
            if keys is not None:
                keys.discard((s.group, s.member))

    def _release_session(self, s: Any) -> None:
        keys = [ShareKey(s.group, tid, p) for tid, p in s.partitions]
        if self.states.release(s.group, s.member, keys, self.now_ms()):
            self.wake()

    def acknowledge(self, group: str, member: str, acks: Mapping[TP, list[tuple[int, int, list[int]]]],
                    allow_renew: bool = False) -> dict[TP, int]:
        now = self.now_ms()
        out: dict[TP, int] = {}
        for (tid, p), batches in acks.items():
            name = self.topic_name(tid)
            if name is None:
                out[(tid, p)] = UNKNOWN_TOPIC_ID
                continue
            if p < 0 or p >= self.state.topics[name].partitions:
                out[(tid, p)] = E.UNKNOWN_TOPIC_OR_PARTITION
                continue
            if self.cluster is not None and not self.cluster.leads(name, p):
                out[(tid, p)] = E.NOT_LEADER_OR_FOLLOWER
                continue
            if stale(self, ShareKey(group, tid, p)):    # acquired under an earlier leadership (cluster.py)
                out[(tid, p)] = INVALID_RECORD_STATE
                continue
            out[(tid, p)] = self.states.acknowledge(ShareKey(group, tid, p), member, batches, now,
                                                    allow_renew=allow_renew)
        self.wake()   # released records are available; an advanced start may make room
        self.kick()
        return out

    def _share_partition(self, key: ShareKey, now: int, log_start: int, end: int, plog: Any = None) -> Any:
        """The share-partition, initialised on first use (then listed in ShareGroupStatePartitionMetadata).
        Raises AppendError, or NoStartOffset (by_duration found no record in ``plog``)."""
        fresh = key not in self.states.parts

        def offset_for_time(ts: int) -> int | None:
            # READ_UNCOMMITTED as Kafka's ShareFetchUtils.offsetForTimestamp; only records below ``end``
            found = plog.offset_for_timestamp(ts) if plog is not None else None
            return found[0] if found is not None and found[0] < end else None

        sp = self.states.partition(key, now, log_start, end, offset_for_time)
        if fresh:
            self.membership.initialized(key.group, key.topic_id, key.partition)
        return sp

    def _acquirable_bytes(self, group: str, tid: uuid.UUID, p: int, now: int, limit: int) -> int:
        """About how many bytes of records ``group`` could acquire from the partition now (up to ``limit``):
        the log's bytes from the share-partition's next fetch offset (Kafka's ``isMinBytesSatisfied``); on
        anything unusual ``limit``, so that the fetch goes on and reports it."""
        st = self.state
        name = self.topic_name(tid)
        if name is None or not 0 <= p < st.topics[name].partitions:
            return limit
        plog = st.get_log(name, p)
        if plog is None or (self.cluster is not None and not self.cluster.leads(name, p)):
            return limit
        if stale(self, ShareKey(group, tid, p)):
            return 0
        end = plog.last_stable_offset if self.states.settings(group).read_committed else plog.high_watermark
        try:
            sp = self._share_partition(ShareKey(group, tid, p), now, plog.log_start_offset, end, plog)
            if not sp.has_available(end):
                return 0
            offset = max(sp.fetch_offset(), plog.log_start_offset)
            if offset >= end:
                return 0
            have = sum(r[2] for r in plog.read(offset, limit, min_one=True))
            # reads stop before a whole batch that would pass ``limit``: then ask for everything (no header
            # scan: a read reaching a segment's end only takes positions)
            return have if have >= limit else sum(r[2] for r in plog.read(offset, 0x7FFFFFFF, min_one=True))
        except (E.AppendError, StorageError, NoStartOffset):
            return limit

    def _fetch_one(self, group: str, member: str, tid: uuid.UUID, p: int, max_records: int, max_bytes: int,
                   now: int, record_limit: bool = False, batch_size: int = 0) -> FetchedPartition:
        st = self.state
        name = self.topic_name(tid)
        if name is None:
            return FetchedPartition(UNKNOWN_TOPIC_ID)
        plog = st.get_log(name, p) if 0 <= p < st.topics[name].partitions else None
        if plog is None:
            return FetchedPartition(E.UNKNOWN_TOPIC_OR_PARTITION)
        if self.cluster is not None and not self.cluster.leads(name, p):
            return FetchedPartition(E.NOT_LEADER_OR_FOLLOWER)
        epoch = st.leader_epoch_of(name, p)
        if stale(self, ShareKey(group, tid, p)):   # not initialised from the latest state yet (cluster.py)
            return FetchedPartition(leader_epoch=epoch)
        settings = self.states.settings(group)
        committed = settings.read_committed
        end = plog.last_stable_offset if committed else plog.high_watermark
        key = ShareKey(group, tid, p)
        try:
            sp = self._share_partition(key, now, plog.log_start_offset, end, plog)
        except E.AppendError as exc:
            log.warning("share-partition %s could not be initialised: %s", key, exc)
            return FetchedPartition(E.KAFKA_STORAGE_ERROR, leader_epoch=epoch)
        except NoStartOffset as exc:
            log.info("%s (share.auto.offset.reset=by_duration): OFFSET_NOT_AVAILABLE", exc)
            return FetchedPartition(OFFSET_NOT_AVAILABLE, leader_epoch=epoch)
        offset = sp.fetch_offset()
        if offset >= end or max_records <= 0:
            return FetchedPartition(leader_epoch=epoch)
        try:
            # batches starting past end-of-window + MaxRecords cannot be needed: their headers are not read
            batches = read_batches(plog, max(offset, plog.log_start_offset), min(end, sp.end + max_records),
                                   max_bytes)
        except StorageError as exc:
            return FetchedPartition(int(error_code_for(exc)), leader_epoch=epoch)
        aborted = aborted_ranges(plog, offset, end) if committed else []
        got, used = self.states.acquire(key, member, batches, max_records, now, aborted, record_limit)
        if batch_size > 0 and not record_limit:
            got = split_acquired(got, used, batch_size)
        regions = [b.ref for b in used]
        self.kick()
        return FetchedPartition(0, regions, got, epoch, sum(r[2] for r in regions))

    async def fetch(self, group: str, member: str, partitions: Sequence[TP], *, max_records: int,
                    max_bytes: int, max_wait_ms: int, record_limit: bool = False, min_bytes: int = 1,
                    batch_size: int = 0) -> dict[TP, FetchedPartition]:
        """Acquire records for ``member`` from ``partitions`` (the session's), waiting up to ``max_wait_ms``
        while there is nothing to hand out or less than ``min_bytes`` of it. ``batch_size`` (ShareFetch
        BatchSize) splits newly acquired records into AcquiredRecords ranges of about that many records."""
        st = self.state
        await self.ensure_state_topic()
        deadline = trio.current_time() + max(max_wait_ms, 0) / 1000
        max_records = max_records if max_records > 0 else 500
        max_bytes = max_bytes if max_bytes > 0 else 0x7FFFFFFF
        names = [(self.topic_name(tid), p) for tid, p in partitions]
        log_keys = [(n, p) for n, p in names if n is not None]
        if st.logs.pending_loads:
            await st.ensure_loaded(log_keys)
        keys = [ShareKey(group, tid, p) for tid, p in partitions]
        while True:
            if self.cluster is not None:
                await adopt(self, keys)   # share-partitions this broker newly leads: from the latest state
            now = self.now_ms()
            if min_bytes > 1 and log_keys and not st.purgatory.draining and trio.current_time() < deadline:
                have = 0
                for tid, p in partitions:
                    have += self._acquirable_bytes(group, tid, p, now, min_bytes - have)
                    if have >= min_bytes:
                        break
                if have < min_bytes:
                    await self._wait(log_keys, deadline)
                    continue
            out: dict[TP, FetchedPartition] = {}
            records_left, bytes_left = max_records, max_bytes
            for tp in partitions:
                res = self._fetch_one(group, member, tp[0], tp[1], records_left, bytes_left, now, record_limit,
                                      batch_size)
                out[tp] = res
                records_left -= sum(a.last - a.first + 1 for a in res.acquired)
                bytes_left = max(bytes_left - res.size, 1)
            # OFFSET_NOT_AVAILABLE (by_duration, no record yet) waits like an empty partition and is answered at
            # MaxWaitMs: answered at once, clients re-send at once (librdkafka: thousands a second)
            if any(r.acquired or r.error not in (0, OFFSET_NOT_AVAILABLE) for r in out.values()) or not log_keys \
                    or st.purgatory.draining:
                return out
            if trio.current_time() >= deadline:
                return out
            await self._wait(log_keys, deadline)

    async def _wait(self, log_keys: list[tuple[str, int]], deadline: float) -> None:
        """Until an append to one of the partitions, records available again (``wake``), or the deadline."""
        st = self.state
        ev = st.purgatory.append_waiter(log_keys)
        self._waiters.add(ev)
        try:
            with trio.move_on_at(deadline):
                await ev.wait()
        finally:
            st.purgatory.drop_waiter(log_keys, ev)
            self._waiters.discard(ev)

    # -- share group offsets (admin): offsets.py ---------------------------------------------
    async def describe_offsets(self, group: str, partitions: Sequence[TP] | None) -> list[tuple[TP, int, int]]:
        await offsets.adopt_at_owners(self, offsets.keys_of(self, group, partitions))
        return offsets.describe_offsets(self, group, partitions)

    def alter_offsets(self, group: str, to: Mapping[TP, int]) -> tuple[int, dict[TP, int]]:
        return offsets.alter_offsets(self, group, to)

    def delete_offsets(self, group: str, topic_ids: Sequence[uuid.UUID]) -> tuple[int, dict[uuid.UUID, int]]:
        return offsets.delete_offsets(self, group, topic_ids)
