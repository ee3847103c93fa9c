"""Decompression the way Kafka's record reader experiences it (``Compression.wrapForInput`` streams).

Kafka parses compressed records straight from a decompressing ``InputStream``, so the bytes delivered before a
codec error are parsed first: a corrupt payload can end in a record-structure error, or in the codec's
``IOException`` once the reader needs bytes the codec could not deliver. ``open_stream`` therefore returns the
delivered prefix plus what happens at its end (``Stream.failure``):

* ``None``: a clean end of stream;
* ``"io"``: an ``IOException`` (Kafka reports ``Failed to decompress record stream`` while reading a record,
  ``Error checking for remaining bytes after reading batch`` after the last one);
* a ``JavaError``: a runtime exception that escapes as it is.

Failures while *opening* the stream (bad gzip header, bad LZ4 frame descriptor, undecodable raw snappy) raise
``KafkaException(cause)`` right away, whose message is the cause's ``toString()``.

Granularity follows the Java readers: LZ4 delivers whole blocks (``Lz4BlockInputStream``: magic, FLG/BD
validation, header checksum unless magic 0, no content-checksum check), snappy whole xerial chunks, gzip whole
``Inflater`` calls (8 KiB of input, up to 16 KiB of output per call, as GZIPInputStream under ChunkedBytesStream
asks), zstd whole decompression calls.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from kafkalite_storage.dumplog.java import _KAFKA_EXC, JavaError, _unjava


@dataclass
class Stream:
    data: bytes
    failure: str | JavaError | None = None
    cause: str = "java.io.IOException"  # the IOException's toString() (what legacy iteration reports)


def _io(data: bytes | bytearray, cause: str) -> Stream:
    return Stream(bytes(data), "io", cause)


def _zlib_cause(e: Exception) -> str:
    """Java's Inflater reports zlib's own message: "Error -3 while decompressing data: X" -> ZipException: X."""
    text = str(e)
    return "java.util.zip.ZipException: " + (text.split("data: ", 1)[1] if "data: " in text else text)


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (LZ4 frame header and block checksums)."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M]
        while i + 16 <= n:
            for k in range(4):
                (lane,) = struct.unpack_from("<I", data, i + 4 * k)
                v[k] = (_rotl((v[k] + lane * _P2) & _M, 13) * _P1) & _M
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + lane * _P3) & _M, 17) * _P4) & _M
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M, 11) * _P1) & _M
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    return h ^ (h >> 16)


def _open_failure(cause: str) -> JavaError:
    return JavaError(_KAFKA_EXC, cause, detail=f"a compressed batch cannot be decompressed: {_unjava(cause)}")


def _gzip_header(buf: bytes, pos: int) -> int:
    """``GZIPInputStream.readHeader``: returns the position after the header; ValueError/EOFError on failure."""
    if len(buf) - pos < 10:
        raise EOFError
    if buf[pos : pos + 2] != b"\x1f\x8b":
        raise ValueError("Not in GZIP format")
    if buf[pos + 2] != 8:
        raise ValueError("Unsupported compression method")
    flg = buf[pos + 3]
    start, pos = pos, pos + 10
    if flg & 4:  # FEXTRA
        if len(buf) - pos < 2:
            raise EOFError
        pos += 2 + struct.unpack_from("<H", buf, pos)[0]
    for bit in (8, 16):  # FNAME, FCOMMENT: zero-terminated
        if flg & bit:
            end = buf.find(b"\0", pos)
            if end < 0:
                raise EOFError
            pos = end + 1
    if flg & 2:  # FHCRC
        if len(buf) - pos < 2:
            raise EOFError
        if struct.unpack_from("<H", buf, pos)[0] != zlib.crc32(buf[start:pos]) & 0xFFFF:
            raise ValueError("Corrupt GZIP header")
        pos += 2
    if pos > len(buf):
        raise EOFError
    return pos


def _gzip(payload: bytes) -> Stream:
    try:
        pos = _gzip_header(payload, 0)
    except EOFError:
        raise _open_failure("java.io.EOFException") from None
    except ValueError as e:
        raise _open_failure(f"java.util.zip.ZipException: {e}") from None
    out = bytearray()
    while True:
        d = zlib.decompressobj(-15)
        member = bytearray()
        tail = b""
        while not d.eof:
            if tail:
                chunk, tail = tail, b""
            else:
                chunk = payload[pos : pos + 8192]
                pos += len(chunk)
            try:
                got = d.decompress(chunk, 16384)
            except zlib.error as e:  # ZipException from Inflater: that call's output is lost, as in Java
                return _io(out, _zlib_cause(e))
            member += got
            out += got
            tail = d.unconsumed_tail
            if not d.eof and not got and not tail and pos >= len(payload):
                return _io(out, "java.io.EOFException: Unexpected end of ZLIB input stream")
        rest = d.unused_data + payload[pos:]
        if len(rest) < 8:
            return _io(out, "java.io.EOFException")
        crc, isize = struct.unpack_from("<II", rest, 0)
        if crc != zlib.crc32(member) or isize != len(member) & _M:
            return _io(out, "java.util.zip.ZipException: Corrupt GZIP trailer")  # after all the data
        rest = rest[8:]
        try:  # another member only when a valid header follows; anything else ends the stream quietly
            pos = _gzip_header(rest, 0)
        except (EOFError, ValueError):
            return Stream(bytes(out))
        payload = rest


def _snappy(payload: bytes) -> Stream:
    from cramjam import snappy

    if not payload:
        return Stream(b"")
    if len(payload) < 16 or payload[:8] != b"\x82SNAPPY\x00":
        try:
            return Stream(bytes(snappy.decompress_raw(payload)))
        except Exception:
            raise _open_failure("java.io.IOException: FAILED_TO_UNCOMPRESS(5)") from None
    out = bytearray()
    pos = 16
    while pos < len(payload):
        if pos + 4 > len(payload):
            return _io(out, "java.io.IOException: FAILED_TO_UNCOMPRESS(5)")
        (n,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        if n < 0 or pos + n > len(payload):
            return _io(out, "java.io.IOException: FAILED_TO_UNCOMPRESS(5)")
        try:
            out += bytes(snappy.decompress_raw(payload[pos : pos + n]))
        except Exception:
            return _io(out, "java.io.IOException: FAILED_TO_UNCOMPRESS(5)")
        pos += n
    return Stream(bytes(out))


def _lz4(payload: bytes, magic: int) -> Stream:
    import lz4.block

    if len(payload) < 6:
        raise _open_failure("java.io.IOException: Stream ended prematurely")
    if struct.unpack_from("<I", payload, 0)[0] != 0x184D2204:
        raise _open_failure("java.io.IOException: Stream unsupported (invalid magic bytes)")
    flg, bd = payload[4], payload[5]
    if flg & 3:
        raise _open_failure("java.lang.RuntimeException: Reserved bits must be 0")
    if not (flg >> 5) & 1:
        raise _open_failure("java.lang.RuntimeException: Dependent block stream is unsupported")
    if (flg >> 6) & 3 != 1:
        raise _open_failure(f"java.lang.RuntimeException: Version {(flg >> 6) & 3} is unsupported")
    if bd & 15:
        raise _open_failure("java.lang.RuntimeException: Reserved2 field must be 0")
    if not 4 <= (bd >> 4) & 7 <= 7:
        raise _open_failure("java.lang.RuntimeException: Block size value must be between 4 and 7")
    if bd >> 7:
        raise _open_failure("java.lang.RuntimeException: Reserved3 field must be 0")
    max_block = 1 << (2 * ((bd >> 4) & 7) + 8)
    pos = 6
    if flg & 0x08:
        if len(payload) - pos < 8:
            raise _open_failure("java.io.IOException: Stream ended prematurely")
        pos += 8
    if magic != 0:  # old (magic 0) producers wrote a wrong header checksum; Kafka skips the check for them
        if pos >= len(payload):
            raise _open_failure("java.nio.BufferUnderflowException")
        if payload[pos] != (xxh32(payload[4:pos]) >> 8) & 0xFF:
            raise _open_failure("java.io.IOException: Stream frame descriptor corrupted")
    pos += 1
    out = bytearray()
    while True:
        if len(payload) - pos < 4:
            return _io(out, "java.io.IOException: Stream ended prematurely")
        (size,) = struct.unpack_from("<I", payload, pos)
        pos += 4
        compressed = not size & 0x80000000
        size &= 0x7FFFFFFF
        if size == 0:
            if flg & 0x04 and len(payload) - pos < 4:
                return Stream(bytes(out), JavaError("java.nio.BufferUnderflowException"))
            return Stream(bytes(out))
        if size > max_block:
            return _io(out, f"java.io.IOException: Block size {size} exceeded max: {max_block}")
        if len(payload) - pos < size:
            return _io(out, "java.io.IOException: Stream ended prematurely")
        block = payload[pos : pos + size]
        if compressed:
            try:
                block = lz4.block.decompress(block, uncompressed_size=max_block)
            except Exception:
                return _io(out, "java.io.IOException: net.jpountz.lz4.LZ4Exception")
        if flg & 0x10:
            if len(payload) - pos - size < 4 or xxh32(payload[pos : pos + size]) != struct.unpack_from(
                    "<I", payload, pos + size)[0]:
                return _io(out, "java.io.IOException: Block checksum mismatch")
            pos += 4
        pos += size
        out += block


def _zstd(payload: bytes) -> Stream:
    import zstandard

    out = bytearray()
    rest = payload
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            out += d.decompress(rest)
        except zstandard.ZstdError:
            return _io(out, "java.io.IOException: Decompression error")
        if not d.eof:
            return _io(out, "java.io.IOException: Read error or truncated source")
        rest = d.unused_data
    return Stream(bytes(out))


def open_stream(codec: int, payload: bytes, magic: int = 2) -> Stream:
    """The decompressed bytes Kafka's reader would get for ``payload`` and how the stream ends."""
    if codec == 1:
        return _gzip(payload)
    if codec == 2:
        return _snappy(payload)
    if codec == 3:
        return _lz4(payload, magic)
    if codec == 4:
        return _zstd(payload)
    return Stream(payload)
