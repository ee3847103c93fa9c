"""Batches and records as Kafka's readers see them (FileLogInputStream, DefaultRecordBatch, DefaultRecord,
AbstractLegacyRecordBatch): iteration limits, record parsing with Java's exceptions, decompression."""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafkalite_storage.dumplog.codecs import open_stream
from kafkalite_storage.dumplog.java import (
    _BATCH_OVERHEAD,
    _CODECS,
    _CORRUPT_RECORD,
    _HEADER_SIZE_UP_TO_MAGIC,
    _ILLEGAL_ARG,
    _INT_MAX,
    _INVALID_RECORD,
    _KAFKA_EXC,
    _LOG_OVERHEAD,
    _RECORD_OVERHEAD_V0,
    _V2_HEADER,
    JavaError,
    _i32,
    _i64,
    java_utf8_decode,
)

# a segment's bytes: read into memory or memory-mapped
LogBytes = bytes | memoryview | mmap.mmap


@dataclass
class Batch:
    """One batch as FileLogInputStream finds it: absolute ``position`` in the file and its bytes."""

    position: int
    data: bytes
    magic: int
    file: LogBytes = b""

    @property
    def size(self) -> int:
        return len(self.data)

    def header(self) -> tuple[Any, ...]:
        """The 61-byte v2 header; like ``loadBatchHeader`` it reads past a too-short batch into the file."""
        if len(self.data) >= _BATCH_OVERHEAD:
            return _V2_HEADER.unpack_from(self.data, 0)
        if len(self.file) - self.position >= _BATCH_OVERHEAD:
            return _V2_HEADER.unpack_from(self.file, self.position)
        raise JavaError(_KAFKA_EXC, f"Failed to load record batch at position {self.position} from {{records}}")


@dataclass
class Record:
    offset: int
    timestamp: int
    sequence: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    key_size: int = -1  # as Kafka reports it (legacy records: the raw size field)
    value_size: int = -1
    legacy: tuple[bool, int] | None = None  # (isValid, crc) of a magic 0/1 message
    data_error: JavaError | None = None  # raised when --print-data-log reads the key/value (legacy only)


def increment_sequence(seq: int, inc: int) -> int:
    """``DefaultRecordBatch.incrementSequence`` with Java's int overflow (a negative delta wraps too)."""
    if seq > _i32(_INT_MAX - inc):
        return _i32(inc - _i32(_INT_MAX - seq) - 1)
    return _i32(seq + inc)


def iter_file_batches(buf: LogBytes, start: int, end: int) -> Iterator[Batch]:
    """``FileLogInputStream.nextBatch`` over ``buf[start:end]`` (positions are absolute)."""
    pos = start
    while True:
        if pos >= end - _HEADER_SIZE_UP_TO_MAGIC:
            return
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        if size < _RECORD_OVERHEAD_V0:
            raise JavaError(_CORRUPT_RECORD, f"Found record size {size} smaller than minimum record overhead "
                                             f"({_RECORD_OVERHEAD_V0}) in file {{file}}.")
        if pos > end - _LOG_OVERHEAD - size:
            return
        magic = struct.unpack_from(">b", buf, pos + 16)[0]
        yield Batch(pos, bytes(buf[pos : pos + _LOG_OVERHEAD + size]), magic, buf)
        pos += _LOG_OVERHEAD + size


class _Buf:
    """A ByteBuffer-like reader: ``get`` past ``limit`` raises BufferUnderflowException."""

    __slots__ = ("data", "limit", "pos")

    def __init__(self, data: bytes, pos: int = 0, limit: int | None = None) -> None:
        self.data, self.pos = data, pos
        self.limit = len(data) if limit is None else limit

    def remaining(self) -> int:
        return self.limit - self.pos

    def get(self) -> int:
        if self.pos >= self.limit:
            raise _Underflow
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        result = 0
        for i in range(5):
            b = self.get()
            if i == 4:
                result |= (b << 28) & 0xFFFFFFFF
                if b & 0x80:
                    raise JavaError(_ILLEGAL_ARG, "Varint is too long, the most significant bit in the 5th byte "
                                                  f"is set, converted value: {result:x}")
                break
            result |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                break
        raw = result & 0xFFFFFFFF
        return _i32((raw >> 1) ^ -(raw & 1))

    def varlong(self) -> int:
        value = 0
        shift = 0
        while True:
            b = self.get()
            if not b & 0x80:
                value |= b << shift
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if shift > 63:
                raise JavaError(_ILLEGAL_ARG, "Varlong is too long, most significant bit in the 10th byte is "
                                              f"set, converted value: {value & 0xFFFFFFFFFFFFFFFF:x}")
        raw = value & 0xFFFFFFFFFFFFFFFF
        return _i64((raw >> 1) ^ -(raw & 1))

    def read_bytes(self, n: int) -> bytes | None:
        if n < 0:
            return None
        if n > self.remaining():
            raise JavaError(_ILLEGAL_ARG, "newLimit > capacity")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b


