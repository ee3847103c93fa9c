"""Kafka 4's ``__consumer_offsets`` records of consumer groups (schemas: 4.3-coordinator-records/group-coordinator).

A key is an int16 record type (the schema's apiKey) and the key fields, non-flexible (int16-length strings); a
value is an int16 version (0) and the fields in the flexible encoding (compact strings and arrays, a tagged-field
section per struct). A null value is a tombstone. Types written here:

* 3 ConsumerGroupMetadata (group) -> Epoch, MetadataHash (tag 0)
* 4 ConsumerGroupPartitionMetadata (group) -> Topics[TopicId, TopicName, NumPartitions, PartitionMetadata[]]
  (Kafka 4.0 writes it; 4.1+ only tombstones it and keeps MetadataHash instead -- we write it so a reload knows
  the topic metadata the target assignment was computed from)
* 5 ConsumerGroupMemberMetadata (group, member) -> InstanceId, RackId, ClientId, ClientHost,
  SubscribedTopicNames, SubscribedTopicRegex, RebalanceTimeoutMs, ServerAssignor, and for a member speaking the
  classic protocol ClassicMemberMetadata (tag 0: SessionTimeoutMs, SupportedProtocols[Name, Metadata])
* 6 ConsumerGroupTargetAssignmentMetadata (group) -> AssignmentEpoch, AssignmentTimestamp (tag 0)
* 7 ConsumerGroupTargetAssignmentMember (group, member) -> TopicPartitions[TopicId, Partitions]
* 8 ConsumerGroupCurrentMemberAssignment (group, member) -> MemberEpoch, PreviousMemberEpoch, State,
  AssignedPartitions[...], PartitionsPendingRevocation[...], each TopicPartitions with Kafka 4.3's
  AssignmentEpochs (tag 0, KIP-1251)

Unknown tagged fields are skipped on decode.
"""
from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kafkalite.coordinator.consumer.model import Assignment
from kafkalite_wire.primitives import Reader, Writer

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_METADATA = 6
TARGET_MEMBER = 7
CURRENT_ASSIGNMENT = 8
TYPES = frozenset({3, 4, 5, 6, 7, 8})


class ConsumerRecordError(ValueError):
    pass


@dataclass(frozen=True)
class Key:
    type: int
    group_id: str
    member_id: str | None = None


def encode_key(type_: int, group_id: str, member_id: str | None = None) -> bytes:
    w = Writer()
    w.int16(type_)
    w.string(group_id)
    if type_ in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT):
        w.string(member_id or "")
    return w.getvalue()


def record_type(key: bytes) -> int:
    if len(key) < 2:
        return -1
    return int(struct.unpack_from(">h", key)[0])


def consumer_split(entries: Iterable[Any], out: list[tuple[bytes, bytes | None]]) -> Iterator[Any]:
    """Pass ``records.iter_entries`` entries through, taking out the consumer group records (types 3-8, never
    transactional) into ``out``, in log order, for ``ConsumerGroupCoordinator.load``."""
    for e in entries:
        if e[0] == "record" and e[1] < 0 and e[2] is not None and record_type(e[2]) in TYPES:
            out.append((bytes(e[2]), None if e[3] is None else bytes(e[3])))
        else:
            yield e


def decode_key(key: bytes) -> Key:
    try:
        r = Reader(key)
        t = r.int16()
        g = r.string()
        m = r.string() if t in (MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT) else None
        return Key(t, g, m)
    except Exception as exc:
        raise ConsumerRecordError(f"bad consumer group key: {exc}") from exc


# -- flexible-encoding helpers ----------------------------------------------------------------------------
def _cstr(w: Writer, s: str | None) -> None:
    if s is None:
        w.uvarint(0)
        return
    b = s.encode("utf-8")
    w.uvarint(len(b) + 1)
    w.buf += b


def _rcstr(r: Reader) -> str | None:
    n = r.uvarint()
    if n == 0:
        return None
    return bytes(r.raw(n - 1)).decode("utf-8")


