"""``kafkalite dump-log``: Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``, 3.9) line for line.

Theory of operation. Kafka's tool walks each ``--files`` entry and picks a dumper by the suffix after the last
dot: ``.log`` and ``.checkpoint`` (KRaft snapshots) print batches, ``.index`` / ``.timeindex`` print entries and
check them against the segment's ``.log``, ``.snapshot`` prints producer-state entries, ``.txnindex`` prints
aborted transactions; anything else is "Ignoring unknown file". Mismatches found while dumping indexes and
non-consecutive offsets found while deep-iterating logs are collected per file (keyed by the absolute path) and
printed to stderr only after all files were dumped, in the iteration order of Scala 2.13's ``mutable.HashMap``
(reproduced by ``ScalaHashMap``). Index mismatches and offset gaps are *prepended* to their lists in
Kafka, so they print newest first; time-index problems are appended and print oldest first.

Where Kafka's values come from (all reproduced here from the bytes, never from our own storage code):

* batch line: the v2 header fields as stored; ``lastSequence`` wraps like ``DefaultRecordBatch.incrementSequence``;
  ``deleteHorizonMs`` is Java's ``OptionalLong`` text (``OptionalLong.empty`` / ``OptionalLong[ms]``); the
  timestamp label is ``TimestampType.toString`` (``CreateTime`` / ``LogAppendTime``, attribute bit 3); ``crc``
  is the stored unsigned CRC-32C and ``isvalid`` recomputes it over attributes..end.
* record line (deep iteration; ``--print-data-log`` implies it): record timestamps are ``baseTimestamp + delta``
  or the batch's maxTimestamp for LogAppendTime batches; ``sequence`` is ``baseSequence + offsetDelta`` (wrapping)
  or -1; header keys and (with ``--print-data-log``) key/payload are decoded the way Java's
  ``new String(bytes, UTF_8)`` does it, including its replacement rules for malformed input (``java_utf8_decode``).
* segment iteration follows ``FileLogInputStream``: stop when fewer than 17 bytes remain or a batch does not fit
  (the rest is reported as "Found N invalid bytes at the end of NAME"); a size field below 14 is a
  ``CorruptRecordException`` that ends the tool.

When Kafka's tool would die with an exception we print the exception's first line the way the JVM does
(``Exception in thread "main" <class>: <message>``), without the stack trace, and return exit status 1.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import crc32c as _crc32c

_INT_MAX = 2**31 - 1
_NO_TIMESTAMP = -1
_HEADER_SIZE_UP_TO_MAGIC = 17
_LOG_OVERHEAD = 12
_RECORD_OVERHEAD_V0 = 14
_BATCH_OVERHEAD = 61
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                  5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_MAX_MESSAGE_SIZE_DEFAULT = 5 * 1024 * 1024
_Writer = Callable[[str], object]

_CORRUPT_RECORD = "org.apache.kafka.common.errors.CorruptRecordException"
_INVALID_RECORD = "org.apache.kafka.common.InvalidRecordException"
_KAFKA_EXC = "org.apache.kafka.common.KafkaException"
_ILLEGAL_ARG = "java.lang.IllegalArgumentException"


class JavaError(Exception):
    """An exception Kafka's tool would throw out of ``main`` (the JVM prints it and exits with status 1)."""

    def __init__(self, java_class: str, message: str | None = None) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.message = message

    def render(self) -> str:
        head = f'Exception in thread "main" {self.java_class}'
        return head if self.message is None else f"{head}: {self.message}"


# ---------------------------------------------------------------------------------------------------------------
# Java-compatible helpers: java.io.File path text, String(bytes, UTF_8), Scala HashMap iteration order.


def _jfile(path: str) -> str:
    """``new File(path).toString()``: duplicate slashes collapse and a trailing slash goes (UnixFileSystem)."""
    out: list[str] = []
    prev = ""
    for ch in path:
        if ch == "/" and prev == "/":
            continue
        out.append(ch)
        prev = ch
    s = "".join(out)
    if len(s) > 1 and s.endswith("/"):
        s = s[:-1]
    return s


def _jname(path: str) -> str:
    return path[path.rfind("/") + 1 :]


def _jabs(path: str) -> str:
    """``File.getAbsolutePath()``: relative paths are resolved against user.dir, without normalising ``..``."""
    if path.startswith("/"):
        return path
    cwd = os.getcwd()
    return cwd if path == "" else _jfile(cwd + "/" + path)


