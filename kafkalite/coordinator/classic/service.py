"""Trio glue around the pure :class:`GroupCoordinator`.

The broker creates ``GroupService(state)``, starts it with ``await nursery.start(state.groups.run)``
and calls ``state.groups.close()`` (synchronous; the result may also be awaited) before storage
closes. ``run`` reports started at once; until the ``__consumer_offsets`` partitions have been read
back the coordinator answers COORDINATOR_LOAD_IN_PROGRESS (Heartbeat: NONE; SyncGroup:
REBALANCE_IN_PROGRESS), as Kafka does while it loads a partition it just became leader of.

Then ``run`` is the timer loop: it sleeps until the coordinator's ``next_deadline()`` or until a
request changed the state (``_kick``), and calls ``poll``. JoinGroup/SyncGroup handlers await the
:class:`Pending` the coordinator returns (an event, never a sleep).

Time: the coordinator's ``now_ms`` is trio's clock shifted to wall-clock milliseconds at start, so
timers follow ``trio.testing.MockClock`` in tests while commit timestamps stay wall-clock.

Storage: records are appended synchronously (page cache, as the broker's Produce path does), as one
uncompressed batch per coordinator write, to ``__consumer_offsets-<abs(hash(group)) % 50>``; the topic
is created (compacted, internal) on first use, like Kafka creates it on the first FindCoordinator.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import JoinResult, Member, OffsetAndMetadata, Pending, SyncResult
from kafkalite.coordinator.classic.loader import StateLoader
from kafkalite.coordinator.classic.records import (
    build_batch,
    encode_offset_key,
    encode_offset_value,
    iter_entries,
)
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import OFFSETS_TOPIC, GroupConfig
from kafkalite.coordinator.common.runtime import CoordinatorRuntime
from kafkalite.coordinator.consumer.records import consumer_split
from kafkalite.coordinator.streams.records import streams_split
from kafkalite.errors import error_code_for
from kafkalite.runtime.supervisor import supervise
from kafkalite_storage.errors import StorageError

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger("kafkalite.coordinator")

class _Done:
    """A no-op awaitable so ``await service.close()`` works as well as ``service.close()``."""

    def __await__(self):  # type: ignore[no-untyped-def]
        return iter(())


class GroupService(CoordinatorRuntime):
    state_topic = OFFSETS_TOPIC
    task_name = "group-coordinator"
    load_failed_message = "starting with an empty coordinator"
    logger = log

    def __init__(self, state: BrokerState | None, config: GroupConfig | None = None) -> None:
        super().__init__(state)
        if config is None:
            config = GroupConfig.from_mapping(state.config) if state is not None and \
                getattr(state, "config", None) is not None else GroupConfig()
        self.config = config
        self.coordinator = GroupCoordinator(config, self._append)
        self.coordinator.loading = True
        from kafkalite.coordinator.consumer.service import ConsumerGroupService  # (it imports this module)
        self.consumer = ConsumerGroupService(self)   # KIP-848 groups (kafkalite/coordinator/consumer/)
        self.coordinator.consumer_group_topics = self.consumer.subscribed_topics
        # TxnOffsetCommit checks a consumer group's members, and refuses a share group's id
        self.coordinator.consumer_txn_offset_error = self.consumer.coordinator.txn_offset_commit_error
        self.coordinator.is_share_group = self._is_share_group
        from kafkalite.coordinator.streams.service import StreamsGroupService  # (it imports this module)
        self.streams = StreamsGroupService(self)     # KIP-1071 groups (kafkalite/coordinator/streams/)
        self.coordinator.consumer_txn_offset_error = self._txn_offset_error

    def _txn_offset_error(self, group_id: str, member_id: str, instance_id: str | None, member_epoch: int,
                          partitions: list[tuple[str, int]]) -> int | None:
        err = self.consumer.coordinator.txn_offset_commit_error(group_id, member_id, instance_id, member_epoch,
                                                                partitions)
        if err is None:
            err = self.streams.coordinator.offset_commit_error(group_id, member_id, member_epoch, transactional=True)
        return err

    def _is_share_group(self, group_id: str) -> bool:
        shares = getattr(self.state, "shares", None)   # (started after this service, on first use)
        return shares is not None and bool(shares.is_share_group(group_id))

    def _kick(self) -> None:
        self.kick()

    # -- lifecycle (CoordinatorRuntime) ------------------------------------------------------------
    async def load(self) -> None:
        consumer_records: list[tuple[bytes, bytes | None]] = []
        streams_records: list[tuple[bytes, bytes | None]] = []
        loader = StateLoader()
        partitions = await self.read_state_topic(
            lambda data: loader.feed_entries(streams_split(consumer_split(iter_entries(data), consumer_records),
                                                           streams_records)))
        if partitions is None:
            return
        # an existing topic decides the partition count (as in Kafka), whatever the config says now
        self.config.offsets_topic_num_partitions = partitions
        self.coordinator.groups = loader.build(self.now_ms())
        self.consumer.coordinator.load(consumer_records, self.now_ms())
        self.streams.coordinator.load(streams_records, self.now_ms())
        log.info("loaded %d groups from %d %s records", len(self.coordinator.groups), loader.records,
                 OFFSETS_TOPIC)

    def load_failed(self) -> None:
        self.coordinator.groups = {}

    def after_load(self) -> None:
        self.coordinator.loading = False
        self.consumer.coordinator.loading = False
        self.streams.coordinator.loading = False

    async def run_loops(self) -> None:
        # a failing group is reset by the coordinator itself; anything else the loop raises is the
        # supervisor's: logged, recorded, and the loop started again
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervise, self.state, "consumer-group-coordinator.timers", self.consumer.timers.run)
            nursery.start_soon(supervise, self.state, "streams-group-coordinator.timers", self.streams.timers.run)
            await supervise(self.state, "group-coordinator.timers", self._timers.run)

    def close(self) -> _Done:
        """Stop answering and stop the timer loop; parked JoinGroup/SyncGroup get NOT_COORDINATOR."""
        c = self.coordinator
        self.consumer.coordinator.active = False
        self.streams.coordinator.active = False
        if c.active:
            c.active = False
            for g in c.groups.values():
                for m in g.members.values():
                    _fail_member(m)
        super().close()
        return _Done()

    # -- storage -------------------------------------------------------------------------------
    def _offsets_topic_overrides(self) -> dict[str, str]:
        return {"cleanup.policy": "compact", "segment.bytes": str(self.config.offsets_topic_segment_bytes),
                "compression.type": "producer"}

    def ensure_offsets_topic(self) -> None:
        """Create ``__consumer_offsets`` now (blocking; fallback for paths that cannot await)."""
        st = self.state
        if st is None or OFFSETS_TOPIC in st.topics:
            return
        st.topics.ensure(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions, self._offsets_topic_overrides())
        self._follow_topic_partitions()

    async def ensure_offsets_topic_async(self) -> bool:
        """Create ``__consumer_offsets`` if needed, its 50 partition logs in a worker thread (they cost
        a few fsyncs each); concurrent callers wait for the same creation. False if it failed."""
        if not await self.create_state_topic(self.config.offsets_topic_num_partitions,
                                             self._offsets_topic_overrides()):
            return False
        self._follow_topic_partitions()
        return True

    def _follow_topic_partitions(self) -> None:
        """Hash group ids onto the partition count the existing ``__consumer_offsets`` has (as Kafka does:
        ``offsets.topic.num.partitions`` only sizes a topic being created)."""
        info = getattr(self.state, "topics", {}).get(OFFSETS_TOPIC)
        if info is not None and info.partitions > 0 and info.partitions != self.config.offsets_topic_num_partitions:
            log.info("%s has %d partitions (offsets.topic.num.partitions=%d): using %d", OFFSETS_TOPIC,
                     info.partitions, self.config.offsets_topic_num_partitions, info.partitions)
            self.config.offsets_topic_num_partitions = info.partitions

    def _append(self, partition: int, records: list[tuple[bytes, bytes | None]], *, producer_id: int = -1,
                producer_epoch: int = -1) -> int | None:
        """Append one batch to a ``__consumer_offsets`` partition and return its base offset; a failure
        raises :class:`E.AppendError` carrying the log-append error (the coordinator maps it to the
        client's code as Kafka does). Offset-commit batches (key versions 0/1) get base sequence 0 as
        Kafka's GroupMetadataManager writes them; group-metadata batches -1."""
        if self.state is None:
            return None
        try:
            self.ensure_offsets_topic()
        except (StorageError, OSError) as exc:
            raise E.AppendError(E.UNKNOWN_TOPIC_OR_PARTITION, f"{OFFSETS_TOPIC} could not be created: {exc}") from exc
        plog = self.state.get_log(OFFSETS_TOPIC, partition)
        if plog is None:
            raise E.AppendError(E.UNKNOWN_TOPIC_OR_PARTITION, f"{OFFSETS_TOPIC}-{partition} does not exist")
        if getattr(self.state, "cluster", None) is not None and not self.state.leads(OFFSETS_TOPIC, partition):
            raise E.AppendError(E.NOT_LEADER_OR_FOLLOWER, f"{OFFSETS_TOPIC}-{partition} is led by another broker")
        now = time.time_ns() // 1_000_000
        offset_commit = bool(records) and records[0][0][:2] in (b"\x00\x00", b"\x00\x01")
        batch = build_batch(records, now, producer_id=producer_id, producer_epoch=producer_epoch,
                            base_sequence=0 if offset_commit else -1)
        try:
            # a transactional batch is the coordinator's own write: no sequence checks (validate_producer=False)
            info = plog.append(batch, leader_epoch=0, now_ms=now, validate_producer=producer_id < 0)
        except StorageError as exc:
            raise E.AppendError(int(error_code_for(exc)), f"{OFFSETS_TOPIC}-{partition}: {exc}") from exc
        notify = getattr(self.state, "notify_append", None)
        if notify is not None:
            notify(OFFSETS_TOPIC, partition)
        return int(info.base_offset)

    # -- coordinator lookup --------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return self.coordinator.partition_for(group_id)

    # -- group membership ----------------------------------------------------------------------
    def _contain(self, group_id: str, during: str) -> None:
        """A request failed inside the coordinator: only its group is reset (see coordinator.py), the
        request is answered with the code that makes the member rejoin, and the connection stays open."""
        self.coordinator.contain_failure(group_id, self.now_ms(), during)
        self._kick()

    async def _await(self, pending: Pending[Any]) -> Any:
        if not pending.done:
            ev = trio.Event()
            pending.add_done_callback(lambda _r: ev.set())
            await ev.wait()
        return pending.result

    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                         protocol_type: str, protocols: list[tuple[str, bytes]], *,
                         require_known_member_id: bool, support_skip_assignment: bool = False,
                         reason: str | None = None) -> JoinResult:
        await self.ensure_offsets_topic_async()
        now = self.now_ms()
        if self.consumer.serves_classic(group_id, joining=True):   # a consumer group's classic member
            return self.consumer.classic_join(group_id, member_id, group_instance_id, client_id, client_host,
                                              rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                              require_known_member_id)
        if group_id in self.streams.coordinator.groups:   # Kafka 4.4: a streams group takes no classic member
            return JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, "")
        self.consumer.coordinator.remove_empty(group_id)   # an empty consumer group converts back to classic
        try:
            p = self.coordinator.join_group(now, group_id, member_id, group_instance_id, client_id, client_host,
                                            rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                            require_known_member_id=require_known_member_id,
                                            support_skip_assignment=support_skip_assignment, reason=reason)
            self.coordinator.poll(now)
        except Exception:
            self._contain(group_id, "JoinGroup")
            return JoinResult(E.UNKNOWN_MEMBER_ID, "")
        self._kick()
        return await self._await(p)  # type: ignore[no-any-return]

    async def sync_group(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        if self.consumer.serves_classic(group_id):
            return self.consumer.classic_sync(group_id, generation_id, member_id, group_instance_id, protocol_type,
                                              protocol_name)
        try:
            p = self.coordinator.sync_group(self.now_ms(), group_id, generation_id, member_id, group_instance_id,
                                            protocol_type, protocol_name, assignments)
        except Exception:
            self._contain(group_id, "SyncGroup")
            return SyncResult(E.UNKNOWN_MEMBER_ID)
        self._kick()
        return await self._await(p)  # type: ignore[no-any-return]

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> int:
        if self.consumer.serves_classic(group_id):
            err = self.consumer.classic_heartbeat(group_id, member_id, group_instance_id, generation_id)
        else:
            try:
                err = self.coordinator.heartbeat(self.now_ms(), group_id, member_id, group_instance_id,
                                                 generation_id)
            except Exception:
                self._contain(group_id, "Heartbeat")
                return E.UNKNOWN_MEMBER_ID
            self._kick()
        if err and log.isEnabledFor(logging.DEBUG):
            log.debug("group %s: member %s heartbeat at generation %d answered %d", group_id, member_id,
                      generation_id, err)
        return err

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        if self.consumer.serves_classic(group_id):
            return self.consumer.classic_leave(group_id, members)
        try:
            out = self.coordinator.leave_group(self.now_ms(), group_id, members)
        except Exception:
            self._contain(group_id, "LeaveGroup")   # the reset removed every member: the leave happened
            return E.NONE, [E.NONE for _ in members]
        self._kick()
        return out

    # -- offsets and administration ------------------------------------------------------------
    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int,
                       offsets: dict[tuple[str, int], OffsetAndMetadata],
                       version: int = 9) -> dict[tuple[str, int], int]:
        refused: dict[tuple[str, int], int] = {}
        errs = self.consumer.coordinator.offset_commit_errors(group_id, member_id, generation_id, version,
                                                              list(offsets))
        if errs is None:   # a streams group member's commit (StreamsGroup.validateOffsetCommit)
            serr = self.streams.coordinator.offset_commit_error(group_id, member_id, generation_id)
            errs = None if serr is None else dict.fromkeys(offsets, serr)
        if errs is not None:   # a consumer group member's commit: stored as a simple commit of the group
            refused = {tp: e for tp, e in errs.items() if e}
            offsets = {tp: om for tp, om in offsets.items() if tp not in refused}
            if log.isEnabledFor(logging.DEBUG):
                log.debug("consumer group %s: member %s epoch %d commits %s refused %s", group_id, member_id,
                          generation_id, " ".join(f"{t}:{p}@{om.offset}" for (t, p), om in sorted(offsets.items())),
                          " ".join(f"{t}:{p}={e}" for (t, p), e in sorted(refused.items())) or "-")
            if not offsets:
                return refused
            member_id, group_instance_id, generation_id = "", None, -1
        try:
            out = self.coordinator.commit_offsets(self.now_ms(), group_id, member_id, group_instance_id,
                                                  generation_id, offsets)
        except Exception:
            self._contain(group_id, "OffsetCommit")
            err = E.UNKNOWN_MEMBER_ID if generation_id >= 0 else E.UNKNOWN_SERVER_ERROR
            return dict.fromkeys(offsets, err) | refused
        if errs is None and log.isEnabledFor(logging.DEBUG):   # a classic group's commit and its answer
            log.debug("group %s: member %s generation %d commits %s", group_id, member_id, generation_id,
                      " ".join(f"{t}:{p}@{om.offset}={out.get((t, p))}" for (t, p), om in sorted(offsets.items())))
        self._kick()
        return out | refused

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                      require_stable: bool = False) -> tuple[int, list[tuple[str, int, OffsetAndMetadata | None, int]]]:
        return self.coordinator.fetch_offsets(self.now_ms(), group_id, partitions, require_stable)

    def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        consumer: dict[str, int] = {}
        for gid in group_ids:
            err = self.consumer.coordinator.delete_group(gid)
            if err is None:
                err = self.streams.coordinator.delete_group(gid)
            if err is not None:
                consumer[gid] = err
        classic = [g for g in group_ids if consumer.get(g, 0) == 0]
        out = self.coordinator.delete_groups(self.now_ms(), classic) if classic else {}
        for gid, err in consumer.items():   # a deleted consumer group's offsets went with the classic shell
            out[gid] = err if err else (0 if out.get(gid) in (0, E.GROUP_ID_NOT_FOUND) else out[gid])
        self._kick()
        return out

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]) -> tuple[int, dict[tuple[str, int], int]]:
        subscribed = self.consumer.subscribed_names(group_id)
        if subscribed is not None:   # a consumer group: its subscribed topics' offsets stay (Kafka's rule)
            allowed = [tp for tp in partitions if tp[0] not in subscribed]
            err, out = self.coordinator.delete_offsets(self.now_ms(), group_id, allowed) if allowed else (E.NONE, {})
            if err == E.GROUP_ID_NOT_FOUND:   # no offsets at all: nothing to delete, the group exists
                err, out = E.NONE, dict.fromkeys(allowed, E.NONE)
            out.update({tp: E.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions if tp[0] in subscribed})
            self._kick()
            return err, out
        result = self.coordinator.delete_offsets(self.now_ms(), group_id, partitions)
        self._kick()
        return result

    def describe_group(self, group_id: str) -> tuple[int, dict[str, Any] | None]:
        if group_id in self.consumer.coordinator.groups or group_id in self.streams.coordinator.groups:   # "not a classic group": Dead (v6: GROUP_ID_NOT_FOUND)
            return E.NONE, None
        return self.coordinator.describe_group(group_id)

    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> tuple[int, list[dict[str, str]]]:
        err, groups = self.coordinator.list_groups(states, types)
        consumer = self.consumer.coordinator
        streams = self.streams.coordinator
        groups = [g for g in groups if g["group_id"] not in consumer.groups and g["group_id"] not in streams.groups]
        groups += consumer.list_groups({s.lower() for s in states or []}, {t.lower() for t in types or []})
        groups += streams.list_groups({s.lower() for s in states or []}, {t.lower() for t in types or []})
        return err, groups

    def on_topics_deleted(self, topics: list[str]) -> None:
        """For the broker's topic deletion: committed offsets of deleted topics are removed, as Kafka does."""
        if self.coordinator.remove_topic_offsets(self.now_ms(), set(topics)):
            self._kick()

    # -- transactions (for the transaction coordinator) ----------------------------------------
    def txn_commit_offsets(self, group_id: str, producer_id: int, member_id: str, group_instance_id: str | None,
                           generation_id: int, offsets: dict[tuple[str, int], OffsetAndMetadata],
                           producer_epoch: int = -1) -> dict[tuple[str, int], int]:
        """Accepted offsets stay pending in memory and are written at once to ``__consumer_offsets`` as a
        transactional batch of the producer (as Kafka does), so a restart before the transaction's marker
        brings them back pending, and the COMMIT marker applies them on the next load."""
        out = self.coordinator.txn_commit_offsets(self.now_ms(), group_id, producer_id, member_id,
                                                  group_instance_id, generation_id, offsets)
        accepted = {tp: om for tp, om in offsets.items() if out.get(tp) == E.NONE}
        if accepted and self.state is not None:
            records: list[tuple[bytes, bytes | None]] = [
                (encode_offset_key(group_id, t, p), encode_offset_value(om)) for (t, p), om in accepted.items()]
            try:
                base = self._append(self.coordinator.partition_for(group_id), records,
                                    producer_id=producer_id, producer_epoch=producer_epoch)
                for om in accepted.values():
                    om.record_offset = self.coordinator._record_offset(base)
            except Exception as exc:
                log.exception("failed to store transactional offsets of group %s", group_id)
                group = self.coordinator.groups.get(group_id)
                pending = group.pending_txn_offsets.get(producer_id, {}) if group is not None else {}
                code = E.offset_write_error(exc)
                for tp in accepted:
                    pending.pop(tp, None)
                    out[tp] = code
        return out

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        self.coordinator.complete_txn(self.now_ms(), producer_id, commit)
        self._kick()


def _fail_member(m: Member) -> None:
    if m.join_pending is not None:
        p, m.join_pending = m.join_pending, None
        p.set(JoinResult(E.NOT_COORDINATOR, m.member_id))
    if m.sync_pending is not None:
        p2, m.sync_pending = m.sync_pending, None
        p2.set(SyncResult(E.NOT_COORDINATOR))
