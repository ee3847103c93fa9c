"""Batch payload codecs (rare paths only: timestamp lookups, tools, tests).

The broker never recompresses: producers' compressed bytes are stored verbatim. Decompression is needed only
where record-level facts are required (ListOffsets by timestamp, max-timestamp offset, kafka-dump-log).

Codec ids are the low three attribute bits: 1 gzip (RFC 1952), 2 snappy (Kafka uses snappy-java's "xerial"
framing: magic 82 'SNAPPY' 00, version and compatible-version int32, then int32-length-prefixed raw snappy
blocks; raw unframed snappy is accepted too), 3 lz4 (LZ4 frame format), 4 zstd (zstd frames, possibly without
a content size).
"""

from __future__ import annotations

import gzip
import struct
import zlib

from storage.errors import CorruptRecordError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_I = struct.Struct(">i")


def _gunzip(data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return zlib.decompress(data)


def _snappy_decompress(data: bytes) -> bytes:
    import snappy  # type: ignore[import-untyped]

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
    import lz4.frame  # type: ignore[import-untyped]

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
