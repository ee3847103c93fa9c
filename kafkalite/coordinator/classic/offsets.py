"""Committed offsets and the group-administration calls (Kafka's ``GroupMetadataManager`` side).

Mixed into :class:`~kafkalite.coordinator.classic.coordinator.GroupCoordinator`; pure like it.

* OffsetCommit validation is Kafka 3.9's ``validateOffsetCommit``: generation < 0 on an Empty group
  (or no group yet: a "simple" group is created) is accepted without membership; otherwise member id
  (and group.instance.id) must match and the generation must be the current one.
* OffsetFetch answers offsets blindly whatever the group state (a group may use Kafka only to store
  offsets); unknown partitions get offset -1, metadata "" and no error.
* Retention (``offsets.retention.minutes``): an Empty group's offsets expire that long after it became
  Empty; a Stable consumer group's offsets for topics it no longer subscribes to expire that long
  after their commit; a group without protocol type expires per commit; an explicit expire timestamp
  (OffsetCommit v1-v4 retention) wins. An Empty group left without offsets is deleted (tombstone).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalite.coordinator.classic.group import Group, GroupState, Member, OffsetAndMetadata
from kafkalite.coordinator.classic.records import encode_group_key, encode_offset_key, encode_offset_value
from kafkalite.coordinator.common import errors as E

if TYPE_CHECKING:
    from kafkalite.coordinator.common.config import GroupConfig

log = logging.getLogger("kafkalite.coordinator")

S = GroupState
TP = tuple[str, int]


class OffsetsMixin:
    #: topics a live KIP-848 consumer group of that id subscribes to (its offsets are kept here, in a group
    #: without protocol type): they do not expire while it reads them (ConsumerGroup.offsetExpirationCondition)
    consumer_group_topics: Callable[[str], set[str]] = staticmethod(lambda group_id: set())
    #: a TxnOffsetCommit to a KIP-848 consumer group of that id: (group, member, instance, generation, partitions)
    #: -> None when there is none, else the code for the request (0: accepted)
    consumer_txn_offset_error: Callable[[str, str, str | None, int, list[TP]], int | None] = staticmethod(
        lambda group_id, member_id, instance_id, generation_id, partitions: None)
    #: whether a share group (KIP-932) holds that group id
    is_share_group: Callable[[str], bool] = staticmethod(lambda group_id: False)

    # provided by GroupCoordinator (declared here for type checkers)
    config: GroupConfig
    groups: dict[str, Group]
    active: bool
    loading: bool
    _append: Callable[[int, list[tuple[bytes, bytes | None]]], int | None]

    if TYPE_CHECKING:
        def poll(self, now_ms: int) -> None: ...
        def partition_for(self, group_id: str) -> int: ...
        def _validate_group_status(self, group_id: str | None, allow_empty_id: bool = False) -> int | None: ...
        def _get_or_create(self, group_id: str, create: bool, now_ms: int) -> Group | None: ...
        def _validate_current_member(self, group: Group, member_id: str, instance_id: str | None) -> int | None: ...
        def _schedule_heartbeat(self, member: Member, now_ms: int, timeout_ms: int | None = None) -> None: ...

    # -- OffsetCommit --------------------------------------------------------------------------
    def commit_offsets(self, now_ms: int, group_id: str, member_id: str,
                       group_instance_id: str | None, generation_id: int,
                       offsets: dict[TP, OffsetAndMetadata]) -> dict[TP, int]:
        self.poll(now_ms)
        err = self._validate_group_status(group_id, allow_empty_id=True)
        if err is not None:
            return dict.fromkeys(offsets, err)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return dict.fromkeys(offsets, E.ILLEGAL_GENERATION)
            log.info("creating simple group %s through an offset commit", group_id)
            group = self._get_or_create(group_id, True, now_ms)
            assert group is not None
        err = self._validate_offset_commit(group, generation_id, member_id, group_instance_id)
        if err is not None:
            return dict.fromkeys(offsets, err)
        if group.is_(S.COMPLETING_REBALANCE):
            return dict.fromkeys(offsets, E.REBALANCE_IN_PROGRESS)
        if group.is_(S.STABLE, S.PREPARING_REBALANCE) and member_id in group.members:
            self._schedule_heartbeat(group.members[member_id], now_ms)
        return self._store_offsets(group, offsets, now_ms)

    def _validate_offset_commit(self, group: Group, generation_id: int, member_id: str,
                                instance_id: str | None) -> int | None:
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(S.EMPTY):
            return None
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            err = self._validate_current_member(group, member_id, instance_id)
            if err is not None:
                return err
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
            return None
        if not group.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID  # only members may commit to a live group
        return None

    def _store_offsets(self, group: Group, offsets: dict[TP, OffsetAndMetadata],
                       now_ms: int) -> dict[TP, int]:
        result: dict[TP, int] = {}
        records: list[tuple[bytes, bytes | None]] = []
        accepted: dict[TP, OffsetAndMetadata] = {}
        limit = self.config.offset_metadata_max_bytes
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata.encode("utf-8")) > limit:
                result[tp] = E.OFFSET_METADATA_TOO_LARGE
                continue
            accepted[tp] = om
            records.append((encode_offset_key(group.group_id, tp[0], tp[1]), encode_offset_value(om)))
        record_offset = -1
        if records:
            try:
                record_offset = self._record_offset(self._append(self.partition_for(group.group_id), records))
            except Exception as exc:
                log.exception("failed to store offsets of group %s", group.group_id)
                code = E.offset_write_error(exc)
                for tp in accepted:
                    result[tp] = code
                return result
        for tp, om in accepted.items():
            om.record_offset = record_offset
            group.offsets[tp] = om
            result[tp] = E.NONE
        return result

    def _record_offset(self, appended: int | None) -> int:
        """The base offset the append returned; without a log (pure tests) a local counter keeps the
        order of writes, which is all the transactional-offset rule needs."""
        if appended is not None:
            return appended
        self._local_offset = getattr(self, "_local_offset", -1) + 1
        return self._local_offset

    # -- OffsetFetch ---------------------------------------------------------------------------
    def fetch_offsets(self, now_ms: int, group_id: str, partitions: list[TP] | None,
                      require_stable: bool = False) -> tuple[int, list[tuple[str, int, OffsetAndMetadata | None, int]]]:
        """Returns (group error, [(topic, partition, committed or None, partition error)])."""
        self.poll(now_ms)
        err = self._validate_group_status(group_id, allow_empty_id=True)
        if err is not None:
            return err, []
        group = self.groups.get(group_id)
        if group is None or group.is_(S.DEAD):
            return E.NONE, [(t, p, None, E.NONE) for t, p in (partitions or [])]
        pending: set[TP] = set()
        for offs in group.pending_txn_offsets.values():
            pending.update(offs)
        wanted = sorted(group.offsets) if partitions is None else partitions
        out: list[tuple[str, int, OffsetAndMetadata | None, int]] = []
        for tp in wanted:
            if require_stable and tp in pending:
                out.append((tp[0], tp[1], None, E.UNSTABLE_OFFSET_COMMIT))
            else:
                out.append((tp[0], tp[1], group.offsets.get(tp), E.NONE))
        return E.NONE, out

    # -- deletions -----------------------------------------------------------------------------
    def delete_groups(self, now_ms: int, group_ids: list[str]) -> dict[str, int]:
        self.poll(now_ms)
        out: dict[str, int] = {}
        for gid in group_ids:
            err = self._validate_group_status(gid, allow_empty_id=True)
            if err is not None:
                out[gid] = err
                continue
            group = self.groups.get(gid)
            if group is None or group.is_(S.DEAD):
                out[gid] = E.GROUP_ID_NOT_FOUND
            elif group.is_(S.EMPTY):
                group.transition_to(S.DEAD, now_ms)
                removed = list(group.offsets)
                group.offsets.clear()
                out[gid] = self._cleanup(group, removed, now_ms)
            else:
                out[gid] = E.NON_EMPTY_GROUP
        return out

    def delete_offsets(self, now_ms: int, group_id: str,
                       partitions: list[TP]) -> tuple[int, dict[TP, int]]:
        self.poll(now_ms)
        err = self._validate_group_status(group_id)
        if err is not None:
            return err, {}
        group = self.groups.get(group_id)
        if group is None or group.is_(S.DEAD):
            return E.GROUP_ID_NOT_FOUND, {}
        errors: dict[TP, int] = {}
        if group.is_(S.EMPTY):
            eligible = list(partitions)
        elif group.protocol_type == "consumer":
            eligible = [tp for tp in partitions if not group.is_subscribed_to(tp[0])]
            errors.update({tp: E.GROUP_SUBSCRIBED_TO_TOPIC for tp in partitions if group.is_subscribed_to(tp[0])})
        else:
            return E.NON_EMPTY_GROUP, {}
        removed = [tp for tp in eligible if group.offsets.pop(tp, None) is not None]
        if eligible:
            self._cleanup(group, removed, now_ms)
        errors.update(dict.fromkeys(eligible, E.NONE))
        return E.NONE, errors

    def _cleanup(self, group: Group, removed: list[TP], now_ms: int) -> int:
        """Tombstone removed offsets; an Empty group left without offsets dies (tombstoned too)."""
        if group.is_(S.EMPTY) and not group.offsets and not group.pending_txn_offsets:
            group.transition_to(S.DEAD, now_ms)
        records: list[tuple[bytes, bytes | None]] = [
            (encode_offset_key(group.group_id, t, p), None) for t, p in removed]
        if group.is_(S.DEAD):
            if self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
            if group.generation_id > 0:
                records.append((encode_group_key(group.group_id), None))
        if records:
            try:
                self._append(self.partition_for(group.group_id), records)
            except Exception as exc:
                log.exception("failed to write tombstones for group %s", group.group_id)
                return E.group_write_error(exc)
        return E.NONE

    def expire_offsets(self, now_ms: int) -> int:
        """Offsets retention (Kafka's cleanupGroupMetadata), group by group: a failure in one group is logged
        with its traceback and that group is skipped until the next check; the others are expired."""
        total = 0
        for group in list(self.groups.values()):
            try:
                total += self._expire_group_offsets(group, now_ms)
            except Exception:
                log.exception("expiring the offsets of group %s failed; skipped until the next check",
                              group.group_id)
        if total:
            log.info("expired %d committed offsets", total)
        return total

    def _expire_group_offsets(self, group: Group, now_ms: int) -> int:
        retention = self.config.offsets_retention_ms
        total = 0
        pending: set[TP] = set()
        for offs in group.pending_txn_offsets.values():
            pending.update(offs)

        def expired(base_ts: Any, skip_topics: set[str], group: Group = group,
                    pending: set[TP] = pending) -> list[TP]:
            out = []
            for tp, om in group.offsets.items():
                if tp[0] in skip_topics or tp in pending:
                    continue
                if om.expire_timestamp is not None:
                    if now_ms >= om.expire_timestamp:
                        out.append(tp)
                elif now_ms - base_ts(om) >= retention:
                    out.append(tp)
            return out

        if group.protocol_type and group.is_(S.EMPTY):
            victims = expired(lambda om, g=group: g.state_timestamp, set())
        elif group.protocol_type == "consumer" and group.subscribed_topics is not None \
                and group.is_(S.STABLE):
            victims = expired(lambda om: om.commit_timestamp, group.subscribed_topics)
        elif not group.protocol_type:
            victims = expired(lambda om: om.commit_timestamp, self.consumer_group_topics(group.group_id))
        else:
            victims = []
        for tp in victims:
            del group.offsets[tp]
        if victims or (group.is_(S.EMPTY) and not group.offsets):
            total += len(victims)
            self._cleanup(group, victims, now_ms)
        return total

    def remove_topic_offsets(self, now_ms: int, topics: set[str]) -> int:
        """A topic was deleted: drop (and tombstone) every group's offsets for it (handleDeletedPartitions)."""
        total = 0
        for group in list(self.groups.values()):
            removed = [tp for tp in group.offsets if tp[0] in topics]
            for tp in removed:
                del group.offsets[tp]
            if removed:
                total += len(removed)
                self._cleanup(group, removed, now_ms)
        return total

    # -- transactional offsets (TxnOffsetCommit; completed by the transaction markers) -------------
    def txn_commit_offsets(self, now_ms: int, group_id: str, producer_id: int,
                           member_id: str, group_instance_id: str | None, generation_id: int,
                           offsets: dict[TP, OffsetAndMetadata]) -> dict[TP, int]:
        """Kafka 4.x's ``OffsetMetadataManager.validateTransactionalOffsetCommit``, for every group type: a share
        group's id is GROUP_ID_NOT_FOUND; a KIP-848 consumer group validates the member and its member epoch
        (``ConsumerGroupCoordinator.txn_offset_commit_error``) and keeps the offsets with its other offsets (a
        group without protocol type here); a classic group validates as ``_validate_txn_offset_commit``; an
        unknown group id is created as a simple group for generation < 0, else ILLEGAL_GENERATION. A refusal
        covers the whole request. Accepted offsets stay pending until the transaction's marker."""
        self.poll(now_ms)
        err = self._validate_group_status(group_id)
        if err is None and self.is_share_group(group_id):
            err = E.GROUP_ID_NOT_FOUND   # ShareGroup.validateOffsetCommit: "not a consumer group"
        if err is None:
            err = self.consumer_txn_offset_error(group_id, member_id, group_instance_id, generation_id,
                                                 list(offsets))
            if err == E.NONE:   # a consumer group's member (or no member given): stored as a simple commit
                member_id, group_instance_id, generation_id = "", None, -1
                err = None
        if err is not None:
            return dict.fromkeys(offsets, err)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return dict.fromkeys(offsets, E.ILLEGAL_GENERATION)
            group = self._get_or_create(group_id, True, now_ms)
            assert group is not None
        err = self._validate_txn_offset_commit(group, generation_id, member_id, group_instance_id)
        if err is not None:
            return dict.fromkeys(offsets, err)
        group.pending_txn_offsets.setdefault(producer_id, {}).update(offsets)
        return dict.fromkeys(offsets, E.NONE)

    def _validate_txn_offset_commit(self, group: Group, generation_id: int, member_id: str,
                                    instance_id: str | None) -> int | None:
        """ClassicGroup.validateOffsetCommit with isTransactional: an Empty group takes generation < 0; a member
        id, instance id or generation given must name the current member (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID
        for a static instance now held by another member id) at the current generation (ILLEGAL_GENERATION);
        none given is accepted in any state (TxnOffsetCommit v0-v2 carry none), and a rebalance in progress
        does not refuse it."""
        if group.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(S.EMPTY):
            return None
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            err = self._validate_current_member(group, member_id, instance_id)
            if err is None and generation_id != group.generation_id:
                err = E.ILLEGAL_GENERATION
            return err
        return None

    def complete_txn(self, now_ms: int, producer_id: int, commit: bool) -> None:
        """Apply (commit) or drop (abort) a producer's pending transactional offsets in every group.

        Kafka 3.9's ``GroupMetadata.completePendingTxnOffsetCommit``: nothing is written here (the
        transaction's offset records are already in the log as a transactional batch, and the COMMIT
        marker the transaction coordinator wrote next to them is what makes them count, also on reload);
        a pending offset replaces the current one only if the current one's record is older in the log
        (``olderThan``: base offsets compared), so a plain OffsetCommit written after the TxnOffsetCommit
        survives the transaction's commit."""
        for group in list(self.groups.values()):
            offs = group.pending_txn_offsets.pop(producer_id, None)
            if offs and commit:
                for tp, om in offs.items():
                    cur = group.offsets.get(tp)
                    if cur is None or cur.record_offset < om.record_offset:
                        group.offsets[tp] = om
            elif group.is_(S.EMPTY) and not group.offsets and not group.pending_txn_offsets:
                self._cleanup(group, [], now_ms)

    # -- describe / list -----------------------------------------------------------------------
    def describe_group(self, group_id: str) -> tuple[int, dict[str, Any] | None]:
        """(error, summary) — summary None when the group does not exist."""
        err = self._validate_group_status(group_id, allow_empty_id=True)
        if err is not None:
            return err, None
        group = self.groups.get(group_id)
        if group is None or group.is_(S.DEAD):
            return E.NONE, None
        return E.NONE, group.summary()

    def list_groups(self, states: list[str] | None = None,
                    types: list[str] | None = None) -> tuple[int, list[dict[str, str]]]:
        if not self.active:
            return E.COORDINATOR_NOT_AVAILABLE, []
        err = E.COORDINATOR_LOAD_IN_PROGRESS if self.loading else E.NONE
        wanted_states = {s.lower() for s in states or []}
        wanted_types = {t.lower() for t in types or []}
        if wanted_types and "classic" not in wanted_types:
            return err, []
        out = []
        for g in self.groups.values():
            if g.is_(S.DEAD):
                continue
            if wanted_states and g.state.value.lower() not in wanted_states:
                continue
            out.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                        "group_state": g.state.value, "group_type": "classic"})
        return err, out
