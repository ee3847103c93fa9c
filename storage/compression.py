"""Batch payload codecs: bounded streaming decompression (validation, lookups, cleaner) and tools' helpers.

The broker never recompresses on produce: producers' compressed bytes are stored verbatim. Decompression is
needed where record-level facts are required: produce validation (every record is checked, as Kafka's
LogValidator does), key checks on compacted topics, ListOffsets by timestamp, the cleaner, kafka-dump-log.

`inflate(codec, data, limit)` is the one way the broker decompresses client or disk data: it yields pieces of
at most `chunk` bytes from a streaming decompressor (zlib's ``max_length``, zstandard's stream reader, lz4's
frame decompressor with ``max_length``, xerial snappy block by block after checking each block's declared
size), so a 33 KB zstd batch that claims 1 GiB never occupies more than one chunk, and it raises
`InflateLimitError` as soon as more than `limit` bytes have come out. A stream that simply ends early is not
an error here (the record walk that consumes it reports the missing records); bytes a codec cannot decode
raise CorruptRecordError.

Codec ids are the low three attribute bits: 1 gzip (RFC 1952), 2 snappy (Kafka uses snappy-java's "xerial"
framing: magic 82 'SNAPPY' 00, version and compatible-version int32, then int32-length-prefixed raw snappy
blocks; raw unframed snappy is accepted too), 3 lz4 (LZ4 frame format), 4 zstd (zstd frames, possibly without
a content size).
"""

from __future__ import annotations

import gzip
import struct
import threading
import zlib
from collections.abc import Iterator

from storage.errors import CorruptRecordError, RecordTooLargeError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_I = struct.Struct(">i")

CHUNK = 64 * 1024
# Default bound on the inflated size of one batch for code that has no broker setting at hand (storage's own
# key checks and lookups); the broker's validator takes kafkalite.max.uncompressed.batch.bytes.
MAX_INFLATED_BYTES = 64 * 1024 * 1024


class InflateLimitError(RecordTooLargeError):
    """A compressed batch inflates beyond the allowed bound (answered as MESSAGE_TOO_LARGE)."""


def inflate(codec: int, data: bytes | bytearray | memoryview, limit: int | None = MAX_INFLATED_BYTES,
            chunk: int = CHUNK) -> Iterator[bytes]:
    """Decompress a records payload piece by piece (each piece <= `chunk` bytes, except snappy blocks, which
    are <= their declared size). Raises InflateLimitError once the total exceeds `limit` (None: no bound),
    CorruptRecordError when the codec rejects the bytes or the codec id is unknown."""
    if codec == NONE:
        pieces: Iterator[bytes] = iter((bytes(data),))
    elif codec == GZIP:
        pieces = _gzip_stream(bytes(data), chunk)
    elif codec == SNAPPY:
        pieces = _snappy_stream(bytes(data), limit)
    elif codec == LZ4:
        pieces = _lz4_stream(bytes(data), chunk)
    elif codec == ZSTD:
        pieces = _zstd_stream(data, chunk)
    else:
        raise CorruptRecordError(f"unknown compression codec {codec}")
    total = 0
    try:
        for piece in pieces:
            total += len(piece)
            if limit is not None and total > limit:
                raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
            yield piece
    except (CorruptRecordError, InflateLimitError):
        raise
    except Exception as exc:  # codec libraries raise assorted types
        raise CorruptRecordError(f"cannot decompress {_name(codec)} payload: {exc}") from exc


def _name(codec: int) -> str:
    return ("none", "gzip", "snappy", "lz4", "zstd")[codec] if 0 <= codec <= 4 else f"codec {codec}"


def _gzip_stream(data: bytes, chunk: int) -> Iterator[bytes]:
    """gzip members one after another (as Java's GZIPInputStream reads them); zlib framing accepted too.
    Trailing bytes that do not start a new member are ignored, as GZIPInputStream ignores them."""
    d = zlib.decompressobj(47)
    pending = data
    produced = False
    while True:
        try:
            out = d.decompress(pending, chunk)
        except zlib.error:
            if produced and pending is not data:
                return  # garbage after a complete member
            raise
        if out:
            produced = True
            yield out
        tail = d.unconsumed_tail
        if d.eof:
            if not d.unused_data:
                return
            pending = d.unused_data
            d = zlib.decompressobj(47)
            continue
        if not out and len(tail) == len(pending):
            return  # input ended inside the stream
        pending = tail


