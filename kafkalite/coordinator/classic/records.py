"""``__consumer_offsets`` records in Kafka's own schemas, and record-batch v2 framing for them.

Keys and values are Kafka's coordinator record schemas (``3.9.0-coordinator-records``), each prefixed
with an int16 schema version; a key's version tells the record type:

* key v0/v1 ``OffsetCommitKey`` (group, topic, partition) -> ``OffsetCommitValue``. Kafka 3.9 writes
  key v1 and value v3 (offset, leaderEpoch, metadata, commitTimestamp), or value v1 (with
  expireTimestamp) when the commit carried an explicit retention.
* key v2 ``GroupMetadataKey`` (group) -> ``GroupMetadataValue`` v3 (protocolType, generation,
  protocol, leader, currentStateTimestamp, members[memberId, groupInstanceId, clientId, clientHost,
  rebalanceTimeout, sessionTimeout, subscription, assignment]).
* a null value is a tombstone: the offset, or the whole group, is deleted.

Values v4 are the flexible (tagged-field) versions; they are decoded but never written, as 3.9.
Batches are magic-2, uncompressed, CreateTime, no producer id, exactly like the coordinator writes.
"""
from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafkalite.coordinator.classic.group import OffsetAndMetadata
from kafkalite_storage.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    BatchHeader,
    batch_payload,
    crc32c,
    parse_header,
)
from kafkalite_storage.batch import iter_records as iter_records_of

# ---------------------------------------------------------------------------------------------------
# primitive helpers


