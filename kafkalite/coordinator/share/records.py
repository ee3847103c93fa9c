"""``__share_group_state`` records in Kafka 4.x's schemas (``4.3-coordinator-records/share-coordinator``).

A key is an int16 record type (the schema's apiKey, as Kafka's ``MessageUtil.toCoordinatorTypePrefixedBytes``
writes it) followed by the key at version 0 (non-flexible): ``GroupId`` (int16-length string), ``TopicId``
(16-byte uuid), ``Partition`` (int32).

* type 0 ``ShareSnapshotKey`` -> ``ShareSnapshotValue`` v0: the whole state of one share-partition —
  SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset, CreateTimestamp, WriteTimestamp, StateBatches
  [FirstOffset, LastOffset, DeliveryState (0 available, 2 acked, 4 archived), DeliveryCount], and the tagged
  DeliveryCompleteCount (tag 0, KIP-1226; left out at its default -1).
* type 1 ``ShareUpdateKey`` -> ``ShareUpdateValue`` v0: a change on top of the last snapshot — SnapshotEpoch,
  LeaderEpoch, StartOffset (-1: unchanged), StateBatches, tagged DeliveryCompleteCount.

Values are an int16 version then the flexible (compact, tagged) encoding. Replay (``state.py``) takes a
snapshot as the new state and merges updates on top, as Kafka's ``ShareCoordinatorShard`` does.
The record batches around them are the group coordinator's (``kafkalite.coordinator.classic.records.build_batch``).
"""
from __future__ import annotations

import base64
import struct
import uuid
from dataclasses import dataclass, field

from kafkalite.coordinator.classic.records import RecordDecodeError, _Reader, _str, _uvarint
from kafkalite.coordinator.share.partition import StateBatch
from kafkalite.metadata.partitions import java_string_hash

SNAPSHOT, UPDATE = 0, 1
_BATCH = struct.Struct(">qqbh")


@dataclass(frozen=True, slots=True)
class ShareKey:
    group: str
    topic_id: uuid.UUID
    partition: int


@dataclass(slots=True)
class ShareValue:
    """A snapshot (``snapshot=True``) or an update; ``state_epoch``, ``create_ts``, ``write_ts`` are
    snapshot-only (0 in an update)."""
    snapshot: bool
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    batches: list[StateBatch] = field(default_factory=list)
    state_epoch: int = 0
    create_ts: int = 0
    write_ts: int = 0
    delivery_complete_count: int = -1


def encode_key(record_type: int, key: ShareKey) -> bytes:
    return (struct.pack(">h", record_type) + _str(key.group) + key.topic_id.bytes
            + struct.pack(">i", key.partition))


def decode_key(data: bytes) -> tuple[int, ShareKey] | None:
    """(record type, key), or None for a record type this coordinator does not know."""
    r = _Reader(bytes(data))
    rtype = r.int16()
    if rtype not in (SNAPSHOT, UPDATE):
        return None
    group = r.string() or ""
    topic_id = uuid.UUID(bytes=r.take(16))
    return rtype, ShareKey(group, topic_id, r.int32())


def encode_value(v: ShareValue) -> bytes:
    out = bytearray(struct.pack(">h", 0))
    if v.snapshot:
        out += struct.pack(">iiiq", v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset)
        out += struct.pack(">qq", v.create_ts, v.write_ts)
    else:
        out += struct.pack(">iiq", v.snapshot_epoch, v.leader_epoch, v.start_offset)
    out += _uvarint(len(v.batches) + 1)
    for b in v.batches:
        out += _BATCH.pack(b.first, b.last, b.state, b.count) + b"\x00"
    if v.delivery_complete_count != -1:
        out += b"\x01" + _uvarint(0) + _uvarint(4) + struct.pack(">i", v.delivery_complete_count)
    else:
        out += b"\x00"
    return bytes(out)


def decode_value(record_type: int, data: bytes) -> ShareValue:
    r = _Reader(bytes(data))
    version = r.int16()
    if version != 0:
        raise RecordDecodeError(f"unknown share state value version {version}")
    snapshot = record_type == SNAPSHOT
    if snapshot:
        snap_epoch, state_epoch, leader_epoch, start = r.int32(), r.int32(), r.int32(), r.int64()
        create_ts, write_ts = r.int64(), r.int64()
    else:
        snap_epoch, leader_epoch, start = r.int32(), r.int32(), r.int64()
        state_epoch = create_ts = write_ts = 0
    n = r.uvarint() - 1
    if n < 0 or n > len(r.buf):
        raise RecordDecodeError("bad StateBatches length")
    batches = []
    for _ in range(n):
        first, last, state, count = _BATCH.unpack(r.take(_BATCH.size))
        r.skip_tags()
        batches.append(StateBatch(first, last, state, count))
    dcc = -1
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        raw = r.take(size)
        if tag == 0 and size == 4:
            dcc = struct.unpack(">i", raw)[0]
    return ShareValue(snapshot, snap_epoch, leader_epoch, start, batches, state_epoch, create_ts, write_ts, dcc)


def java_uuid_str(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def partition_for(key: ShareKey, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of a share-partition, as ``ShareCoordinatorService.partitionFor``:
    ``abs(hash("group:topicId:partition")) % partitions`` (Kafka's ``Utils.abs`` maps MIN_VALUE to 0)."""
    h = java_string_hash(f"{key.group}:{java_uuid_str(key.topic_id)}:{key.partition}")
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
