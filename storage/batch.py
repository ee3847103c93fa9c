"""Record-batch v2 header parsing and iteration (no I/O policy, no decompression on the hot path).

A batch on disk and on the wire is the same bytes: a 61-byte big-endian header (BaseOffset int64,
Length int32 = size - 12, PartitionLeaderEpoch int32, Magic int8 = 2, CRC uint32, Attributes int16,
LastOffsetDelta int32, BaseTimestamp int64, MaxTimestamp int64, ProducerId int64, ProducerEpoch int16,
BaseSequence int32, RecordsCount int32) followed by the records, compressed as one blob when the low three
attribute bits are non-zero. The CRC-32C covers Attributes..end, so the broker may patch BaseOffset and
PartitionLeaderEpoch freely; anything else it rewrites needs a new CRC.

Records (inside the possibly-decompressed payload) are: Length varint, Attributes int8, TimestampDelta varlong,
OffsetDelta varint, Key (varint length, -1 null), Value (same), Headers (varint count, then key string / value
bytes with varint lengths). All varints are zig-zag.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

from kafkalite_storage.errors import CorruptRecordError, InvalidRecordError

HEADER_SIZE = 61
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
PARTITION_LEADER_EPOCH_OFFSET = 12

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi")
_Q = struct.Struct(">q")
_I = struct.Struct(">i")
_UI = struct.Struct(">I")
_H = struct.Struct(">h")


def _load_crc32c() -> ModuleType:
    """The ``crc32c`` package's C extension, loaded without running the package's ``__init__``.

    That ``__init__`` imports ``importlib.metadata`` (and with it ``email``, ``zipfile``, ``csv`` ...) only to
    set ``__version__``: ~15 ms of a ~0.25 s broker start. The extension itself has no Python dependencies.
    Falls back to the normal import if the package is laid out differently."""
    import importlib.machinery
    import importlib.util
    import sys

    try:
        spec = importlib.util.find_spec("crc32c")   # locates the package without executing it
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "_crc32c" + suffix)
                if os.path.exists(path):
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    ext_spec = importlib.util.spec_from_file_location("crc32c._crc32c", path, loader=loader)
                    if ext_spec is None:
                        break
                    module = importlib.util.module_from_spec(ext_spec)
                    loader.exec_module(module)
                    sys.modules.setdefault("crc32c._crc32c", module)
                    return module
    except (ImportError, OSError):
        pass
    import crc32c as package

    loaded: ModuleType = package   # the package is opaque to mypy (pyproject: follow_imports = "skip")
    return loaded


_crc32c = _load_crc32c()


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C (Castagnoli) as Kafka's `Crc32C.compute`; `value` continues a running CRC."""
    return int(_crc32c.crc32c(data, value))


def increment_sequence(seq: int, delta: int) -> int:
    """Sequence arithmetic with int32 wraparound (DefaultRecordBatch.incrementSequence)."""
    if seq > INT32_MAX - delta:
        return delta - (INT32_MAX - seq) - 1
    return seq + delta


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed 61-byte header of one record batch."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total batch size in bytes, including the 12-byte log overhead."""
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def codec_name(self) -> str:
        c = self.compression
        return CODEC_NAMES[c] if c < len(CODEC_NAMES) else f"unknown({c})"

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte header at `pos`; raise CorruptRecordError if short or not magic 2."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(f"batch header needs {HEADER_SIZE} bytes, have {len(buf) - pos}")
    if buf[pos + MAGIC_OFFSET] != 2:
        raise CorruptRecordError(f"unsupported magic {buf[pos + MAGIC_OFFSET]} (only record batch v2)")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    """The CRC-32C a batch should carry (over Attributes..end)."""
    return crc32c(memoryview(batch)[ATTRIBUTES_OFFSET:])


def validate_batch(batch: bytes | bytearray | memoryview, *, exact_count: bool = True) -> BatchHeader:
    """Check exactly one batch: magic, length and CRC-32C (CorruptRecordError); with `exact_count`, as for
    client produce, also that RecordsCount = LastOffsetDelta + 1 > 0 (InvalidRecordError, as Kafka's
    LogValidator). Compacted batches legitimately have fewer records than their offset range."""
    hdr = parse_header(batch)
    if hdr.length + LOG_OVERHEAD != len(batch):
        raise CorruptRecordError(f"batch length field {hdr.length} does not match {len(batch)} bytes")
    if hdr.records_count < 0 or hdr.last_offset_delta < 0:
        raise CorruptRecordError("negative record count or last offset delta")
    if hdr.compression >= len(CODEC_NAMES):
        raise CorruptRecordError(f"unknown compression codec {hdr.compression}")
    actual = compute_crc(batch)
    if actual != hdr.crc:
        raise CorruptRecordError(f"CRC mismatch: stored {hdr.crc}, computed {actual}")
    if exact_count and hdr.records_count != hdr.last_offset_delta + 1:
        raise InvalidRecordError(
            f"inconsistent batch: lastOffsetDelta {hdr.last_offset_delta} but {hdr.records_count} records"
        )
    return hdr