class RecordDecodeError(ValueError):
    pass


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise RecordDecodeError("short buffer")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return int(struct.unpack(">b", self.take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self.take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self.take(8))[0])

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise RecordDecodeError("varint too long")

    def varint(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def string(self, flexible: bool = False) -> str | None:
        n = self.uvarint() - 1 if flexible else self.int16()
        if n < 0:
            return None
        return self.take(n).decode("utf-8")

    def bytes_(self, flexible: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if flexible else self.int32()
        if n < 0:
            return None
        return self.take(n)

    def array_len(self, flexible: bool) -> int:
        return self.uvarint() - 1 if flexible else self.int32()

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7


def _varint(v: int) -> bytes:
    return _uvarint((v << 1) ^ (v >> 63))


def _str(s: str | None) -> bytes:
    """An int16-length string; one over 32,767 bytes cannot be written (callers refuse such ids first, see
    ``kafkalite.coordinator.common.keys``), and says so instead of a bare struct.error."""
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode("utf-8")
    if len(b) > 32767:
        raise ValueError(f"a string of {len(b)} bytes does not fit a coordinator record (at most 32767)")
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes | None) -> bytes:
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + bytes(b)


# ---------------------------------------------------------------------------------------------------
# keys and values


@dataclass(slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(slots=True)
class GroupKey:
    group: str


@dataclass(slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberRecord] = field(default_factory=list)


def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _str(group) + _str(topic) + struct.pack(">i", partition)


def encode_group_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _str(group)


def encode_offset_value(om: OffsetAndMetadata) -> bytes:
    if om.expire_timestamp is not None:
        return (struct.pack(">hq", 1, om.offset) + _str(om.metadata)
                + struct.pack(">qq", om.commit_timestamp, om.expire_timestamp))
    return (struct.pack(">hqi", 3, om.offset, om.leader_epoch) + _str(om.metadata)
            + struct.pack(">q", om.commit_timestamp))


def encode_group_value(v: GroupValue) -> bytes:
    out = bytearray(struct.pack(">h", 3))
    out += _str(v.protocol_type) + struct.pack(">i", v.generation) + _str(v.protocol) + _str(v.leader)
    out += struct.pack(">q", v.current_state_timestamp)
    out += struct.pack(">i", len(v.members))
    for m in v.members:
        out += _str(m.member_id) + _str(m.group_instance_id) + _str(m.client_id) + _str(m.client_host)
        out += struct.pack(">ii", m.rebalance_timeout, m.session_timeout)
        out += _bytes(m.subscription) + _bytes(m.assignment)
    return bytes(out)


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """Decode a key; returns None for record types the classic coordinator does not keep."""
    r = _Reader(bytes(data))
    version = r.int16()
    if version in (0, 1):
        group, topic = r.string(), r.string()
        return OffsetKey(group or "", topic or "", r.int32())
    if version == 2:
        return GroupKey(r.string() or "")
    return None  # consumer-group (KIP-848) / share-group / transaction records


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    r = _Reader(bytes(data))
    version = r.int16()
    if not 0 <= version <= 4:
        raise RecordDecodeError(f"unknown OffsetCommitValue version {version}")
    flexible = version >= 4
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = r.string(flexible) or ""
    commit_ts = r.int64()
    expire = r.int64() if version == 1 else None
    if flexible:
        r.skip_tags()
    return OffsetAndMetadata(offset, leader_epoch, metadata, commit_ts,
                             None if expire is None or expire < 0 else expire)


def decode_group_value(data: bytes) -> GroupValue:
    r = _Reader(bytes(data))
    version = r.int16()
    if not 0 <= version <= 4:
        raise RecordDecodeError(f"unknown GroupMetadataValue version {version}")
    fx = version >= 4
    protocol_type = r.string(fx) or ""
    generation = r.int32()
    protocol = r.string(fx)
    leader = r.string(fx)
    ts = r.int64() if version >= 2 else -1
    members = []
    for _ in range(max(r.array_len(fx), 0)):
        member_id = r.string(fx) or ""
        instance = r.string(fx) if version >= 3 else None
        client_id = r.string(fx) or ""
        client_host = r.string(fx) or ""
        rebalance = r.int32() if version >= 1 else -1
        session = r.int32()
        sub = r.bytes_(fx) or b""
        assign = r.bytes_(fx) or b""
        if fx:
            r.skip_tags()
        members.append(MemberRecord(member_id, instance, client_id, client_host,
                                    session if rebalance < 0 else rebalance, session, sub, assign))
    if fx:
        r.skip_tags()
    return GroupValue(protocol_type, generation, protocol, leader, ts, members)


# ---------------------------------------------------------------------------------------------------
# record batch v2

_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes
_CRC_START = 21  # crc covers attributes .. end
_TRANSACTIONAL = 0x10


def build_batch(records: list[tuple[bytes, bytes | None]], now_ms: int | None = None, *,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """One magic-2 batch (base offset 0; storage assigns offsets) of (key, value) records.

    With a producer id the batch is transactional (TxnOffsetCommit offsets waiting for their marker).
    Kafka's GroupMetadataManager writes offset commits (plain or transactional) with base sequence 0
    and group metadata with -1 (seen in Kafka-written ``__consumer_offsets`` segments)."""
    if not records:
        raise ValueError("empty batch")
    ts = int(time.time() * 1000) if now_ms is None else now_ms
    body = bytearray()
    for i, (key, value) in enumerate(records):
        rec = bytearray(b"\x00")            # attributes
        rec += _varint(0)                   # timestamp delta
        rec += _varint(i)                   # offset delta
        rec += _varint(len(key)) + key
        if value is None:
            rec += _varint(-1)
        else:
            rec += _varint(len(value)) + value
        rec += _varint(0)                   # headers
        body += _varint(len(rec)) + rec
    batch_length = _BATCH_HEADER.size - 12 + len(body)
    attributes = _TRANSACTIONAL if producer_id >= 0 else 0
    header = bytearray(_BATCH_HEADER.pack(0, batch_length, 0, 2, 0, attributes, len(records) - 1, ts, ts,
                                          producer_id, producer_epoch, base_sequence, len(records)))
    data = header + body
    crc = crc32c(bytes(data[_CRC_START:]))
    struct.pack_into(">I", data, 17, crc)
    return bytes(data)


def _whole_batches(data: bytes | memoryview) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, decompressed records payload) of each whole magic-2 batch in ``data``.

    Legacy (magic 0/1) message sets are skipped and a partial tail ends the run. The batch walk and record
    decoding are storage's (``kafkalite_storage.batch``); only the tolerance of old magics is ours.
    """
    buf = memoryview(bytes(data))
    pos = 0
    while len(buf) - pos >= HEADER_SIZE:
        length = int.from_bytes(buf[pos + 8:pos + 12], "big", signed=True)
        end = pos + LOG_OVERHEAD + length
        if length < HEADER_SIZE - LOG_OVERHEAD or end > len(buf):
            return
        if buf[pos + MAGIC_OFFSET] == 2:
            hdr = parse_header(buf, pos)
            yield hdr, batch_payload(buf[pos:end], hdr)
        pos = end


def iter_entries(data: bytes):  # type: ignore[no-untyped-def]
    """Yield the contents of a run of whole magic-2 batches, transaction-aware:

    * ``("record", producer_id, key, value, base_offset)`` for each record (producer_id -1 unless the
      batch is transactional: a TxnOffsetCommit); ``base_offset`` is the batch's, which Kafka compares to
      order a transaction's offsets against plain commits;
    * ``("marker", producer_id, None, committed, base_offset)`` for a control batch (COMMIT / ABORT).

    Anything shorter than a whole batch ends the run; legacy (magic 0/1) message sets are skipped.
    """
    for hdr, payload in _whole_batches(data):
        pid = hdr.producer_id if hdr.is_transactional else -1
        for rec in iter_records_of(hdr, payload):
            if hdr.is_control:  # control record: key = int16 version, int16 type (0 abort, 1 commit)
                if rec.key is not None and len(rec.key) >= 4:
                    yield ("marker", hdr.producer_id, None, struct.unpack(">h", rec.key[2:4])[0] == 1,
                           hdr.base_offset)
            elif rec.key is not None:
                yield "record", pid, rec.key, rec.value, hdr.base_offset


def iter_records(data: bytes):  # type: ignore[no-untyped-def]
    """Yield (offset, key, value) of every record in a run of whole magic-2 batches.

    Control batches (transaction markers) and anything shorter than a whole batch are skipped.
    """
    for hdr, payload in _whole_batches(data):
        if hdr.is_control:
            continue
        for rec in iter_records_of(hdr, payload):
            if rec.key is not None:
                yield rec.offset, rec.key, rec.value

