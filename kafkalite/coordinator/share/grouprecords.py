"""Share group membership in ``__consumer_offsets``, in Kafka 4.3's record types (schemas:
``4.3-coordinator-records/group-coordinator/ShareGroup*``). Pure: encoding, decoding and replay.

A key is the int16 record type (the schema's apiKey) and the key fields at version 0, non-flexible (int16-length
strings); a value is an int16 version (0) then the flexible encoding (compact strings and arrays, a tagged-field
section after each struct). A null value is a tombstone. As Kafka's ``GroupMetadataManager`` writes them:

* 10 ShareGroupMemberMetadata (group, member) -> RackId, ClientId, ClientHost, SubscribedTopicNames: when a member
  joins or changes its subscription or rack; a tombstone when it leaves or its session expires.
* 11 ShareGroupMetadata (group) -> Epoch, MetadataHash: every group epoch bump.
* 12 ShareGroupTargetAssignmentMetadata (group) -> AssignmentEpoch, AssignmentTimestamp (tag 0): after the
  target assignment was recomputed, following the members' records (13) that changed.
* 13 ShareGroupTargetAssignmentMember (group, member) -> TopicPartitions[TopicId, Partitions].
* 14 ShareGroupCurrentMemberAssignment (group, member) -> MemberEpoch, PreviousMemberEpoch, State (0: stable;
  share members never wait for revocations), AssignedPartitions: when a member moves to a new epoch.
* 15 ShareGroupStatePartitionMetadata (group) -> InitializingTopics, InitializedTopics, DeletingTopics: the
  topic-partitions whose share-partition state exists in ``__share_group_state``.

Removing a member writes tombstones for 14, 13 and 10 (in that order); deleting a group also tombstones 15,
12 and 11. ``MetadataHash`` is kafkalite's own 64-bit hash of the subscribed topics' names, ids and partition
counts (Kafka's is XXH3 over its metadata image); it serves the same purpose — a reloaded group whose topics
changed meanwhile gets a new epoch and assignment — and is only ever compared with kafkalite's own.
"""
from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kafkalite_wire.primitives import Reader, Writer

MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_PARTITIONS = (
    10, 11, 12, 13, 14, 15)
TYPES = frozenset({10, 11, 12, 13, 14, 15})
_MEMBER_KEYED = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
STABLE = 0

TP = tuple[uuid.UUID, int]
Record = tuple[bytes, "bytes | None"]


class ShareRecordError(ValueError):
    pass


def key(type_: int, group_id: str, member_id: str | None = None) -> bytes:
    w = Writer()
    w.int16(type_)
    w.string(group_id)
    if type_ in _MEMBER_KEYED:
        w.string(member_id or "")
    return w.getvalue()


def record_type(k: bytes | memoryview) -> int:
    return int(struct.unpack_from(">h", k)[0]) if len(k) >= 2 else -1


def metadata_hash(topics: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(topics):
        tid, n = topics[name]
        h.update(name.encode() + b"\0" + tid.bytes + struct.pack(">i", n))
    return int.from_bytes(h.digest(), "big", signed=True)


# -- flexible encoding --------------------------------------------------------------------------------------
def _cstr(w: Writer, s: str | None) -> None:
    if s is None:
        w.uvarint(0)
        return
    b = s.encode()
    w.uvarint(len(b) + 1)
    w.buf += b


def _rcstr(r: Reader) -> str | None:
    n = r.uvarint()
    return None if n == 0 else bytes(r.raw(n - 1)).decode()


def _parts(w: Writer, parts: Iterable[TP]) -> None:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for tid, p in sorted(parts, key=lambda tp: (str(tp[0]), tp[1])):
        by_topic.setdefault(tid, []).append(p)
    w.uvarint(len(by_topic) + 1)
    for tid, ps in by_topic.items():
        w.buf += tid.bytes
        w.uvarint(len(ps) + 1)
        for p in ps:
            w.int32(p)
        w.uvarint(0)


def _rparts(r: Reader) -> set[TP]:
    out: set[TP] = set()
    for _ in range(max(r.uvarint() - 1, 0)):
        tid = uuid.UUID(bytes=bytes(r.raw(16)))
        out.update((tid, r.int32()) for _ in range(max(r.uvarint() - 1, 0)))
        r.tagged_fields()
    return out


def _value(fill) -> bytes:  # type: ignore[no-untyped-def]
    w = Writer()
    w.int16(0)
    fill(w)
    w.uvarint(0)
    return w.getvalue()


def member_value(rack_id: str | None, client_id: str, client_host: str, subscribed: list[str]) -> bytes:
    def fill(w: Writer) -> None:
        _cstr(w, rack_id)
        _cstr(w, client_id)
        _cstr(w, client_host)
        w.uvarint(len(subscribed) + 1)
        for t in subscribed:
            _cstr(w, t)
    return _value(fill)


def group_value(epoch: int, mhash: int) -> bytes:
    def fill(w: Writer) -> None:
        w.int32(epoch)
        w.int64(mhash)
    return _value(fill)


def target_metadata_value(epoch: int, timestamp_ms: int) -> bytes:
    w = Writer()
    w.int16(0)
    w.int32(epoch)
    w.uvarint(1)                  # one tagged field: AssignmentTimestamp (tag 0)
    w.uvarint(0)
    w.uvarint(8)
    w.int64(timestamp_ms)
    return w.getvalue()


def target_member_value(parts: Iterable[TP]) -> bytes:
    return _value(lambda w: _parts(w, parts))


def current_value(epoch: int, previous: int, parts: Iterable[TP]) -> bytes:
    def fill(w: Writer) -> None:
        w.int32(epoch)
        w.int32(previous)
        w.int8(STABLE)
        _parts(w, parts)
    return _value(fill)


def state_partitions_value(initialized: Mapping[uuid.UUID, tuple[str, list[int]]]) -> bytes:
    def fill(w: Writer) -> None:
        w.uvarint(1)                                    # InitializingTopics: none (initialized at once)
        w.uvarint(len(initialized) + 1)
        for tid, (name, parts) in sorted(initialized.items(), key=lambda kv: kv[1][0]):
            w.buf += tid.bytes
            _cstr(w, name)
            w.uvarint(len(parts) + 1)
            for p in sorted(parts):
                w.int32(p)
            w.uvarint(0)
        w.uvarint(1)                                    # DeletingTopics: none (deleted at once)
    return _value(fill)


# -- replay ---------------------------------------------------------------------------------------------------
@dataclass(slots=True)
class LoadedMember:
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: list[str] = field(default_factory=list)
    member_epoch: int = 0
    previous_epoch: int = 0
    assignment: set[TP] = field(default_factory=set)
    has_metadata: bool = False


@dataclass(slots=True)
class LoadedGroup:
    epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, LoadedMember] = field(default_factory=dict)
    target: dict[str, set[TP]] = field(default_factory=dict)
    initialized: dict[uuid.UUID, tuple[str, list[int]]] = field(default_factory=dict)
    exists: bool = False