_local = threading.local()


def _zstd_stream(data: bytes | bytearray | memoryview, chunk: int) -> Iterator[bytes]:
    dctx = getattr(_local, "zstd", None)
    if dctx is None:   # creating a decompression context costs ~20 us: one per thread, reused
        import zstandard

        dctx = _local.zstd = zstandard.ZstdDecompressor()
    reader = dctx.stream_reader(data, read_across_frames=True)
    while True:
        out = reader.read(chunk)
        if not out:
            return
        yield bytes(out)


def _lz4_stream(data: bytes, chunk: int) -> Iterator[bytes]:
    import lz4.frame  # type: ignore[import-untyped]

    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, max_length=chunk)
    while True:
        if out:
            yield bytes(out)
        if d.eof or (not out and d.needs_input):
            return
        out = d.decompress(b"", max_length=chunk)


def _snappy_block_size(block: bytes) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint)."""
    n = shift = 0
    for i in range(min(len(block), 5)):
        b = block[i]
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7
    raise CorruptRecordError("bad snappy block length")


def _snappy_stream(data: bytes, limit: int | None) -> Iterator[bytes]:
    import snappy  # type: ignore[import-untyped]

    budget = limit if limit is not None else 1 << 62
    if data[:8] != XERIAL_MAGIC:
        if _snappy_block_size(data) > budget:
            raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
        yield bytes(snappy.uncompress(data))
        return
    pos = 16
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (n,) = _I.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CorruptRecordError("xerial snappy block runs past the payload")
        block = data[pos : pos + n]
        size = _snappy_block_size(block)
        if size > budget:
            raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
        out = bytes(snappy.uncompress(block))
        budget -= len(out)
        yield out
        pos += n


def _gunzip(data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return zlib.decompress(data)


def _snappy_decompress(data: bytes) -> bytes:
    import snappy

    if data[:8] != XERIAL_MAGIC:
        return bytes(snappy.uncompress(data))
    pos = 16
    out = bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (n,) = _I.unpack_from(data, pos)
        pos += 4
        out += snappy.uncompress(data[pos : pos + n])
        pos += n
    return bytes(out)


def _snappy_compress(data: bytes) -> bytes:
    import snappy

    out = bytearray(XERIAL_MAGIC + _I.pack(1) + _I.pack(1))
    block = 32 * 1024
    for i in range(0, len(data), block):
        c = snappy.compress(data[i : i + block])
        out += _I.pack(len(c)) + c
    return bytes(out)


def _lz4_decompress(data: bytes) -> bytes:
    import lz4.frame

    return bytes(lz4.frame.decompress(data))


def _zstd_decompress(data: bytes) -> bytes:
    import zstandard

    dobj = zstandard.ZstdDecompressor().decompressobj()
    return bytes(dobj.decompress(data))


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Decompress a batch's records payload; raises CorruptRecordError on bad input."""
    raw = bytes(data)
    try:
        if codec == NONE:
            return raw
        if codec == GZIP:
            return _gunzip(raw)
        if codec == SNAPPY:
            return _snappy_decompress(raw)
        if codec == LZ4:
            return _lz4_decompress(raw)
        if codec == ZSTD:
            return _zstd_decompress(raw)
    except CorruptRecordError:
        raise
    except Exception as exc:  # codec libraries raise assorted types
        raise CorruptRecordError(f"cannot decompress codec {codec}: {exc}") from exc
    raise CorruptRecordError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records payload the way a Kafka producer would (used by tests and internal writers)."""
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        return _snappy_compress(data)
    if codec == LZ4:
        import lz4.frame

        return bytes(lz4.frame.compress(data))
    if codec == ZSTD:
        import zstandard

        return bytes(zstandard.ZstdCompressor().compress(data))
    raise ValueError(f"unknown compression codec {codec}")