class _Underflow(Exception):
    pass


def _read_record_body(buf: _Buf, size: int, base_offset: int, base_ts: int, base_seq: int,
                      log_append_time: int | None) -> Record:
    """The private ``DefaultRecord.readFrom(ByteBuffer, sizeOfBodyInBytes, ...)``."""
    if buf.remaining() < size:
        raise JavaError(_INVALID_RECORD, f"Invalid record size: expected {size} bytes in record payload, but "
                                         f"instead the buffer has only {buf.remaining()} remaining bytes.")
    try:
        start = buf.pos
        buf.get()  # attributes (unused)
        ts = _i64(base_ts + buf.varlong())
        if log_append_time is not None:
            ts = log_append_time
        offset_delta = buf.varint()
        seq = increment_sequence(base_seq, offset_delta) if base_seq >= 0 else -1
        key = buf.read_bytes(buf.varint())
        value = buf.read_bytes(buf.varint())
        n_headers = buf.varint()
        if n_headers < 0:
            raise JavaError(_INVALID_RECORD, f"Found invalid number of record headers {n_headers}")
        if n_headers > buf.remaining():
            raise JavaError(_INVALID_RECORD, f"Found invalid number of record headers. {n_headers} is larger "
                                             "than the remaining size of the buffer")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(n_headers):
            klen = buf.varint()
            if klen < 0:
                raise JavaError(_INVALID_RECORD, f"Invalid negative header key size {klen}")
            hkey = buf.read_bytes(klen) or b""
            headers.append((java_utf8_decode(hkey), buf.read_bytes(buf.varint())))
        if buf.pos - start != size:
            raise JavaError(_INVALID_RECORD, f"Invalid record size: expected to read {size} bytes in record "
                                             f"payload, but instead read {buf.pos - start}")
    except _Underflow:
        raise JavaError(_INVALID_RECORD, "Found invalid record structure") from None
    except JavaError as e:
        if e.java_class == _ILLEGAL_ARG:
            raise JavaError(_INVALID_RECORD, "Found invalid record structure") from None
        raise
    return Record(_i64(base_offset + offset_delta), ts, seq, key, value, headers,
                  -1 if key is None else len(key), -1 if value is None else len(value))


# kafka-run-class.sh gives tools -Xmx256M; DefaultRecordBatch.iterator() preallocates an ArrayList of `count`
# references (4 bytes each) for compressed batches, so absurd counts end the JVM tool before decompressing.
_OOM_RECORD_COUNT = 60_000_000
_OOM_MESSAGE_SIZE = 250 * 1024 * 1024  # ByteBuffer.allocate(size) for one inner legacy message (approximate)