def _uuid(w: Writer, u: uuid.UUID) -> None:
    w.buf += u.bytes


def _ruuid(r: Reader) -> uuid.UUID:
    return uuid.UUID(bytes=bytes(r.raw(16)))


def _assignment(w: Writer, a: Assignment, epochs: dict[tuple[uuid.UUID, int], int] | None = None) -> None:
    """TopicPartitions[TopicId, Partitions, AssignmentEpochs (tag 0, Kafka 4.3, aligned with Partitions)]."""
    items = [(t, sorted(ps)) for t, ps in sorted(a.items(), key=lambda x: str(x[0])) if ps]
    w.uvarint(len(items) + 1)
    for t, ps in items:
        _uuid(w, t)
        w.uvarint(len(ps) + 1)
        for p in ps:
            w.int32(p)
        if epochs is None:
            w.uvarint(0)  # tagged fields
            continue
        body = Writer()
        body.uvarint(len(ps) + 1)
        for p in ps:
            body.int32(epochs.get((t, p), -1))
        raw = body.getvalue()
        w.uvarint(1)
        w.uvarint(0)
        w.uvarint(len(raw))
        w.buf += raw
    return


def _rassignment(r: Reader, epochs: dict[tuple[uuid.UUID, int], int] | None = None) -> Assignment:
    n = r.uvarint() - 1
    out: Assignment = {}
    for _ in range(max(n, 0)):
        t = _ruuid(r)
        k = r.uvarint() - 1
        parts = [r.int32() for _ in range(max(k, 0))]
        out[t] = set(parts)
        tags = r.tagged_fields()
        if epochs is not None and 0 in tags:
            er = Reader(tags[0])
            values = [er.int32() for _ in range(max(er.uvarint() - 1, 0))]
            epochs.update(((t, p), e) for p, e in zip(parts, values, strict=False) if e >= 0)
    return out


def _value(fill: object) -> bytes:
    w = Writer()
    w.int16(0)
    fill(w)  # type: ignore[operator]
    w.uvarint(0)  # top-level tagged fields
    return w.getvalue()


# -- values -----------------------------------------------------------------------------------------------
def group_metadata_value(epoch: int) -> bytes:
    return _value(lambda w: w.int32(epoch))


def partition_metadata_value(topics: dict[str, tuple[uuid.UUID, int]]) -> bytes:
    def fill(w: Writer) -> None:
        w.uvarint(len(topics) + 1)
        for name, (tid, n) in sorted(topics.items()):
            _uuid(w, tid)
            _cstr(w, name)
            w.int32(n)
            w.uvarint(1)   # PartitionMetadata: empty (no racks)
            w.uvarint(0)
    return _value(fill)


def member_metadata_value(m: object) -> bytes:
    def fill(w: Writer) -> None:
        _cstr(w, m.instance_id)  # type: ignore[attr-defined]
        _cstr(w, m.rack_id)  # type: ignore[attr-defined]
        _cstr(w, m.client_id)  # type: ignore[attr-defined]
        _cstr(w, m.client_host)  # type: ignore[attr-defined]
        names = m.subscribed_topic_names  # type: ignore[attr-defined]
        w.uvarint(len(names) + 1)
        for n in names:
            _cstr(w, n)
        _cstr(w, m.subscribed_topic_regex)  # type: ignore[attr-defined]
        w.int32(m.rebalance_timeout_ms)  # type: ignore[attr-defined]
        _cstr(w, m.server_assignor)  # type: ignore[attr-defined]
    classic = getattr(m, "classic", None)
    if classic is None:
        return _value(fill)
    # tag 0: the nullable struct ClassicMemberMetadata (a presence varint 1, then the struct)
    body = Writer()
    body.uvarint(1)
    body.int32(classic.session_timeout_ms)
    body.uvarint(len(classic.protocols) + 1)
    for name, meta in classic.protocols:
        _cstr(body, name)
        body.uvarint(len(meta) + 1)
        body.buf += bytes(meta)
        body.uvarint(0)
    body.uvarint(0)
    raw = body.getvalue()
    w = Writer()
    w.int16(0)
    fill(w)
    w.uvarint(1)
    w.uvarint(0)
    w.uvarint(len(raw))
    w.buf += raw
    return w.getvalue()