class GroupReplay:
    """Feed (key, value) of share group records in log order; read ``groups`` (those that exist at the end)."""

    def __init__(self) -> None:
        self._groups: dict[str, LoadedGroup] = {}
        self.records = 0
        self.skipped = 0

    @property
    def groups(self) -> dict[str, LoadedGroup]:
        out = {}
        for gid, g in self._groups.items():
            g.members = {m: lm for m, lm in g.members.items() if lm.has_metadata}
            g.target = {m: t for m, t in g.target.items() if m in g.members}
            if g.exists or g.members:
                out[gid] = g
        return out

    def feed(self, k: bytes, v: bytes | None) -> None:
        self.records += 1
        try:
            self._feed(k, v)
        except (ShareRecordError, ValueError, IndexError, struct.error, UnicodeDecodeError):
            self.skipped += 1

    def _feed(self, k: bytes, v: bytes | None) -> None:
        r = Reader(k)
        t = r.int16()
        gid = r.string()
        mid = r.string() if t in _MEMBER_KEYED else None
        g = self._groups.setdefault(gid, LoadedGroup())
        if mid is not None:
            if v is None:
                if t == MEMBER_METADATA:
                    g.members.pop(mid, None)
                elif t == TARGET_MEMBER:
                    g.target.pop(mid, None)
                elif mid in g.members:
                    g.members[mid].assignment = set()
                return
            r = _value_reader(v)
            m = g.members.setdefault(mid, LoadedMember())
            if t == MEMBER_METADATA:
                m.rack_id, m.client_id, m.client_host = _rcstr(r), _rcstr(r) or "", _rcstr(r) or ""
                m.subscribed = [_rcstr(r) or "" for _ in range(max(r.uvarint() - 1, 0))]
                m.has_metadata = True
            elif t == TARGET_MEMBER:
                g.target[mid] = _rparts(r)
            else:
                m.member_epoch, m.previous_epoch = r.int32(), r.int32()
                r.int8()
                m.assignment = _rparts(r)
            return
        if v is None:
            if t == GROUP_METADATA:        # the group was deleted
                self._groups.pop(gid, None)
            elif t == STATE_PARTITIONS:
                g.initialized = {}
            return
        r = _value_reader(v)
        if t == GROUP_METADATA:
            g.epoch, g.metadata_hash = r.int32(), r.int64()
            g.exists = True
        elif t == TARGET_METADATA:
            g.assignment_epoch = r.int32()
        elif t == STATE_PARTITIONS:
            _skip_topics(r, with_parts=True)
            g.initialized = {}
            for _ in range(max(r.uvarint() - 1, 0)):
                tid = uuid.UUID(bytes=bytes(r.raw(16)))
                name = _rcstr(r) or ""
                g.initialized[tid] = (name, [r.int32() for _ in range(max(r.uvarint() - 1, 0))])
                r.tagged_fields()
            g.exists = True


def _value_reader(v: bytes) -> Reader:
    r = Reader(v)
    version = r.int16()
    if version != 0:
        raise ShareRecordError(f"unknown share group record value version {version}")
    return r


def _skip_topics(r: Reader, with_parts: bool) -> None:
    for _ in range(max(r.uvarint() - 1, 0)):
        r.raw(16)
        _rcstr(r)
        if with_parts:
            for _ in range(max(r.uvarint() - 1, 0)):
                r.int32()
        r.tagged_fields()