def iter_records(batch: Batch) -> Iterator[Record]:
    """``DefaultRecordBatch.iterator()``: records one by one for uncompressed batches; compressed batches are
    decompressed and parsed completely before the first record is returned (as Kafka does). Magic 0/1
    message sets go through ``iter_legacy_records``."""
    if batch.magic < 2:
        yield from iter_legacy_records(batch)
        return
    if batch.size < _BATCH_OVERHEAD:  # loadFullBatch() holds fewer bytes than count() reads
        raise JavaError("java.lang.IndexOutOfBoundsException")
    (base_offset, _len, _ple, _magic, _crc, attrs, _lod, base_ts, max_ts, _pid, _epoch, base_seq,
     count) = batch.header()
    if count == 0:
        return
    codec = attrs & 0x07
    if codec not in _CODECS:
        raise JavaError(_ILLEGAL_ARG, f"Unknown compression type id: {codec}")
    log_append_time = max_ts if attrs & 0x08 else None
    if codec == 0:
        if count < 0:
            raise JavaError(_INVALID_RECORD, f"Found invalid record count {count} in magic v{batch.magic} batch")
        buf = _Buf(batch.data, _BATCH_OVERHEAD)
        for n in range(count):
            try:
                size = buf.varint()
            except _Underflow:
                raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached") from None
            rec = _read_record_body(buf, size, base_offset, base_ts, base_seq, log_append_time)
            if n == count - 1 and buf.remaining():
                raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")
            yield rec
        return
    opened = open_stream(codec, batch.data[_BATCH_OVERHEAD:], batch.magic)
    if count < 0:
        raise JavaError(_INVALID_RECORD, f"Found invalid record count {count} in magic v{batch.magic} batch")
    if count >= _OOM_RECORD_COUNT:
        raise JavaError("java.lang.OutOfMemoryError", "Java heap space",
                        detail=f"a batch claims {count} records, more than this tool will load")

    def stream_failed(context: str) -> JavaError:
        if isinstance(opened.failure, JavaError):
            return opened.failure
        return JavaError(_KAFKA_EXC, context)

    stream = _Buf(opened.data)
    records = []
    for n in range(count):
        try:
            size = stream.varint()
        except _Underflow:
            if opened.failure is not None:
                raise stream_failed("Failed to decompress record stream") from None
            raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached") from None
        except JavaError:  # an over-long varint: IllegalArgumentException, reported like an early EOF
            raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached") from None
        if size < 0:  # ByteBuffer.allocate(negative): IllegalArgumentException, same report
            raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached")
        if stream.remaining() < size:
            if opened.failure is not None:
                raise stream_failed("Failed to decompress record stream")
            raise JavaError(_INVALID_RECORD, f"Invalid record size: expected {size} bytes in record payload, "
                                             "but the record payload reached EOF.")
        body = _Buf(stream.data, stream.pos, stream.pos + size)
        stream.pos += size
        records.append(_read_record_body(body, size, base_offset, base_ts, base_seq, log_append_time))
        if n == count - 1:
            if stream.remaining():
                raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")
            if opened.failure is not None:
                raise stream_failed("Error checking for remaining bytes after reading batch")
    yield from records


@dataclass
class _Legacy:
    """One magic 0/1 message (``LegacyRecord``): ``raw`` starts at its CRC (after offset and size). Accessors
    fail the way the Java ones do on a short or inconsistent buffer."""

    offset: int
    raw: bytes

    @property
    def magic(self) -> int:
        return int(struct.unpack_from(">b", self.raw, 4)[0])

    @property
    def attrs(self) -> int:
        return self.raw[5]

    @property
    def crc(self) -> int:
        return int(struct.unpack_from(">I", self.raw, 0)[0])

    @property
    def valid(self) -> bool:
        return len(self.raw) >= _RECORD_OVERHEAD_V0 and zlib.crc32(self.raw[4:]) == self.crc

    @property
    def timestamp_type(self) -> str:
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attrs & 0x08 else "CreateTime"

    def _get(self, fmt: str, pos: int) -> int:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > len(self.raw):
            raise JavaError("java.lang.IndexOutOfBoundsException")
        return int(struct.unpack_from(fmt, self.raw, pos)[0])

    @property
    def own_timestamp(self) -> int:
        return -1 if self.magic == 0 else self._get(">q", 6)

    @property
    def key_size_offset(self) -> int:
        return 6 if self.magic == 0 else 14

    def key_size(self) -> int:
        return self._get(">i", self.key_size_offset)

    def value_size_offset(self) -> int:
        return self.key_size_offset + 4 + max(0, self.key_size())

    def value_size(self) -> int:
        return self._get(">i", self.value_size_offset())

    def _size_delimited(self, start: int) -> bytes | None:
        """``Utils.sizeDelimited``: duplicate, move past the size, slice, set the limit."""
        size = self._get(">i", start)
        if size < 0:
            return None
        position, limit = start + 4, len(self.raw)
        if position > limit:
            raise JavaError(_ILLEGAL_ARG, f"newPosition > limit: ({position} > {limit})")
        if size > limit - position:
            raise JavaError(_ILLEGAL_ARG, f"newLimit > capacity: ({size} > {limit - position})")
        return self.raw[position : position + size]

    def key(self) -> bytes | None:
        return self._size_delimited(self.key_size_offset)

    def value(self) -> bytes | None:
        return self._size_delimited(self.value_size_offset())


