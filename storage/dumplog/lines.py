"""The batch line (``printBatchLevel``) and the control-record texts of kafka-dump-log."""

from __future__ import annotations

import json
import struct
from typing import Any

from kafkalite_storage.batch import crc32c as _crc32c_fn
from kafkalite_storage.dumplog.java import (
    _BATCH_OVERHEAD,
    _CODECS,
    _CONTROL_TYPES,
    _ILLEGAL_ARG,
    _INVALID_RECORD,
    JavaError,
    _i32,
    _i64,
    _optional_long,
    java_utf8_decode,
)
from kafkalite_storage.dumplog.records import Batch, Record, _Buf, _Legacy, _Underflow, increment_sequence


def batch_head(batch: Batch) -> str:
    """The first half of ``printBatchLevel`` (Kafka ``print``s it before evaluating the second half)."""
    if batch.magic < 2:
        return f"offset: {int(struct.unpack_from('>q', batch.data, 0)[0])}"
    (base_offset, _len, ple, _magic, _crc, attrs, lod, base_ts, _max_ts, pid, epoch, base_seq,
     count) = batch.header()
    last_seq = -1 if base_seq == -1 else increment_sequence(base_seq, lod)
    horizon = base_ts if attrs & 0x40 else None
    return (f"baseOffset: {base_offset} lastOffset: {_i64(base_offset + lod)} count: {count} "
            f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {pid} producerEpoch: {epoch} "
            f"partitionLeaderEpoch: {ple} isTransactional: {'true' if attrs & 0x10 else 'false'} "
            f"isControl: {'true' if attrs & 0x20 else 'false'} deleteHorizonMs: {_optional_long(horizon)}")


def batch_tail(batch: Batch) -> str:
    """The second half: `` position: P <TimestampType>: maxTimestamp size: S magic: M compresscodec: C crc: N
    isvalid: B``. For magic 0/1 the values are the wrapper message's (CRC-32 instead of CRC-32C)."""
    if batch.magic < 2:
        if batch.magic < 0:  # LegacyRecord.recordOverhead(magic), reached through loadBatchHeader()
            raise JavaError(_ILLEGAL_ARG, f"Invalid magic used in LegacyRecord: {batch.magic}")
        m = _Legacy(int(struct.unpack_from(">q", batch.data, 0)[0]), batch.data[12:])
        ts_type, max_ts, attrs, crc, valid = m.timestamp_type, m.own_timestamp, m.attrs, m.crc, m.valid
    else:
        header = batch.header()
        attrs, max_ts, crc = header[5], header[8], header[4]
        ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
        valid = batch.size >= _BATCH_OVERHEAD and _crc32c_fn(batch.data[21:]) == crc
    codec = attrs & 0x07
    if codec not in _CODECS:
        raise JavaError(_ILLEGAL_ARG, f"Unknown compression type id: {codec}")
    return (f" position: {batch.position} {ts_type}: {max_ts} size: {batch.size} magic: {batch.magic} "
            f"compresscodec: {_CODECS[codec]} crc: {crc} isvalid: {'true' if valid else 'false'}")


def batch_line(batch: Batch) -> str:
    """``printBatchLevel`` (without the newline), any magic."""
    return batch_head(batch) + batch_tail(batch)


