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
raise CorruptRecordError. The compressed bytes are read in place (no copy of a 50 MB payload).

Snappy. A raw snappy block (what librdkafka sends: the whole records section as one block) or a block of the
xerial framing (snappy-java's, 32 KiB) that declares more than ``SNAPPY_WHOLE_BYTES`` (1 MiB) goes through a
streaming decoder (``_snappy.c``, a C extension built by setup.py) in pieces of `chunk` bytes that keeps 256 KiB
of history: memory stays at a piece plus the history, whatever the block declares. It accepts exactly what
cramjam (the snap crate) accepts. Smaller blocks are decoded whole by cramjam (faster; at most 1 MiB), as is a
block whose copies reach further back than the history (no real encoder writes one: they compress 64 KiB
fragments independently) and every block when the extension is not built. A block's declared size is checked
against the budget before any of it is decoded.

`inflate` returns an `InflateStream`, an iterator with ``settle()`` for a consumer that stops early (it found
its verdict): a snappy block used to be decoded whole before any of it was looked at, so its corruption was
found before anything inside it; ``settle()`` decodes the rest of the current block (keeping nothing) and
raises CorruptRecordError if it is corrupt, so such a consumer gives the verdict it gave then.

Codec ids are the low three attribute bits: 1 gzip (RFC 1952), 2 snappy (Kafka uses snappy-java's "xerial"
framing: magic 82 'SNAPPY' 00, version and compatible-version int32, then int32-length-prefixed raw snappy
blocks; raw unframed snappy is accepted too), 3 lz4 (LZ4 frame format), 4 zstd (zstd frames, possibly without
a content size).
"""

from __future__ import annotations

import gzip
import importlib
import struct
import threading
import zlib
from collections.abc import Iterator
from typing import Any

from kafkalite_storage.errors import CorruptRecordError, RecordTooLargeError

_snappy: Any
try:   # the C extension, typed Any (no stubs), whether built or not
    _snappy = importlib.import_module("kafkalite_storage._snappy")
except ImportError:  # not built (no C compiler at install): raw snappy blocks are decoded whole, by cramjam
    _snappy = None

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_I = struct.Struct(">i")

CHUNK = 64 * 1024
# Default bound on the inflated size of one batch for code that has no broker setting at hand (storage's own
# key checks and lookups); the broker's validator takes kafkalite.max.uncompressed.batch.bytes.
MAX_INFLATED_BYTES = 64 * 1024 * 1024
# snappy blocks declaring at most this are decoded whole by cramjam (faster than the streaming decoder on a
# 16 KiB block: ~13 against ~25 us); larger ones stream
SNAPPY_WHOLE_BYTES = 1024 * 1024


class InflateLimitError(RecordTooLargeError):
    """A compressed batch inflates beyond the allowed bound (answered as MESSAGE_TOO_LARGE)."""


def inflate(codec: int, data: bytes | bytearray | memoryview, limit: int | None = MAX_INFLATED_BYTES,
            chunk: int = CHUNK) -> InflateStream:
    """Decompress a records payload piece by piece (each piece about `chunk` bytes at most, except a snappy
    block decoded whole by cramjam). Iterating raises InflateLimitError once the total exceeds `limit` (None: no
    bound), CorruptRecordError when the codec rejects the bytes or the codec id is unknown."""
    return InflateStream(codec, data, limit, chunk)


class InflateStream:
    """The inflated pieces of one payload (an iterator), and ``settle()``; see the module docstring."""

    __slots__ = ("_block", "_codec", "_gen", "_limit", "_pieces")

    def __init__(self, codec: int, data: bytes | bytearray | memoryview, limit: int | None, chunk: int) -> None:
        self._codec = codec
        self._limit = limit
        self._block: _Block | None = None   # the snappy block being decoded
        if codec == NONE:
            self._pieces: Iterator[bytes] = iter((bytes(data),))
        elif codec == GZIP:
            self._pieces = _gzip_stream(memoryview(data), chunk)
        elif codec == SNAPPY:
            self._pieces = self._snappy_stream(memoryview(data), limit, chunk)
        elif codec == LZ4:
            self._pieces = _lz4_stream(data, chunk)
        elif codec == ZSTD:
            self._pieces = _zstd_stream(data, chunk)
        else:
            self._pieces = _unknown(codec)
        self._gen = self._run()

    def __iter__(self) -> Iterator[bytes]:
        return self._gen

    def __next__(self) -> bytes:
        return next(self._gen)

    def _run(self) -> Iterator[bytes]:
        total = 0
        limit = self._limit
        try:
            for piece in self._pieces:
                total += len(piece)
                if limit is not None and total > limit:
                    raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
                yield piece
        except (CorruptRecordError, InflateLimitError):
            raise
        except Exception as exc:  # codec libraries raise assorted types
            raise CorruptRecordError(f"cannot decompress {_name(self._codec)} payload: {exc}") from exc

    def settle(self, max_bytes: int | None = None) -> bool:
        """The consumer stops here: decode the rest of the current snappy block (nothing is kept) and raise
        CorruptRecordError if it is corrupt. Other codecs: nothing to do. False: `max_bytes` more bytes came out
        before the block's end (the caller judges the rest elsewhere)."""
        block, self._block = self._block, None
        if block is None:
            return True
        try:
            return block.drain(max_bytes)
        except Exception as exc:
            raise CorruptRecordError(f"cannot decompress snappy payload: {exc}") from exc

    def _snappy_stream(self, data: memoryview, limit: int | None, chunk: int) -> Iterator[bytes]:
        budget = limit if limit is not None else 1 << 62
        if data[:8] != XERIAL_MAGIC:
            size = _snappy_block_size(data)
            if size > budget:
                raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
            yield from self._snappy_block(data, size, chunk)
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
            for out in self._snappy_block(block, size, chunk):
                budget -= len(out)
                yield out
            pos += n

    def _snappy_block(self, block: memoryview, size: int, chunk: int) -> Iterator[bytes]:
        if size <= SNAPPY_WHOLE_BYTES or _snappy is None:   # small (every xerial block): whole, as fast as ever
            from cramjam import snappy

            yield bytes(snappy.decompress_raw(block))
            return
        self._block = b = _Block(block, chunk)
        yield from b.pieces()
        self._block = None


def _unknown(codec: int) -> Iterator[bytes]:
    raise CorruptRecordError(f"unknown compression codec {codec}")
    yield b""   # (a generator: it raises when iterated, as the codecs' errors do)


class _Block:
    """One raw snappy block, decoded in pieces (or whole, see the module docstring)."""

    __slots__ = ("chunk", "data", "dec", "done")

    def __init__(self, data: memoryview, chunk: int) -> None:
        self.data, self.chunk, self.done = data, chunk, 0
        self.dec: Any = None if _snappy is None else _snappy.RawSnappy(data)

    def pieces(self) -> Iterator[bytes]:
        if self.dec is not None:
            try:
                while out := self.dec.read(self.chunk):
                    self.done += len(out)
                    yield out
                return
            except _snappy.FarCopy:
                self.dec = None
        from cramjam import snappy

        whole = bytes(snappy.decompress_raw(self.data))[self.done :]
        self.done += len(whole)
        if whole:
            yield whole

    def drain(self, max_bytes: int | None) -> bool:
        left = max_bytes
        for piece in self.pieces():
            if left is not None:
                left -= len(piece)
                if left < 0:
                    return False
        return True


def _name(codec: int) -> str:
    return ("none", "gzip", "snappy", "lz4", "zstd")[codec] if 0 <= codec <= 4 else f"codec {codec}"


def _gzip_stream(data: memoryview, chunk: int, step: int = 16384) -> Iterator[bytes]:
    """gzip members one after another (as Java's GZIPInputStream reads them); zlib framing accepted too.
    Input goes in `step`-byte slices, so zlib's unconsumed tail (copied on every call) stays small.
    Trailing bytes that do not start a new member are ignored, as GZIPInputStream ignores them."""
    d = zlib.decompressobj(47)
    member_start = True
    members = 0
    pos = 0
    pending: bytes | memoryview = b""
    while True:
        if not pending:
            if pos >= len(data):
                return   # input ended (inside a member or not): the record walk judges what is missing
            pending = data[pos : pos + step]
            pos += len(pending)
        try:
            out = d.decompress(pending, chunk)
        except zlib.error:
            if members and member_start:
                return  # garbage after a complete member
            raise
        member_start = member_start and not out
        if out:
            yield out
        if d.eof:
            members += 1
            rest = d.unused_data + data[pos:]
            if not rest:
                return
            data, pos, pending = memoryview(rest), 0, b""
            d = zlib.decompressobj(47)
            member_start = True
            continue
        pending = d.unconsumed_tail
        while pending == b"" and not d.eof:
            more = d.decompress(b"", chunk)   # output zlib still holds for this input
            if not more:
                break
            yield more


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


def _lz4_stream(data: bytes | bytearray | memoryview, chunk: int, step: int = 65536) -> Iterator[bytes]:
    """One LZ4 frame (bytes after it are ignored). Input goes in `step`-byte slices: given the whole payload,
    the decompressor keeps (and copies again on every call) all of it that is not consumed yet: 1.9 s and
    twice the payload's memory for a 29 MB batch, against ~0.1 s this way."""
    import lz4.frame

    d = lz4.frame.LZ4FrameDecompressor()
    mv = memoryview(data)
    pos = 0
    stalled = False   # the last call gave nothing: it needs more input whatever needs_input says
    while not d.eof:
        if d.needs_input or stalled:
            if pos >= len(mv):
                return   # input ended inside the frame: the record walk judges what is missing
            piece = mv[pos : pos + step]
            pos += len(piece)
            out = d.decompress(piece, max_length=chunk)
        else:
            out = d.decompress(b"", max_length=chunk)
        stalled = not out
        if out:
            yield bytes(out)


def _snappy_block_size(block: bytes | memoryview) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint)."""
    n = shift = 0
    for i in range(min(len(block), 5)):
        b = block[i]
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7
    raise CorruptRecordError("bad snappy block length")


def _snappy_compress(data: bytes) -> bytes:
    from cramjam import snappy

    out = bytearray(XERIAL_MAGIC + _I.pack(1) + _I.pack(1))
    block = 32 * 1024
    for i in range(0, len(data), block):
        c = bytes(snappy.compress_raw(data[i : i + block]))
        out += _I.pack(len(c)) + c
    return bytes(out)


def decompress(codec: int, data: bytes | bytearray | memoryview, limit: int | None = None) -> bytes:
    """Decompress a whole records payload (tools, internal topics), bounded like `inflate` (default
    MAX_INFLATED_BYTES); raises CorruptRecordError on bad input, InflateLimitError past the bound."""
    return b"".join(inflate(codec, data, MAX_INFLATED_BYTES if limit is None else limit))


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