def _legacy_record(m: _Legacy, offset: int, timestamp: int) -> Record:
    """The metadata Kafka prints for a legacy record; key and value are read like DecoderMessageParser does
    (key first, then the value), and a failure there is kept for the moment the dumper needs them."""
    ks, vs = m.key_size(), m.value_size()
    key = value = None
    error = None
    try:
        key = m.key() if ks >= 0 else None
        value = m.value() if m.value_size() >= 0 else None
    except JavaError as e:
        error = e
    return Record(offset, timestamp, -1, key, value, [], ks, vs, (m.valid, m.crc), error)


def iter_legacy_records(batch: Batch) -> Iterator[Record]:
    """``AbstractLegacyRecordBatch.iterator()``: the message itself, or the messages inside a compressed
    wrapper (magic 1 wrappers carry relative inner offsets; a LogAppendTime wrapper's timestamp overrides)."""
    wrapper = _Legacy(int(struct.unpack_from(">q", batch.data, 0)[0]), batch.data[12:])
    codec = wrapper.attrs & 0x07
    if codec == 0:
        yield _legacy_record(wrapper, wrapper.offset, wrapper.own_timestamp)
        return
    wmagic = wrapper.magic
    if wmagic not in (0, 1):
        raise JavaError(_INVALID_RECORD, f"Invalid wrapper magic found in legacy deep record iterator {wmagic}")
    if codec == 4:
        raise JavaError(_INVALID_RECORD, f"Invalid wrapper compressionType found in legacy deep record iterator "
                                         f"{wmagic}")
    value = wrapper.value()
    if value is None:
        raise JavaError(_INVALID_RECORD, f"Found invalid compressed record set with null value (magic = {wmagic})")
    opened = open_stream(codec, value, wmagic)
    data = opened.data

    def stream_failed() -> JavaError:
        # DeepRecordsIterator reads every inner message up front; an IOException becomes KafkaException(e)
        if isinstance(opened.failure, JavaError):
            return opened.failure
        return JavaError(_KAFKA_EXC, opened.cause)

    inner: list[_Legacy] = []
    pos = 0
    while True:
        if len(data) - pos < _LOG_OVERHEAD:
            if opened.failure is not None:
                raise stream_failed()
            break
        off, size = struct.unpack_from(">qi", data, pos)
        if size < _RECORD_OVERHEAD_V0:
            raise JavaError(_CORRUPT_RECORD, "Record size is less than the minimum record overhead (14)")
        if size >= _OOM_MESSAGE_SIZE:
            raise JavaError("java.lang.OutOfMemoryError", "Java heap space",
                            detail=f"a wrapped message claims {size} bytes, more than this tool will load")
        if len(data) - pos - _LOG_OVERHEAD < size:
            if opened.failure is not None:
                raise stream_failed()
            break
        inner.append(_Legacy(off, data[pos + _LOG_OVERHEAD : pos + _LOG_OVERHEAD + size]))
        pos += _LOG_OVERHEAD + size
    if not inner:
        raise JavaError(_INVALID_RECORD, "Found invalid compressed record set with no inner records")
    base = -1
    if wmagic == 1:
        if wrapper.offset == 0:
            base = 0
        else:
            if wrapper.offset < inner[-1].offset:
                raise JavaError(_INVALID_RECORD, "Found invalid wrapper offset in compressed v1 message set, "
                                                 f"wrapper offset '{wrapper.offset}' is less than the last inner "
                                                 f"message offset '{inner[-1].offset}' and it is not zero.")
            base = wrapper.offset - inner[-1].offset
    lat = wmagic == 1 and bool(wrapper.attrs & 0x08)
    for m in inner:
        offset = base + m.offset if wmagic == 1 else m.offset
        if m.attrs & 0x07:
            raise JavaError(_INVALID_RECORD, "Inner messages must not be compressed")
        if m.magic == 0:
            ts = -1
        elif m.magic == 1 and lat:
            ts = wrapper.own_timestamp
        else:
            ts = m.own_timestamp
        yield _legacy_record(m, offset, ts)