def _jackson_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _control_suffix(rec: Record) -> str:
    """The text Kafka appends to a control record's line (ControlRecordType + the typed value)."""
    key = rec.key
    if key is None or len(key) < 4:
        found = 0 if key is None else len(key)
        raise JavaError(_INVALID_RECORD, "Invalid value size found for end control record key. Must have at "
                                         f"least 4 bytes, but found only {found}")
    version, type_id = struct.unpack_from(">hh", key, 0)
    if version < 0:
        raise JavaError(_INVALID_RECORD, f"Invalid version found for control record: {version}. May indicate "
                                         "data corruption")
    name = _CONTROL_TYPES.get(type_id, "UNKNOWN")
    value = rec.value or b""
    if type_id in (0, 1):
        if len(value) < 6:
            raise JavaError(_INVALID_RECORD, "Invalid value size found for end transaction marker. Must have "
                                             f"at least 6 bytes, but found only {len(value)}")
        mver, coordinator_epoch = struct.unpack_from(">hi", value, 0)
        if mver < 0:
            raise JavaError(_INVALID_RECORD, f"Invalid version found for end transaction marker: {mver}. May "
                                             "indicate data corruption")
        return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"
    try:
        if type_id in (3, 4, 5):
            r = _MessageReader(value)
            v = r.take(">h")
            if type_id == 3:
                ts = r.take(">q")
                r.skip_tags()
                return f' SnapshotHeader {{"version":{v},"lastContainedLogTimestamp":{ts}}}'
            if type_id == 4:
                r.skip_tags()
                return f' SnapshotFooter {{"version":{v}}}'
            kv = r.take(">h")
            r.skip_tags()
            return f' KRaftVersion {{"version":{v},"kRaftVersion":{kv}}}'
        if type_id == 6:
            return f" KRaftVoters {_voters_json(value)}"
    except (struct.error, _Underflow, IndexError):
        raise JavaError("java.nio.BufferUnderflowException") from None
    return f" controlType: {name}({type_id})"


class _MessageReader:
    """Reads a flexible-version message value like Kafka's generated code over a ByteBufferAccessor."""

    def __init__(self, value: bytes) -> None:
        self.buf = _Buf(value)

    def uvarint(self) -> int:
        """``ByteUtils.readUnsignedVarint``: at most 5 bytes, an int (may come out negative)."""
        result = 0
        for i in range(5):
            b = self.buf.get()
            if i == 4:
                result |= (b << 28) & 0xFFFFFFFF
                if b & 0x80:
                    raise JavaError(_ILLEGAL_ARG, "Varint is too long, the most significant bit in the 5th byte "
                                                  f"is set, converted value: {result:x}")
                break
            result |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                break
        return _i32(result)

    def take(self, fmt: str) -> Any:
        s = struct.Struct(fmt)
        if self.buf.remaining() < s.size:
            raise _Underflow
        raw = self.buf.data[self.buf.pos : self.buf.pos + s.size]
        self.buf.pos += s.size
        return s.unpack(raw)[0]

    def read_array(self, size: int) -> bytes:
        remaining = self.buf.remaining()
        if size > remaining:
            raise JavaError("java.lang.RuntimeException", f"Error reading byte array of {size} byte(s): only "
                                                          f"{remaining} byte(s) available")
        if size < 0:
            raise JavaError("java.lang.NegativeArraySizeException", str(size))
        raw = self.buf.data[self.buf.pos : self.buf.pos + size]
        self.buf.pos += size
        return raw

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.read_array(self.uvarint())

    def compact_str(self) -> str:
        return java_utf8_decode(self.read_array(self.uvarint() - 1))


def _voters_json(value: bytes) -> str:
    """VotersRecord (flexible v0) as its generated JsonConverter writes it (field order of the JSON spec)."""
    import base64

    r = _MessageReader(value)
    take, uvarint, skip_tags, compact_str = r.take, r.uvarint, r.skip_tags, r.compact_str
    version = take(">h")
    voters = []
    for _ in range(uvarint() - 1):
        voter_id = take(">i")
        raw_uuid = take(">16s")
        uuid_text = base64.urlsafe_b64encode(raw_uuid).decode().rstrip("=")
        endpoints = []
        for _ in range(uvarint() - 1):
            name, host, port = compact_str(), compact_str(), take(">H")
            skip_tags()
            endpoints.append(f'{{"name":{_jackson_str(name)},"host":{_jackson_str(host)},"port":{port}}}')
        mn, mx = take(">h"), take(">h")
        skip_tags()
        skip_tags()
        voters.append(f'{{"voterId":{voter_id},"voterDirectoryId":"{uuid_text}","endpoints":[{",".join(endpoints)}],'
                      f'"kRaftVersionFeature":{{"minSupportedVersion":{mn},"maxSupportedVersion":{mx}}}}}')
    skip_tags()
    return f'{{"version":{version},"voters":[{",".join(voters)}]}}'