def _jparse_long(s: str) -> int:
    body = s[1:] if s[:1] in "+-" else s
    if not body or not body.isascii() or not body.isdigit():
        raise JavaError("java.lang.NumberFormatException", f'For input string: "{s}"')
    value = int(s)
    if not -(2**63) <= value < 2**63:
        raise JavaError("java.lang.NumberFormatException", f'For input string: "{s}"')
    return value


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _java_utf8_slow(data: bytes) -> str:
    """Port of the replacement rules of Java 17's ``String(byte[], UTF_8)``.

    Differences from Python's ``errors="replace"``: a 3-byte sequence that decodes to a surrogate (ED A0..BF xx)
    is one U+FFFD (Python: three); a bad third byte after a valid lead+continuation replaces both with one U+FFFD;
    a truncated sequence at the end of input becomes a single U+FFFD and ends decoding.
    """
    out: list[str] = []
    n = len(data)
    i = 0
    rep = "\ufffd"
    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if i < n:
                if not _cont(data[i]):
                    out.append(rep)
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)))
                    i += 1
                continue
            out.append(rep)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if i + 1 < n:
                b2, b3 = data[i], data[i + 1]
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    out.append(rep)
                    i += 0 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)) else 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(rep if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 2
                continue
            if i < n and ((b1 == 0xE0 and (data[i] & 0xE0) == 0x80) or not _cont(data[i])):
                out.append(rep)
                continue
            out.append(rep)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 2 < n:
                b2, b3, b4 = data[i], data[i + 1], data[i + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(rep)
                    if (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                            or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)):
                        i += 0
                    elif not _cont(b3):
                        i += 1
                    else:
                        i += 2
                else:
                    out.append(chr(uc))
                    i += 3
                continue
            if b1 > 0xF4 or (i < n and ((b1 == 0xF0 and not 0x90 <= data[i] <= 0xBF)
                                        or (b1 == 0xF4 and (data[i] & 0xF0) != 0x80) or not _cont(data[i]))):
                out.append(rep)
                continue
            i += 1
            out.append(rep)
            if i < n and not _cont(data[i]):
                continue
            break
        else:
            out.append(rep)
    return "".join(out)


def java_utf8_decode(data: bytes) -> str:
    """What Java's ``new String(data, StandardCharsets.UTF_8)`` returns (Kafka's StringDecoder, header keys)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _java_utf8_slow(data)


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(s.encode('utf-16-le')) // 2}H", s.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


class ScalaHashMap:
    """Key order of a Scala 2.13 ``mutable.HashMap[String, _]`` (what DumpLogSegments collects errors in).

    Buckets are ``improveHash(hashCode) & (capacity - 1)``; capacity starts at 16 and doubles whenever a ``put``
    (also one that only replaces a value) finds ``size + 1 >= 0.75 * capacity``; a bucket keeps its nodes sorted
    by improved hash (signed compare), equal hashes in insertion order. Iteration walks buckets in order.
    """

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.capacity = 16

    def put(self, key: str, value: Any) -> None:
        if len(self.values) + 1 >= int(self.capacity * 0.75):
            self.capacity *= 2
        self.values[key] = value

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def ordered_keys(self) -> list[str]:
        entries = []
        for n, k in enumerate(self.values):
            h = _java_string_hash(k) & 0xFFFFFFFF
            h ^= h >> 16
            entries.append((h & (self.capacity - 1), _i32(h), n, k))
        return [k for _, _, _, k in sorted(entries)]


# ---------------------------------------------------------------------------------------------------------------
# Batches and records (FileLogInputStream / DefaultRecordBatch / DefaultRecord semantics).


@dataclass
class Batch:
    """One batch as FileLogInputStream finds it: absolute ``position`` in the file and its bytes."""

    position: int
    data: bytes
    magic: int
    file: bytes | memoryview = b""

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


def _i32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _i64(v: int) -> int:
    v &= 0xFFFFFFFFFFFFFFFF
    return v - (1 << 64) if v & 0x8000000000000000 else v


def increment_sequence(seq: int, inc: int) -> int:
    if seq > _INT_MAX - inc:
        return inc - (_INT_MAX - seq) - 1
    return seq + inc


def iter_file_batches(buf: bytes | memoryview, start: int, end: int) -> Iterator[Batch]:
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

    __slots__ = ("data", "pos", "limit")

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


def _xerial_or_raw_snappy(data: bytes) -> bytes:
    import snappy  # type: ignore[import-untyped]

    if len(data) >= 16 and data[:8] == b"\x82SNAPPY\x00":
        out = bytearray()
        pos = 16
        while pos + 4 <= len(data):
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out += snappy.uncompress(data[pos : pos + n])
            pos += n
        return bytes(out)
    return bytes(snappy.uncompress(data)) if data else b""


def _gunzip_members(data: bytes) -> bytes:
    out = bytearray()
    rest = data
    first = True
    while rest and (first or rest[:2] == b"\x1f\x8b"):
        d = zlib.decompressobj(wbits=31)
        out += d.decompress(rest)
        if not d.eof:
            raise EOFError("Unexpected end of ZLIB input stream")
        rest = d.unused_data
        first = False
    return bytes(out)


def _decompress(codec: int, payload: bytes) -> bytes:
    try:
        if codec == 1:
            return _gunzip_members(payload)
        if codec == 2:
            return _xerial_or_raw_snappy(payload)
        if codec == 3:
            import lz4.frame  # type: ignore[import-untyped]

            return bytes(lz4.frame.decompress(payload))
        if codec == 4:
            import io

            import zstandard

            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(payload), read_across_frames=True)
            return bytes(reader.read())
    except (OSError, EOFError, ValueError, RuntimeError, zlib.error) as e:
        raise JavaError(_KAFKA_EXC, f"Failed to decompress record stream: {e}") from None
    except Exception as e:  # codec libraries raise their own error types
        raise JavaError(_KAFKA_EXC, f"Failed to decompress record stream: {e}") from None
    raise JavaError(_ILLEGAL_ARG, f"Unknown compression type id: {codec}")


def iter_records(batch: Batch) -> Iterator[Record]:
    """``DefaultRecordBatch.iterator()``: records one by one for uncompressed batches; compressed batches are
    decompressed and parsed completely before the first record is returned (as Kafka does). Magic 0/1
    message sets go through ``iter_legacy_records``."""
    if batch.magic < 2:
        yield from iter_legacy_records(batch)
        return
    (base_offset, _len, _ple, _magic, _crc, attrs, _lod, base_ts, max_ts, _pid, _epoch, base_seq,
     count) = batch.header()
    if count == 0:
        return
    if count < 0:
        raise JavaError(_INVALID_RECORD, f"Found invalid record count {count} in magic v{batch.magic} batch")
    log_append_time = max_ts if attrs & 0x08 else None
    codec = attrs & 0x07
    if codec == 0:
        buf = _Buf(batch.data, _BATCH_OVERHEAD)
        for n in range(count):
            try:
                size = buf.varint()
            except _Underflow:
                raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached") from None
            try:
                rec = _read_record_body(buf, size, base_offset, base_ts, base_seq, log_append_time)
            except _Underflow:
                raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached") from None
            if n == count - 1 and buf.remaining():
                raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")
            yield rec
        return
    if codec not in _CODECS:
        raise JavaError(_ILLEGAL_ARG, f"Unknown compression type id: {codec}")
    stream = _Buf(_decompress(codec, batch.data[_BATCH_OVERHEAD:]))
    records = []
    for n in range(count):
        try:
            size = stream.varint()
            if size < 0:
                raise _Underflow
        except (_Underflow, JavaError):
            # EOF and over-long varints both surface as IllegalArgumentException in StreamRecordIterator
            raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, premature EOF reached") from None
        if stream.remaining() < size:
            raise JavaError(_INVALID_RECORD, f"Invalid record size: expected {size} bytes in record payload, "
                                             "but the record payload reached EOF.")
        body = _Buf(stream.data, stream.pos, stream.pos + size)
        stream.pos += size
        records.append(_read_record_body(body, size, base_offset, base_ts, base_seq, log_append_time))
        if n == count - 1 and stream.remaining():
            raise JavaError(_INVALID_RECORD, "Incorrect declared batch size, records still remaining in file")
    yield from records


@dataclass
class _Legacy:
    """One magic 0/1 message (``LegacyRecord``): ``raw`` starts at its CRC (after offset and size)."""

    offset: int
    raw: bytes

    @property
    def magic(self) -> int:
        return self.raw[4]

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

    @property
    def own_timestamp(self) -> int:
        return -1 if self.magic == 0 else int(struct.unpack_from(">q", self.raw, 6)[0])

    def key_value(self) -> tuple[int, bytes | None, int, bytes | None]:
        try:
            pos = 6 if self.magic == 0 else 14
            (ks,) = struct.unpack_from(">i", self.raw, pos)
            key = None if ks < 0 else self.raw[pos + 4 : pos + 4 + ks]
            pos += 4 + max(ks, 0)
            (vs,) = struct.unpack_from(">i", self.raw, pos)
            value = None if vs < 0 else self.raw[pos + 4 : pos + 4 + vs]
        except struct.error:
            raise JavaError("java.lang.IndexOutOfBoundsException") from None
        return ks, key, vs, value


def legacy_batch_line(batch: Batch) -> str:
    """``printBatchLevel`` for magic 0/1: the wrapper message's offset, timestamp, codec and CRC-32."""
    m = _Legacy(int(struct.unpack_from(">q", batch.data, 0)[0]), batch.data[12:])
    codec = m.attrs & 0x07
    if codec not in _CODECS:
        raise JavaError(_ILLEGAL_ARG, f"Unknown compression type id: {codec}")
    return (f"offset: {m.offset} position: {batch.position} {m.timestamp_type}: {m.own_timestamp} "
            f"size: {batch.size} magic: {m.magic} compresscodec: {_CODECS[codec]} crc: {m.crc} "
            f"isvalid: {'true' if m.valid else 'false'}")


def _legacy_record(m: _Legacy, offset: int, timestamp: int) -> Record:
    ks, key, vs, value = m.key_value()
    return Record(offset, timestamp, -1, key, value, [], ks, vs, (m.valid, m.crc))


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
    _ks, _key, _vs, value = wrapper.key_value()
    if value is None:
        raise JavaError(_INVALID_RECORD, f"Found invalid compressed record set with null value (magic = {wmagic})")
    data = _decompress(codec, value)
    inner: list[_Legacy] = []
    pos = 0
    while pos + _LOG_OVERHEAD <= len(data):
        off, size = struct.unpack_from(">qi", data, pos)
        if size < _RECORD_OVERHEAD_V0:
            raise JavaError(_CORRUPT_RECORD, "Record size is less than the minimum record overhead (14)")
        if pos + _LOG_OVERHEAD + size > len(data):
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


# ---------------------------------------------------------------------------------------------------------------
# Output formatting.


def _optional_long(v: int | None) -> str:
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def batch_line(batch: Batch) -> str:
    """``printBatchLevel`` for magic 2 (without the newline)."""
    (base_offset, _len, ple, _magic, crc, attrs, lod, base_ts, max_ts, pid, epoch, base_seq,
     count) = batch.header()
    attrs &= 0xFF
    last_seq = -1 if base_seq == -1 else increment_sequence(base_seq, lod)
    codec = attrs & 0x07
    if codec not in _CODECS:
        raise JavaError(_ILLEGAL_ARG, f"Unknown compression type id: {codec}")
    horizon = base_ts if attrs & 0x40 else None
    ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
    valid = batch.size >= _BATCH_OVERHEAD and _crc32c.crc32c(batch.data[21:]) == crc
    return (f"baseOffset: {base_offset} lastOffset: {_i64(base_offset + lod)} count: {count} "
            f"baseSequence: {base_seq} lastSequence: {last_seq} producerId: {pid} producerEpoch: {epoch} "
            f"partitionLeaderEpoch: {ple} isTransactional: {'true' if attrs & 0x10 else 'false'} "
            f"isControl: {'true' if attrs & 0x20 else 'false'} deleteHorizonMs: {_optional_long(horizon)} "
            f"position: {batch.position} {ts_type}: {max_ts} size: {batch.size} magic: {batch.magic} "
            f"compresscodec: {_CODECS[codec]} crc: {crc} isvalid: {'true' if valid else 'false'}")


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
        if type_id == 3:
            v, ts = struct.unpack_from(">hq", value, 0)
            return f' SnapshotHeader {{"version":{v},"lastContainedLogTimestamp":{ts}}}'
        if type_id == 4:
            (v,) = struct.unpack_from(">h", value, 0)
            return f' SnapshotFooter {{"version":{v}}}'
        if type_id == 5:
            v, kv = struct.unpack_from(">hh", value, 0)
            return f' KRaftVersion {{"version":{v},"kRaftVersion":{kv}}}'
        if type_id == 6:
            return f" KRaftVoters {_voters_json(value)}"
    except (struct.error, _Underflow, IndexError):
        raise JavaError("java.nio.BufferUnderflowException") from None
    return f" controlType: {name}({type_id})"


def _voters_json(value: bytes) -> str:
    """VotersRecord (flexible v0) as its generated JsonConverter writes it (field order of the JSON spec)."""
    import base64

    buf = _Buf(value)

    def uvarint() -> int:
        r, shift = 0, 0
        while True:
            b = buf.get()
            r |= (b & 0x7F) << shift
            if not b & 0x80:
                return r
            shift += 7

    def skip_tags() -> None:
        for _ in range(uvarint()):
            uvarint()
            n = uvarint()
            buf.read_bytes(n)

    def compact_str() -> str:
        n = uvarint() - 1
        return java_utf8_decode(buf.read_bytes(n) or b"")

    def take(fmt: str) -> Any:
        s = struct.Struct(fmt)
        raw = bytes(buf.get() for _ in range(s.size))
        return s.unpack(raw)[0]

    version = take(">h")
    voters = []
    for _ in range(uvarint() - 1):
        voter_id = take(">i")
        raw_uuid = bytes(buf.get() for _ in range(16))
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
    return f'{{"version":{version},"voters":[{",".join(voters)}]}}'


# ---------------------------------------------------------------------------------------------------------------
# The dumpers.


@dataclass
class Options:
    print_data_log: bool = False
    deep_iteration: bool = False
    index_sanity_check: bool = False
    verify_index_only: bool = False
    skip_record_metadata: bool = False
    max_message_size: int = _MAX_MESSAGE_SIZE_DEFAULT
    max_bytes: int = _INT_MAX


class _State:
    """The error maps of DumpLogSegments.main, with Kafka's put pattern (which decides their capacity)."""

    def __init__(self) -> None:
        self.index_mismatches = ScalaHashMap()
        self.nonconsecutive = ScalaHashMap()
        self.ts_mismatch = ScalaHashMap()
        self.ts_out_of_order = ScalaHashMap()
        self.ts_not_found = ScalaHashMap()

    @staticmethod
    def prepend(m: ScalaHashMap, key: str, pair: tuple[int, int]) -> None:
        """``seq = m.getOrElse(k, Nil); seq ::= pair; m.put(k, seq)``: a put on every call."""
        m.put(key, [pair, *(m.get(key) or [])])

    @staticmethod
    def append(m: ScalaHashMap, key: str, pair: tuple[int, int]) -> None:
        """``TimeIndexDumpErrors``: put only when the key's buffer is new, then append to it."""
        seq = m.get(key)
        if seq is None:
            seq = []
            m.put(key, seq)
        seq.append(pair)


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise JavaError("java.nio.file.NoSuchFileException", path) from None


def _corrupt_with_file(e: JavaError, path: str) -> JavaError:
    if e.message and "{file}" in e.message:
        return JavaError(e.java_class, e.message.replace("{file}", path))
    return e


def _dump_log(path: str, opts: Options, st: _State, w: _Writer) -> None:
    name = _jname(path)
    if name.endswith(".log"):
        w(f"Log starting offset: {_jparse_long(name.split('.')[0])}\n")
    elif name.endswith(".checkpoint"):
        if name == "bootstrap.checkpoint":
            w("KRaft bootstrap snapshot\n")
        else:
            end_offset = _jparse_long(name[:20])
            epoch = _jparse_long(name[21:31])
            w(f"Snapshot end offset: {end_offset}, epoch: {epoch}\n")
    data = _read_file(path)
    size = min(len(data), opts.max_bytes)
    deep = opts.deep_iteration or opts.print_data_log
    valid_bytes = 0
    last_offset = -1
    try:
        for batch in iter_file_batches(data, 0, size):
            legacy = batch.magic < 2
            w((legacy_batch_line(batch) if legacy else batch_line(batch)) + "\n")
            if deep:
                if legacy:
                    is_control = False
                    ts_type = _Legacy(0, batch.data[12:]).timestamp_type
                else:
                    attrs = batch.header()[5]
                    is_control = bool(attrs & 0x20)
                    ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
                for rec in iter_records(batch):
                    if last_offset != -1 and rec.offset != last_offset + 1:
                        st.prepend(st.nonconsecutive, _jabs(path), (last_offset, rec.offset))
                    last_offset = rec.offset
                    prefix = "| "
                    if not opts.skip_record_metadata:
                        w(f"{prefix}offset: {rec.offset} {ts_type}: {rec.timestamp} keySize: {rec.key_size} "
                          f"valueSize: {rec.value_size}")
                        prefix = " "
                        if rec.legacy is None:
                            hk = ",".join(k for k, _ in rec.headers)
                            w(f" sequence: {rec.sequence} headerKeys: [{hk}]")
                        else:  # Kafka's format string really ends in "}}" here
                            w(f" isValid: {'true' if rec.legacy[0] else 'false'} crc: {rec.legacy[1]}}}")
                        if is_control:
                            w(_control_suffix(rec))
                    if opts.print_data_log and not is_control:
                        if rec.key is not None:
                            w(f"{prefix}key: {java_utf8_decode(rec.key)}")
                            prefix = " "
                        if rec.value is not None:
                            w(f" payload: {java_utf8_decode(rec.value)}")
                    w("\n")
            valid_bytes += batch.size
    except JavaError as e:
        raise _corrupt_with_file(e, path) from None
    trailing = size - valid_bytes
    if trailing > 0 and opts.max_bytes == _INT_MAX:
        w(f"Found {trailing} invalid bytes at the end of {name}\n")


def _segment_files(path: str, suffix: str) -> str:
    absolute = _jabs(path)
    parent = absolute[: absolute.rfind("/")] or "/"
    return _jfile(parent + "/" + _jname(path).split(".")[0] + suffix)


def _index_entries(data: bytes, entry_size: int) -> int:
    return len(data) // entry_size


def _first_batch_last_offset(log: bytes, position: int, max_size: int, log_path: str) -> int:
    """``fileRecords.slice(position, maxSize).batches.iterator.next().lastOffset``."""
    size = len(log)
    if position < 0:
        raise JavaError(_ILLEGAL_ARG, f"Invalid position: {position} in read from FileRecords(size={size}, "
                                      f"file={log_path}, start=0, end={_INT_MAX})")
    if position > size:
        raise JavaError(_ILLEGAL_ARG, f"Slice from position {position} exceeds end position of "
                                      f"FileRecords(size={size}, file={log_path}, start=0, end={_INT_MAX})")
    end = position + max_size
    if end > size or end > _INT_MAX:
        end = size
    try:
        for batch in iter_file_batches(log, position, end):
            if batch.magic < 2:
                return _i64(struct.unpack_from(">q", batch.data, 0)[0])
            base, lod = struct.unpack_from(">q", batch.data, 0)[0], struct.unpack_from(">i", batch.data, 23)[0]
            return _i64(base + lod)
    except JavaError as e:
        raise _corrupt_with_file(e, log_path) from None
    raise JavaError("java.util.NoSuchElementException")


def _dump_index(path: str, opts: Options, st: _State, w: _Writer) -> None:
    base = _jparse_long(_jname(path).split(".")[0])
    log_path = _segment_files(path, ".log")
    log = _read_file(log_path)
    data = _read_index(path, 8)
    entries = _index_entries(data, 8)
    if entries == 0:
        w(f"{path} is empty.\n")
        return
    if opts.index_sanity_check:
        last = base + struct.unpack_from(">i", data, (entries - 1) * 8)[0]
        if last < base:
            raise JavaError("org.apache.kafka.storage.internals.log.CorruptIndexException",
                            f"Corrupt index found, index file {_jabs(path)} has non-zero size but the last offset "
                            f"is {last} which is less than the base offset {base}")
        if len(data) % 8:
            raise JavaError("org.apache.kafka.storage.internals.log.CorruptIndexException",
                            f"Index file {_jabs(path)} is corrupt, found {len(data)} bytes which is neither "
                            "positive nor a multiple of 8")
        w(f"{path} passed sanity check.\n")
        return
    for i in range(entries):
        rel, position = struct.unpack_from(">ii", data, i * 8)
        offset = base + rel
        if offset == base and i > 0:
            return
        log_last = _first_batch_last_offset(log, position, opts.max_message_size, log_path)
        if log_last != offset:
            st.prepend(st.index_mismatches, _jabs(path), (offset, log_last))
        if not opts.verify_index_only:
            w(f"offset: {offset} position: {position}\n")


def _read_index(path: str, entry_size: int) -> bytes:
    if not os.path.exists(path):
        # Kafka's AbstractIndex would create the file, then fail: maxIndexSize -1 < entry size.
        raise JavaError(_ILLEGAL_ARG, "Invalid max index size: -1")
    with open(path, "rb") as f:
        return f.read()


def _offset_index_lookup(data: bytes, base: int, target: int) -> int:
    """``OffsetIndex.lookup(target).position``: the warm/cold binary search of AbstractIndex, key search."""
    entries = len(data) // 8

    def key(n: int) -> int:
        return base + int(struct.unpack_from(">i", data, n * 8)[0])

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            k = key(mid)
            if k > target:
                hi = mid - 1
            elif k < target:
                lo = mid
            else:
                return mid
        return lo

    if entries == 0:
        return 0
    first_hot = max(0, entries - 1 - 8192 // 8)
    if key(first_hot) < target:
        slot = search(first_hot, entries - 1)
    elif key(0) > target:
        slot = -1
    else:
        slot = search(0, first_hot)
    return 0 if slot == -1 else struct.unpack_from(">i", data, slot * 8 + 4)[0]


def _dump_time_index(path: str, opts: Options, st: _State, w: _Writer) -> None:
    base = _jparse_long(_jname(path).split(".")[0])
    log_path = _segment_files(path, ".log")
    log = _read_file(log_path)
    index = _read_index(_segment_files(path, ".index"), 8)
    index = index[: len(index) // 8 * 8]
    data = _read_index(path, 12)
    entries = len(data) // 12
    key = _jabs(path)
    if opts.index_sanity_check:
        if entries:
            first_ts = struct.unpack_from(">q", data, 0)[0]
            last_ts, last_rel = struct.unpack_from(">qi", data, (entries - 1) * 12)
            exc = "org.apache.kafka.storage.internals.log.CorruptIndexException"
            if last_ts < first_ts:
                raise JavaError(exc, f"Corrupt time index found, time index file ({key}) has non-zero size but "
                                     f"the last timestamp is {last_ts} which is less than the first timestamp "
                                     f"{first_ts}")
            if base + last_rel < base:
                raise JavaError(exc, f"Corrupt time index found, time index file ({key}) has non-zero size but "
                                     f"the last offset is {base + last_rel} which is less than the first offset "
                                     f"{base}")
        if len(data) % 12:
            raise JavaError("org.apache.kafka.storage.internals.log.CorruptIndexException",
                            f"Time index file {key} is corrupt, found {len(data)} bytes which is neither "
                            "positive nor a multiple of 12")
        w(f"{path} passed sanity check.\n")
        return
    prev_ts = _NO_TIMESTAMP
    for i in range(entries):
        ts, rel = struct.unpack_from(">qi", data, i * 12)
        offset = base + rel
        if offset == base and i > 0:
            return
        position = _offset_index_lookup(index, base, offset)
        if position < 0 or position > len(log):
            raise JavaError(_ILLEGAL_ARG, f"Slice from position {position} exceeds end position of "
                                          f"FileRecords(size={len(log)}, file={log_path}, start=0, "
                                          f"end={_INT_MAX})")
        found: Batch | None = None
        try:
            for batch in iter_file_batches(log, position, len(log)):
                last = _batch_last_offset(batch)
                if last >= offset:
                    found = batch
                    break
        except JavaError as e:
            raise _corrupt_with_file(e, log_path) from None
        if found is None:
            st.append(st.ts_not_found, key, (offset, -1))
        elif _batch_last_offset(found) != offset:
            st.append(st.ts_not_found, key, (offset, _batch_last_offset(found)))
        else:
            max_ts = _NO_TIMESTAMP
            for rec in iter_records(found):
                max_ts = max(max_ts, rec.timestamp)
            if max_ts != ts:
                st.append(st.ts_mismatch, key, (ts, max_ts))
            if prev_ts >= ts:
                st.append(st.ts_out_of_order, key, (ts, prev_ts))
        if not opts.verify_index_only:
            w(f"timestamp: {ts} offset: {offset}\n")
        prev_ts = ts


def _batch_last_offset(batch: Batch) -> int:
    base = int(struct.unpack_from(">q", batch.data, 0)[0])
    if batch.magic < 2:
        return base
    return _i64(base + struct.unpack_from(">i", batch.data, 23)[0])


def _dump_producer_snapshot(path: str, w: _Writer, e: _Writer) -> None:
    """``ProducerStateManager.readSnapshot`` + the tool's line per producer entry."""
    data = _read_file(path)
    schema_err = "Snapshot failed schema validation: "
    if len(data) < 2:
        e(schema_err + "Error reading field 'version': java.nio.BufferUnderflowException\n")
        return
    if len(data) < 6:
        e(schema_err + "Error reading field 'crc': java.nio.BufferUnderflowException\n")
        return
    if len(data) < 10:
        e(schema_err + "Error reading field 'producer_entries': java.nio.BufferUnderflowException\n")
        return
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    if count < 0:
        e(schema_err + f"Error reading field 'producer_entries': Array size {count} cannot be negative\n")
        return
    if count > len(data) - 10:
        e(schema_err + f"Error reading field 'producer_entries': Error reading array of size {count}, only "
          f"{len(data) - 10} bytes available\n")
        return
    if len(data) < 10 + 46 * count:
        e(schema_err + "Error reading field 'producer_entries': Error reading field "
          f"'{_snapshot_truncated_field(len(data) - 10 - 46 * ((len(data) - 10) // 46))}': "
          "java.nio.BufferUnderflowException\n")
        return
    if version != 1:
        e(f"Snapshot contained an unknown file version {version}\n")
        return
    computed = _crc32c.crc32c(data[6:])
    if crc != computed:
        e(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}\n")
        return
    for n in range(count):
        (pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) = struct.unpack_from(">qhiqiqiq", data, 10 + 46 * n)
        w(f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
          f"currentTxnFirstOffset: {_optional_long(txn_first if txn_first >= 0 else None)} "
          f"lastTimestamp: {timestamp} ")
        if last_offset >= 0:
            first_seq = (_INT_MAX - (offset_delta - last_seq) + 1) if last_seq < offset_delta \
                else last_seq - offset_delta
            w(f"firstSequence: {_i32(first_seq)} lastSequence: {last_seq} lastOffset: {last_offset} "
              f"offsetDelta: {offset_delta} timestamp: {timestamp}")
        w("\n")


def _snapshot_truncated_field(partial: int) -> str:
    fields = [("producer_id", 8), ("epoch", 2), ("last_sequence", 4), ("last_offset", 8), ("offset_delta", 4),
              ("timestamp", 8), ("coordinator_epoch", 4), ("current_txn_first_offset", 8)]
    acc = 0
    for name, width in fields:
        if partial < acc + width:
            return name
        acc += width
    return fields[-1][0]


def _dump_txn_index(path: str, w: _Writer) -> None:
    if not os.path.exists(path):
        return
    data = _read_file(path)
    for pos in range(0, len(data) - len(data) % 34, 34):
        version, pid, first, last, lso = struct.unpack_from(">hqqqq", data, pos)
        if version > 0:
            raise JavaError(_KAFKA_EXC, f"Unexpected aborted transaction version {version} in transaction index "
                                        f"{_jabs(path)}, current version is 0")
        w(f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} "
          f"lastStableOffset: {lso}\n")


def _print_errors(st: _State, e: _Writer) -> None:
    for name in st.index_mismatches.ordered_keys():
        e(f"Mismatches in :{name}\n")
        for index_offset, log_offset in st.index_mismatches.get(name):
            e(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
    for name in st.ts_mismatch.ordered_keys():
        e(f"Found timestamp mismatch in :{name}\n")
        for index_ts, log_ts in st.ts_mismatch.get(name):
            e(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
    for name in st.ts_out_of_order.ordered_keys():
        e(f"Found out of order timestamp in :{name}\n")
        for index_ts, prev in st.ts_out_of_order.get(name):
            e(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}\n")
    for name in st.ts_not_found.ordered_keys():
        e("The following indexed offsets are not found in the log.\n")
        for indexed, found in st.ts_not_found.get(name):
            e(f"Indexed offset: {indexed}, found log offset: {found}\n")
    for name in st.nonconsecutive.ordered_keys():
        e(f"Non-consecutive offsets in {name}\n")
        for first, second in st.nonconsecutive.get(name):
            e(f"  {first} is followed by {second}\n")


def dump_files(paths: Sequence[str], print_data_log: bool = False, deep_iteration: bool = False,
               index_sanity_check: bool = False, verify_index_only: bool = False, out: IO[str] = sys.stdout,
               err: IO[str] = sys.stderr, *, skip_record_metadata: bool = False,
               max_message_size: int = _MAX_MESSAGE_SIZE_DEFAULT, max_bytes: int = _INT_MAX) -> int:
    """Dump ``paths`` exactly as ``kafka-dump-log.sh --files`` would; returns the process exit status."""
    opts = Options(print_data_log, deep_iteration or print_data_log, index_sanity_check, verify_index_only,
                   skip_record_metadata, max_message_size, max_bytes)
    st = _State()
    w, e = out.write, err.write
    try:
        for arg in paths:
            path = _jfile(arg)
            w(f"Dumping {path}\n")
            name = _jname(path)
            dot = name.rfind(".")
            if dot < 0:
                raise JavaError("java.lang.StringIndexOutOfBoundsException",
                                f"begin {dot}, end {len(name)}, length {len(name)}")
            suffix = name[dot:]
            if suffix in (".log", ".checkpoint"):
                _dump_log(path, opts, st, w)
            elif suffix == ".index":
                _dump_index(path, opts, st, w)
            elif suffix == ".timeindex":
                _dump_time_index(path, opts, st, w)
            elif suffix == ".snapshot":
                _dump_producer_snapshot(path, w, e)
            elif suffix == ".txnindex":
                _dump_txn_index(path, w)
            else:
                e(f"Ignoring unknown file {path}\n")
    except JavaError as exc:
        out.flush()
        e(exc.render() + "\n")
        return 1
    _print_errors(st, e)
    return 0


_USAGE = """\
This tool helps to parse a log file and dump its contents to the console, useful for debugging a seemingly \
corrupt log segment.
Option                                  Description
------                                  -----------
--deep-iteration                        If set, uses deep instead of shallow iteration. Automatically set if \
print-data-log is enabled.
--files <String: file1, file2, ...>     REQUIRED: The comma separated list of data and index log files to be \
dumped.
--help                                  Print usage information.
--index-sanity-check                    If set, just checks the index sanity without printing its content.
--max-bytes <Integer: size>             Limit the amount of total batches read in bytes (default: 2147483647).
--max-message-size <Integer: size>      Size of largest message. (default: 5242880)
--print-data-log                        If set, printing the messages content when dumping data logs.
--skip-record-metadata                  Whether to skip printing metadata for each record.
--verify-index-only                     If set, just verify the index log without printing its content.
"""

_FLAGS = {"--print-data-log": "print_data_log", "--deep-iteration": "deep_iteration",
          "--index-sanity-check": "index_sanity_check", "--verify-index-only": "verify_index_only",
          "--skip-record-metadata": "skip_record_metadata"}
_VALUED = {"--files": "files", "--max-message-size": "max_message_size", "--max-bytes": "max_bytes"}


def _expand_abbreviation(opt: str) -> str:
    """jopt-simple accepts any unambiguous prefix of a long option (``--print`` for ``--print-data-log``)."""
    known = [*_FLAGS, *_VALUED, "--help"]
    if not opt.startswith("--") or opt in known:
        return opt
    matches = [k for k in known if k.startswith(opt)]
    return matches[0] if len(matches) == 1 else opt


def main(argv: Sequence[str] | None = None) -> int:
    """``kafka-dump-log.sh`` flags: ``--files F[,F2]`` (required), ``--print-data-log``, ``--deep-iteration``,
    ``--index-sanity-check``, ``--verify-index-only``, ``--skip-record-metadata``, ``--max-message-size N``,
    ``--max-bytes N``. Output is written as UTF-8 like a JVM in a UTF-8 locale."""
    args = list(sys.argv[1:] if argv is None else argv)
    flags: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        opt, eq, val = a.partition("=")
        opt = _expand_abbreviation(opt)
        a = opt if not eq else a
        if a in ("--help", "-h"):
            sys.stdout.write(_USAGE)
            return 0
        if a in _FLAGS:
            flags[_FLAGS[a]] = True
        elif opt in _VALUED:
            if not eq:
                i += 1
                if i >= len(args):
                    sys.stderr.write(f"Option {opt} requires an argument\n")
                    return 1
                val = args[i]
            flags[_VALUED[opt]] = val
        else:
            sys.stderr.write(f"{a} is not a recognized option\n")
            return 1
        i += 1
    if "files" not in flags:
        sys.stderr.write('Missing required argument "[files]"\n' + _USAGE)
        return 1
    files = flags.pop("files").split(",")
    while files and files[-1] == "":  # Java's String.split drops trailing empty strings
        files.pop()
    for k in ("max_message_size", "max_bytes"):
        if k in flags:
            flags[k] = int(flags[k])
    out = _utf8_text(sys.stdout)
    err = _utf8_text(sys.stderr)
    try:
        return dump_files(files, out=out, err=err, **flags)
    finally:
        for wrapped, orig in ((out, sys.stdout), (err, sys.stderr)):
            wrapped.flush()
            if wrapped is not orig:
                wrapped.detach()  # type: ignore[attr-defined]


def _utf8_text(stream: IO[str]) -> IO[str]:
    """The same stream's bytes as UTF-8 text (a JVM in a UTF-8 locale), whatever Python's locale says."""
    import io

    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        return stream
    stream.flush()
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="replace", newline="\n", write_through=True)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Batch", "JavaError", "Record", "ScalaHashMap", "batch_line", "dump_files", "iter_file_batches",
           "iter_legacy_records", "iter_records", "java_utf8_decode", "legacy_batch_line", "main"]