def _rclassic(raw: bytes) -> tuple[int, list[tuple[str, bytes]]] | None:
    r = Reader(raw)
    if r.uvarint() == 0:
        return None
    session = r.int32()
    protocols = []
    for _ in range(max(r.uvarint() - 1, 0)):
        name = _rcstr(r) or ""
        meta = bytes(r.raw(max(r.uvarint() - 1, 0)))
        r.tagged_fields()
        protocols.append((name, meta))
    return session, protocols


def target_metadata_value(epoch: int, timestamp_ms: int) -> bytes:
    w = Writer()
    w.int16(0)
    w.int32(epoch)
    tag = struct.pack(">q", timestamp_ms)
    w.uvarint(1)
    w.uvarint(0)
    w.uvarint(len(tag))
    w.buf += tag
    return w.getvalue()


def target_member_value(a: Assignment) -> bytes:
    return _value(lambda w: _assignment(w, a))


def current_assignment_value(m: object) -> bytes:
    def fill(w: Writer) -> None:
        w.int32(m.member_epoch)  # type: ignore[attr-defined]
        w.int32(m.previous_member_epoch)  # type: ignore[attr-defined]
        w.int8(int(m.state))  # type: ignore[attr-defined]
        epochs = getattr(m, "epochs", None)
        _assignment(w, m.assigned, epochs)  # type: ignore[attr-defined]
        _assignment(w, m.pending_revocation, epochs)  # type: ignore[attr-defined]
    return _value(fill)


@dataclass
class MemberMetadata:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: tuple[int, list[tuple[str, bytes]]] | None = None   # (session timeout, protocols)


def decode_value(type_: int, value: bytes) -> object:
    """Decode a value of record ``type_``: an int (epochs), a dict (partition metadata), MemberMetadata, an
    Assignment, or a (member epoch, previous epoch, state, assigned, pending revocation) tuple."""
    try:
        r = Reader(value)
        if r.int16() != 0:
            raise ConsumerRecordError("unknown value version")
        if type_ in (GROUP_METADATA, TARGET_METADATA):
            return r.int32()
        if type_ == PARTITION_METADATA:
            topics: dict[str, tuple[uuid.UUID, int]] = {}
            for _ in range(max(r.uvarint() - 1, 0)):
                tid = _ruuid(r)
                name = _rcstr(r) or ""
                n = r.int32()
                for _ in range(max(r.uvarint() - 1, 0)):
                    r.int32()
                    for _ in range(max(r.uvarint() - 1, 0)):
                        _rcstr(r)
                    r.tagged_fields()
                r.tagged_fields()
                topics[name] = (tid, n)
            return topics
        if type_ == MEMBER_METADATA:
            inst, rack = _rcstr(r), _rcstr(r)
            cid, host = _rcstr(r) or "", _rcstr(r) or ""
            names = [_rcstr(r) or "" for _ in range(max(r.uvarint() - 1, 0))]
            regex = _rcstr(r)
            rto = r.int32()
            assignor = _rcstr(r)
            tags = r.tagged_fields()
            classic = _rclassic(bytes(tags[0])) if 0 in tags else None
            return MemberMetadata(inst, rack, cid, host, names, regex, rto, assignor, classic)
        if type_ == TARGET_MEMBER:
            return _rassignment(r)
        if type_ == CURRENT_ASSIGNMENT:
            epoch, prev, state = r.int32(), r.int32(), r.int8()
            epochs: dict[tuple[uuid.UUID, int], int] = {}
            return epoch, prev, state, _rassignment(r, epochs), _rassignment(r, epochs), epochs
    except ConsumerRecordError:
        raise
    except Exception as exc:
        raise ConsumerRecordError(f"bad consumer group record value (type {type_}): {exc}") from exc
    raise ConsumerRecordError(f"unknown consumer group record type {type_}")
