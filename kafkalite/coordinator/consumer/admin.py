"""Offsets validation and administration of consumer groups (the :class:`ConsumerGroupCoordinator` half that
OffsetCommit / OffsetFetch, ListGroups and DeleteGroups use).

* OffsetCommit (ConsumerGroup.validateOffsetCommit): an empty group takes admin commits (epoch < 0); a member
  must exist (UNKNOWN_MEMBER_ID); a consumer-protocol member must use OffsetCommit v9+ (UNSUPPORTED_VERSION);
  its epoch must be its member epoch, or older for partitions it has held since then (Kafka 4.3, KIP-1251),
  else STALE_MEMBER_EPOCH. A classic-protocol member's generation is checked the same way (Kafka 4.4 builds the
  same assignment-epoch validator for both kinds of member) and refused with ILLEGAL_GENERATION: newer than its
  member epoch, or older than the epoch a partition was given to it at, or for a partition it does not hold.
* TxnOffsetCommit (ConsumerGroup.validateOffsetCommit with isTransactional, as Kafka 4.x's
  OffsetMetadataManager.validateTransactionalOffsetCommit calls it): an epoch < 0 commits to an empty group; no
  member id, no instance id and generation -1 (a producer given no group metadata, or TxnOffsetCommit v0-v2)
  skips the member check; otherwise the member must exist (UNKNOWN_MEMBER_ID: a member that left, was fenced or
  was replaced under its static instance id by a new member id) and the generation is its member epoch: equal
  commits, newer is refused, older commits only partitions a consumer-protocol member has held since then
  (KIP-1251, as for its OffsetCommit, for both kinds of member). No version floor and no
  group.instance.id check (Kafka checks neither for consumer groups). A refused epoch answers ILLEGAL_GENERATION
  for both kinds of member: Kafka turns STALE_MEMBER_EPOCH into ILLEGAL_GENERATION on this API (a transactional
  producer aborts on ILLEGAL_GENERATION and treats an error it does not know as fatal).
* OffsetFetch: an admin fetch (no member id, epoch < 0) is accepted; a member's epoch must match.
* ListGroups: type ``consumer``, states Empty / Assigning / Reconciling / Stable. DeleteGroups: NON_EMPTY_GROUP
  while it has members, else its records are tombstoned (its offsets go with the classic side).
"""
from __future__ import annotations

from typing import Any

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.consumer import records as R
from kafkalite.coordinator.consumer.model import ConsumerGroup, HeartbeatError
from kafkalite_wire.errors import ErrorCode

STALE_MEMBER_EPOCH = int(ErrorCode.STALE_MEMBER_EPOCH)
ILLEGAL_GENERATION = int(ErrorCode.ILLEGAL_GENERATION)


class AdminMixin:
    groups: dict[str, ConsumerGroup]
    _group_filters: dict[str, Any]

    def _write(self, group_id: str, out: list[tuple[bytes, bytes | None]]) -> None: ...

    # -- offsets ---------------------------------------------------------------------------------------------
    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int, version: int) -> int | None:
        """ConsumerGroup.validateOffsetCommit: None when ``group_id`` is not a consumer group, else an error code
        (0 = allowed)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if member_epoch < 0 and not group.members:
            return 0
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if version < 9 and member.classic is None:
            return int(ErrorCode.UNSUPPORTED_VERSION)
        if member_epoch == member.member_epoch:
            return 0
        return ILLEGAL_GENERATION if member.classic is not None else STALE_MEMBER_EPOCH

    def offset_commit_errors(self, group_id: str, member_id: str, member_epoch: int, version: int,
                             partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int] | None:
        """Per-partition codes of an OffsetCommit (None: not a consumer group). Kafka 4.3 (KIP-1251) relaxes the
        strict epoch match: a commit with an older member epoch (a classic-protocol member's older generation)
        is accepted for a partition the member has held since that epoch or before (``assignmentEpoch <= epoch
        <= memberEpoch``), so a member whose epoch was bumped before it heard of it is not falsely fenced; the
        other partitions get STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for a classic-protocol member). Kafka 4.4's
        ConsumerGroup.validateOffsetCommit applies this to both kinds of member."""
        err = self.validate_offset_commit(group_id, member_id, member_epoch, version)
        if err is None or err not in (STALE_MEMBER_EPOCH, ILLEGAL_GENERATION):
            return None if err is None else dict.fromkeys(partitions, err)
        group = self.groups[group_id]
        member = group.members[member_id]
        if member_epoch > member.member_epoch:
            return dict.fromkeys(partitions, err)
        ids = {name: tid for name, (tid, _n) in group.topics.items()}
        out = {}
        for t, p in partitions:
            since = member.held_since(ids[t], p) if t in ids else None
            out[(t, p)] = 0 if since is not None and since <= member_epoch else err
        return out

    def txn_offset_commit_error(self, group_id: str, member_id: str, instance_id: str | None, member_epoch: int,
                                partitions: list[tuple[str, int]]) -> int | None:
        """A TxnOffsetCommit to ``group_id``: None when it is not a consumer group, else the code for the whole
        request (0 = accepted; its offsets are then kept with the group's offsets, as a simple commit's)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if member_epoch < 0 and not group.members:
            return 0
        if member_epoch == -1 and member_id == "" and instance_id is None:
            return 0
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if member_epoch == member.member_epoch:
            return 0
        if member_epoch > member.member_epoch:
            return ILLEGAL_GENERATION
        ids = {name: tid for name, (tid, _n) in group.topics.items()}
        for t, p in partitions:
            since = member.held_since(ids[t], p) if t in ids else None
            if since is None or since > member_epoch:
                return ILLEGAL_GENERATION
        return 0

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> int:
        group = self.groups.get(group_id)
        if group is None or (member_epoch < 0 and member_id is None):
            return 0
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        if member_epoch == member.member_epoch:
            return 0
        return ILLEGAL_GENERATION if member.classic is not None else STALE_MEMBER_EPOCH

    # -- admin -----------------------------------------------------------------------------------------------
    def list_groups(self, states: set[str], types: set[str]) -> list[dict[str, str]]:
        if types and "consumer" not in types:
            return []
        out = []
        for g in self.groups.values():
            st = g.state()
            if states and st.lower() not in states:
                continue
            out.append({"group_id": g.group_id, "protocol_type": "consumer", "group_state": st,
                        "group_type": "consumer"})
        return out

    def delete_group(self, group_id: str) -> int | None:
        """None when not a consumer group; NON_EMPTY_GROUP, or 0 after writing its tombstones."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return E.NON_EMPTY_GROUP
        out: list[tuple[bytes, bytes | None]] = [
            (R.encode_key(t, group_id), None) for t in (R.TARGET_METADATA, R.PARTITION_METADATA, R.GROUP_METADATA)]
        try:
            self._write(group_id, out)
        except HeartbeatError as e:   # the write failed: its code is the answer
            return e.code
        del self.groups[group_id]
        self._group_filters.pop(group_id, None)
        return 0

    def remove_empty(self, group_id: str) -> None:
        """An empty consumer group converted to a classic one (a classic member joined, Kafka 4.0's downgrade of
        an empty group): its records are deleted, its offsets stay."""
        if group_id in self.groups and not self.groups[group_id].members:
            self.delete_group(group_id)