def iter_batches(buf: bytes | bytearray | memoryview, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each complete batch in `buf`; stops at a partial tail."""
    pos = start
    n = len(buf)
    while n - pos >= HEADER_SIZE:
        hdr = parse_header(buf, pos)
        if hdr.length < HEADER_SIZE - LOG_OVERHEAD or pos + hdr.size > n:
            return
        yield pos, hdr
        pos += hdr.size


class Preadable(Protocol):
    """A file opened on demand (kafkalite_storage.handles.FileHandle): positional reads and its size."""

    def pread(self, n: int, offset: int) -> bytes: ...

    def size(self) -> int: ...


def iter_file_batches(
    fd: int | Preadable, start: int = 0, end: int | None = None, chunk: int = 16384
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each batch in a file region, reading headers with pread in chunks.

    `fd` is a descriptor or a handle that opens its file on demand (each read pins it only while it runs).
    Stops silently at a tail too short to hold a header or a whole batch, or at a header that is not
    magic 2 (the caller decides whether that is corruption by comparing the last position with `end`).
    """
    if isinstance(fd, int):
        raw = fd

        def pread(n: int, offset: int) -> bytes:
            return os.pread(raw, n, offset)

        if end is None:
            end = os.fstat(raw).st_size
    else:
        pread = fd.pread
        if end is None:
            end = fd.size()
    pos = start
    buf = b""
    buf_pos = 0
    while end - pos >= HEADER_SIZE:
        rel = pos - buf_pos
        if rel < 0 or rel + HEADER_SIZE > len(buf):
            buf = pread(min(chunk, end - pos), pos)
            buf_pos = pos
            rel = 0
            if len(buf) < HEADER_SIZE:
                return
        if buf[rel + MAGIC_OFFSET] != 2:
            return
        hdr = BatchHeader(*_HEADER.unpack_from(buf, rel))
        if hdr.length < HEADER_SIZE - LOG_OVERHEAD or pos + hdr.size > end:
            return
        yield pos, hdr
        pos += hdr.size


def patch_batch(
    batch: bytes | bytearray | memoryview, base_offset: int, leader_epoch: int | None
) -> bytearray:
    """Copy of `batch` with BaseOffset (and PartitionLeaderEpoch unless None) overwritten; CRC untouched."""
    out = bytearray(batch)
    _Q.pack_into(out, 0, base_offset)
    if leader_epoch is not None:
        _I.pack_into(out, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
    return out


def set_log_append_time(batch: bytearray, timestamp: int) -> None:
    """Set the timestamp-type bit and MaxTimestamp in place and recompute the CRC (LogAppendTime topics)."""
    attrs = _H.unpack_from(batch, ATTRIBUTES_OFFSET)[0] | TIMESTAMP_TYPE_FLAG
    _H.pack_into(batch, ATTRIBUTES_OFFSET, attrs)
    _Q.pack_into(batch, MAX_TIMESTAMP_OFFSET, timestamp)
    _UI.pack_into(batch, CRC_OFFSET, compute_crc(batch))


# ---- records -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch with absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    attributes: int = 0


def _varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordError("truncated varint")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint too long")
    return (raw >> 1) ^ -(raw & 1), pos


def _nullable(buf: bytes | bytearray | memoryview, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise CorruptRecordError("truncated record field")
    return bytes(buf[pos : pos + n]), pos + n


def iter_records(hdr: BatchHeader, records: bytes | memoryview) -> Iterator[Record]:
    """Decode the (uncompressed or already decompressed) records payload that follows the header.

    For LogAppendTime batches every record's timestamp is the batch's MaxTimestamp, as Kafka reads them.
    """
    for _start, _end, rec in iter_record_spans(hdr, records):
        yield rec


def iter_record_spans(hdr: BatchHeader, records: bytes | memoryview) -> Iterator[tuple[int, int, Record]]:
    """Like iter_records, also giving each record's [start, end) in the payload (the compactor copies them).
    Stops with CorruptRecordError where the bytes end, however many records the header claims."""
    pos = 0
    for _ in range(hdr.records_count):
        end, rec = _parse_record(hdr, records, pos)
        yield pos, end, rec
        pos = end


def _parse_record(hdr: BatchHeader, records: bytes | bytearray | memoryview, pos: int) -> tuple[int, Record]:
    length, pos = _varint(records, pos)
    end = pos + length
    if length < 0 or end > len(records):
        raise CorruptRecordError("truncated record")
    if pos >= end:
        raise CorruptRecordError("empty record")
    attrs = records[pos]
    pos += 1
    ts_delta, pos = _varint(records, pos)
    off_delta, pos = _varint(records, pos)
    key, pos = _nullable(records, pos)
    value, pos = _nullable(records, pos)
    nh, pos = _varint(records, pos)
    if nh < 0 or nh > end - pos:
        raise CorruptRecordError(f"invalid record header count {nh}")
    headers: list[tuple[str, bytes | None]] = []
    for _h in range(nh):
        hk, pos = _nullable(records, pos)
        hv, pos = _nullable(records, pos)
        headers.append(((hk or b"").decode("utf-8", "replace"), hv))
    if pos != end:
        raise CorruptRecordError("record length does not match its fields")
    ts = hdr.max_timestamp if hdr.is_log_append_time else hdr.base_timestamp + ts_delta
    return end, Record(hdr.base_offset + off_delta, ts, key, value, tuple(headers), attrs)


def _record_end(buf: bytearray, pos: int) -> int | None:
    """End of the record starting at `pos` if all of it is in `buf`, else None (more bytes needed)."""
    try:
        length, p = _varint(buf, pos)
    except CorruptRecordError as exc:
        if str(exc) == "truncated varint":
            return None
        raise
    if length < 0:
        raise CorruptRecordError(f"negative record length {length}")
    return p + length if p + length <= len(buf) else None


def stream_records(batch: bytes | bytearray | memoryview, hdr: BatchHeader | None = None, *,
                   limit: int | None = None) -> Iterator[tuple[bytes, Record]]:
    """(raw record bytes, Record) of each record of one whole batch, decompressing chunk by chunk (bounded
    streaming: memory holds one piece plus one record; InflateLimitError past `limit` inflated bytes, default
    kafkalite_storage.compression.MAX_INFLATED_BYTES). Work is bounded by the bytes present, never by RecordsCount."""
    # compressed batches only: not at start
    from kafkalite_storage.compression import MAX_INFLATED_BYTES, inflate

    if hdr is None:
        hdr = parse_header(batch)
    body = memoryview(batch)[HEADER_SIZE : hdr.size]
    if not hdr.compression:
        for start, end, rec in iter_record_spans(hdr, body):
            yield bytes(body[start:end]), rec
        return
    pieces = inflate(hdr.compression, body, MAX_INFLATED_BYTES if limit is None else limit)
    pending = bytearray()
    pos = 0
    done = 0
    while done < hdr.records_count:
        if _record_end(pending, pos) is None:
            piece = next(pieces, None)
            if piece is None:
                if pos == len(pending):
                    return   # the records end before RecordsCount says (compacted batches never do)
                raise CorruptRecordError("truncated record")
            del pending[:pos]
            pos = 0
            pending += piece
            continue
        end, rec = _parse_record(hdr, pending, pos)
        yield bytes(pending[pos:end]), rec
        pos = end
        done += 1


def batch_payload(batch: bytes | bytearray | memoryview, hdr: BatchHeader | None = None) -> memoryview:
    """The records payload of a whole batch, decompressed if needed."""
    if hdr is None:
        hdr = parse_header(batch)
    payload = memoryview(batch)[HEADER_SIZE : hdr.size]
    if hdr.compression:
        from kafkalite_storage.compression import decompress  # compressed batches only: not at start

        payload = memoryview(decompress(hdr.compression, payload))
    return payload


def batch_records(batch: bytes | bytearray | memoryview, limit: int | None = None) -> Iterator[Record]:
    """Decode every record of one whole batch by bounded streaming decompression (see stream_records)."""
    return (rec for _raw, rec in stream_records(batch, limit=limit))


CONTROL_ABORT = 0
CONTROL_COMMIT = 1


def parse_control_marker(batch: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(control type, coordinator epoch) of a control batch's record: key = version int16 + type int16;
    for ABORT (0) / COMMIT (1) the value is version int16 + coordinator epoch int32 (-1 for other types)."""
    try:
        rec = next(iter(batch_records(batch)))
    except (StopIteration, CorruptRecordError) as exc:
        raise InvalidRecordError("control batch without a readable record") from exc
    if rec.key is None or len(rec.key) < 4:
        raise InvalidRecordError("control record key too short")
    ctype = int(_H.unpack_from(rec.key, 2)[0])
    coord = -1
    if ctype in (CONTROL_ABORT, CONTROL_COMMIT):
        if rec.value is None or len(rec.value) < 6:
            raise InvalidRecordError("transaction marker value too short")
        coord = int(_I.unpack_from(rec.value, 2)[0])
    return ctype, coord


def require_keys(batch: bytes | bytearray | memoryview) -> None:
    """Compacted topics take only keyed records (Kafka's LogValidator; streams the decompression, bounded by
    kafkalite_storage.compression.MAX_INFLATED_BYTES: InflateLimitError, a RecordTooLargeError, beyond it)."""
    for rec in batch_records(batch):
        if rec.key is None:
            raise InvalidRecordError("compacted topic cannot accept a record without a key")
