"""The streaming raw-snappy decoder (storage/_snappy.c, through kafkalite_storage.compression.inflate) accepts
exactly what cramjam (the snap crate) accepts and gives the same bytes, in bounded pieces; a block it cannot
stream (a copy reaching past its history) is decoded whole instead; memory stays at a piece for a block that
inflates to 256 MiB; settle() finds a corrupt block's end."""
from __future__ import annotations

import os
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite_storage import compression
from kafkalite_storage.compression import InflateLimitError, inflate
from kafkalite_storage.errors import CorruptRecordError


@pytest.mark.skipif(compression._snappy is None, reason="snappy extension not built (no C compiler at install)")
@settings(max_examples=300, deadline=None)
@given(st.sampled_from([b"", b"abc" * 3000, bytes(100_000), b"0123456789abcdef" * 40]), st.binary(max_size=300),
       st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255)), max_size=3), st.integers(0, 300),
       st.sampled_from([1, 7, 4096, 65536]))
def test_streaming_snappy_matches_cramjam(base: bytes, extra: bytes, flips: list[tuple[int, int]], cut: int,
                                          chunk: int) -> None:
    from cramjam import snappy

    block = bytearray(snappy.compress_raw(base + extra + base[:500]))
    for pos, val in flips:
        if pos < len(block):
            block[pos] = val
    data = bytes(block[: max(len(block) - cut, 0)]) if cut > 250 else bytes(block)
    try:
        expected: bytes | str = bytes(snappy.decompress_raw(data))
    except Exception:
        expected = "corrupt"
    try:
        dec = compression._snappy.RawSnappy(data)
        out = []
        while piece := dec.read(chunk):
            assert len(piece) <= chunk + 64
            out.append(piece)
        got: bytes | str = b"".join(out)
    except compression._snappy.FarCopy:
        return   # decoded whole by cramjam instead (see kafkalite_storage.compression)
    except compression._snappy.SnappyError:
        got = "corrupt"
    assert got == expected


def test_a_copy_beyond_the_history_falls_back_to_a_whole_block() -> None:
    # hand-made block: 1.5 MiB of literals then a copy reaching all the way back (no encoder writes one)
    lit = os.urandom(1536 * 1024)
    block = _zz_unsigned(len(lit) + 4) + bytes([63 << 2]) + struct.pack("<I", len(lit) - 1) + lit
    block += bytes([(3 << 2) | 3]) + struct.pack("<I", len(lit))   # copy-4: 4 bytes from offset len(lit)
    assert b"".join(inflate(2, block, None)) == lit + lit[:4]


def _zz_unsigned(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@pytest.mark.skipif(compression._snappy is None, reason="snappy extension not built (no C compiler at install)")
def test_a_block_declaring_256_mib_is_inflated_in_pieces() -> None:
    from cramjam import snappy

    block = bytes(snappy.compress_raw(bytes(256 << 20)))
    tracemalloc.start()
    try:
        total = peak_piece = 0
        for piece in inflate(2, block, 1 << 30):
            total += len(piece)
            peak_piece = max(peak_piece, len(piece))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == 256 << 20 and peak_piece <= compression.CHUNK + 64
    assert peak < 2 << 20, peak
    with pytest.raises(InflateLimitError):   # the declared size is checked before anything is decoded
        next(iter(inflate(2, block, 100 << 20)))


@pytest.mark.skipif(compression._snappy is None, reason="snappy extension not built (no C compiler at install)")
def test_settle_decodes_the_rest_of_the_block() -> None:
    from cramjam import snappy

    block = bytes(snappy.compress_raw(os.urandom(2 << 20)))   # streamed: over SNAPPY_WHOLE_BYTES
    stream = inflate(2, block[:-5], None)
    next(stream)   # the first piece is fine
    with pytest.raises(CorruptRecordError):
        stream.settle()
    stream = inflate(2, block, None)
    next(stream)
    assert stream.settle() is True
    stream = inflate(2, block, None)
    next(stream)
    assert stream.settle(100_000) is False   # stopped after 100 KB more: the caller judges the rest elsewhere
