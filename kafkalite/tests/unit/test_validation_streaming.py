"""The streaming validator (kafkalite.validation's Walker over kafkalite_storage.compression's streaming codecs)
gives the verdicts the buffering one gave, with memory bounded by a piece instead of the inflated batch.

The oracle is the previous implementation, kept here: the inflated pieces accumulate in a buffer until their
record is whole, then the whole-record walk reads them; a snappy block is inflated whole by cramjam before any
of it is walked. Every codec, valid and malformed records, corrupt and truncated streams, wrong record counts,
bombs and records far larger than a piece are compared Rejection for Rejection; then memory, the compiled and
Python walkers against each other (the snappy decoder against cramjam: kafkalite_storage/tests/test_streaming_snappy.py)."""
from __future__ import annotations

import importlib
import os
import struct
import tracemalloc
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import validation
from kafkalite.tests.support.validation_corpus import NOW, cases, raw_batch, record
from kafkalite_storage import compression
from kafkalite_storage.compression import XERIAL_MAGIC, InflateLimitError, compress, inflate
from kafkalite_storage.config import LogConfig
from kafkalite_storage.errors import CorruptRecordError
from kafkalite_storage.testing import _zz

pywalk = importlib.import_module("kafkalite.validation.pywalk")
CODECS = [1, 2, 3, 4]
_I = struct.Struct(">i")


# ---- the oracle: the buffering validator this replaced -----------------------------------------------------
def _old_snappy(data: bytes, limit: int) -> Iterator[bytes]:
    from cramjam import snappy

    budget = limit
    if data[:8] != XERIAL_MAGIC:
        if compression._snappy_block_size(data) > budget:
            raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
        yield bytes(snappy.decompress_raw(data))
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
        if compression._snappy_block_size(block) > budget:
            raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
        out = bytes(snappy.decompress_raw(block))
        budget -= len(out)
        yield out
        pos += n


def _old_gzip(data: bytes, chunk: int = 65536, step: int = 16384) -> Iterator[bytes]:
    d = zlib.decompressobj(47)
    member_start = True
    members = 0
    pos = 0
    pending = b""
    while True:
        if not pending:
            if pos >= len(data):
                return
            pending = data[pos : pos + step]
            pos += len(pending)
        try:
            out = d.decompress(pending, chunk)
        except zlib.error:
            if members and member_start:
                return
            raise
        member_start = member_start and not out
        if out:
            yield out
        if d.eof:
            members += 1
            rest = d.unused_data + data[pos:]
            if not rest:
                return
            data, pos, pending = rest, 0, b""
            d = zlib.decompressobj(47)
            member_start = True
            continue
        pending = d.unconsumed_tail
        while pending == b"" and not d.eof:
            more = d.decompress(b"", chunk)
            if not more:
                break
            yield more


def _old_lz4(data: bytes, chunk: int = 65536) -> Iterator[bytes]:
    import lz4.frame

    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, max_length=chunk)
    while True:
        if out:
            yield bytes(out)
        if d.eof or (not out and d.needs_input):
            return
        out = d.decompress(b"", max_length=chunk)


def _old_pieces(codec: int, data: bytes, limit: int) -> Iterator[bytes]:
    if codec == 4:   # zstd's stream did not change
        yield from inflate(codec, data, limit)
        return
    total = 0
    try:
        for piece in (_old_snappy(data, limit) if codec == 2 else _old_gzip(data) if codec == 1 else _old_lz4(data)):
            total += len(piece)
            if total > limit:
                raise InflateLimitError(f"compressed batch inflates to more than {limit} bytes")
            yield piece
    except (CorruptRecordError, InflateLimitError):
        raise
    except Exception as exc:
        raise CorruptRecordError(f"cannot decompress {('', 'gzip', 'snappy', 'lz4')[codec]} payload: {exc}") from exc


def _old_walk_compressed(codec: int, mv: memoryview, count: int, base_ts: int, lo: int, hi: int, limit: int,
                         budget: int | None) -> tuple[Any, ...]:
    state: tuple[Any, ...] = (None, 0, 0, -1, -1, -1, -1)
    pending = bytearray()
    for piece in _old_pieces(codec, bytes(mv[61:]), limit):
        pending += piece
        _e, _p, index, max_ts, bad_index, bad_ts, nokey = state
        state = pywalk.walk(pending, 0, False, index, count, base_ts, lo, hi, max_ts, bad_index, bad_ts, nokey)
        if state[0] is not None:
            return state
        del pending[: state[1]]
    _e, _p, index, max_ts, bad_index, bad_ts, nokey = state
    return pywalk.walk(pending, 0, True, index, count, base_ts, lo, hi, max_ts, bad_index, bad_ts, nokey)


def _verdicts(batch: bytes, config: LogConfig | None = None, **kw: Any) -> tuple[Any, Any]:
    cfg = config or LogConfig()
    new = validation.validate(batch, config=cfg, now=NOW, transactional_id="t", **kw)
    saved = validation._walk_compressed
    validation._walk_compressed = _old_walk_compressed  # type: ignore[assignment]
    try:
        old = validation.validate(batch, config=cfg, now=NOW, transactional_id="t", **kw)
    finally:
        validation._walk_compressed = saved  # type: ignore[assignment]
    return new, old


def _same(batch: bytes, config: LogConfig | None = None, **kw: Any) -> Any:
    new, old = _verdicts(batch, config, **kw)
    if new is not None and old is not None and new.message.startswith("cannot decompress"):
        # a codec's own words for the corruption: the snappy decoder is no longer cramjam
        assert (new.code, new.record_errors, new.message.split(":")[0]) == (
            old.code, old.record_errors, old.message.split(":")[0])
    else:
        assert new == old
    return new


def _raw_snappy(data: bytes) -> bytes:
    """What librdkafka sends: the whole records section as one raw snappy block."""
    from cramjam import snappy

    return bytes(snappy.compress_raw(data))


def _payload(n: int, *, value: int = 20, headers: bool = True) -> bytes:
    return b"".join(record(i, ts_delta=i, key=b"key-%d" % i if i != 3 else b"k",
                           value=os.urandom(value // 2) + b"v" * (value - value // 2),
                           headers=[("h", b"x" * (i % 5))] if headers and i % 2 else None) for i in range(n))


def _compressed(codec: int, payload: bytes, raw_snappy: bool = False) -> bytes:
    return _raw_snappy(payload) if codec == 2 and raw_snappy else compress(codec, payload)


# ---- same verdicts -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("codec", "raw"), [(1, False), (2, False), (2, True), (3, False), (4, False)])
def test_valid_batches_pass_with_records_of_every_size(codec: int, raw: bool) -> None:
    for n, value in ((1, 0), (5, 10), (200, 100), (3, 200_000), (2, 1_500_000)):   # records up to 23 pieces long
        payload = _payload(n, value=value)
        batch = raw_batch(_compressed(codec, payload, raw), count=n, attrs=codec, max_ts=NOW + n - 1)
        assert _same(batch, max_inflated=64 << 20) is None, (n, value)


@pytest.mark.parametrize("name", [n for n, (b, _c, _t) in cases().items() if b[22 + 0] & 0x07 == 0])
@pytest.mark.parametrize("codec", CODECS)
def test_the_malformed_corpus_compressed_gets_the_same_verdict(name: str, codec: int) -> None:
    batch, _code, _text = cases()[name]
    attrs = int.from_bytes(batch[21:23], "big") | codec
    count = int.from_bytes(batch[57:61], "big", signed=True)
    lod = int.from_bytes(batch[23:27], "big", signed=True)
    max_ts = int.from_bytes(batch[35:43], "big", signed=True)
    pid = int.from_bytes(batch[43:51], "big", signed=True)
    for raw in ((False, True) if codec == 2 else (False,)):
        new = _same(raw_batch(_compressed(codec, batch[61:], raw), count=count, last_offset_delta=lod, attrs=attrs,
                              max_ts=max_ts, pid=pid, epoch=0 if pid >= 0 else -1,
                              seq=int.from_bytes(batch[53:57], "big", signed=True)))
        assert new is not None


@pytest.mark.parametrize("codec", CODECS)
def test_wrong_record_counts(codec: int) -> None:
    payload = _payload(6)
    for count in (1, 5, 7, 1000, 2**31 - 1):
        r = _same(raw_batch(compress(codec, payload), count=count, attrs=codec, max_ts=NOW + 5))
        assert r is not None and r.code == 87, count


@pytest.mark.parametrize("codec", CODECS)
def test_bombs_are_refused_at_the_same_bound(codec: int) -> None:
    # one record of 12 MiB of zeros, and 3000 records of 4 KiB: bounds under, at and over the inflated size
    body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(12 << 20) + bytes(12 << 20) + _zz(0)
    big = _zz(len(body)) + body
    many = b"".join(record(i, value=bytes(4096)) for i in range(3000))
    for payload, count in ((big, 1), (many, 3000)):
        batch = raw_batch(compress(codec, payload), count=count, attrs=codec)
        for limit in (1 << 20, len(payload) - 1, len(payload), 64 << 20):
            r = _same(batch, max_inflated=limit)
            assert (r is None) == (limit >= len(payload)), (limit, r)
            if r is not None:
                assert r.code == 10   # MESSAGE_TOO_LARGE


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=4), st.sampled_from(CODECS),
       st.booleans(), st.integers(-3, 3))
def test_records_mutated_before_compression(flips: list[tuple[int, int]], codec: int, raw: bool,
                                            count_delta: int) -> None:
    payload = bytearray(_payload(40))
    for pos, val in flips:
        if pos < len(payload):
            payload[pos] = val
    count = max(40 + count_delta, 1)
    _same(raw_batch(_compressed(codec, bytes(payload), raw), count=count, attrs=codec, max_ts=NOW + 39))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 255)), min_size=1, max_size=3),
       st.sampled_from(CODECS), st.booleans(), st.integers(0, 400))
def test_streams_corrupted_or_cut_after_compression(flips: list[tuple[int, int]], codec: int, raw: bool,
                                                    cut: int) -> None:
    compressed = bytearray(_compressed(codec, _payload(60, value=60), raw))
    for pos, val in flips:
        if pos < len(compressed):
            compressed[pos] = val
    data = bytes(compressed[: max(len(compressed) - cut, 0)]) if cut > 200 else bytes(compressed)
    _same(raw_batch(data, count=60, attrs=codec, max_ts=NOW + 59), max_inflated=1 << 20)


def test_a_record_error_inside_a_corrupt_snappy_block_is_still_corrupt() -> None:
    # the records go bad at once, the block's corruption is at its end: the block was decoded whole, so
    # CORRUPT_MESSAGE, as before (settle() decodes the rest of the block)
    payload = record(1) + _payload(2000, value=1000)   # a 2 MB block: streamed (1 MiB or less: decoded whole)
    assert len(payload) > compression.SNAPPY_WHOLE_BYTES
    block = _raw_snappy(payload)[:-3]   # shorter than the block declares
    r = _same(raw_batch(block, count=2001, attrs=2))
    assert r is not None and r.code == 2
    # and a sound block with the same bad record: INVALID_RECORD
    r = _same(raw_batch(_raw_snappy(payload), count=2001, attrs=2))
    assert r is not None and r.code == 87


def test_gzip_members_and_trailing_garbage() -> None:
    payload = _payload(30)
    gz = compress(1, payload[:1000]) + compress(1, payload[1000:])
    assert _same(raw_batch(gz, count=30, attrs=1, max_ts=NOW + 29)) is None
    assert _same(raw_batch(gz + b"garbage", count=30, attrs=1, max_ts=NOW + 29)) is None
    z = zlib.compressobj(6, zlib.DEFLATED, 15)
    assert _same(raw_batch(z.compress(payload) + z.flush(), count=30, attrs=1, max_ts=NOW + 29)) is None


# ---- memory --------------------------------------------------------------------------------------------
def _one_record_of(codec: int, inflated: int) -> bytes:
    """A valid batch of one record whose value is `inflated` zero bytes, compressed piece by piece."""
    body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(inflated)
    prefix = _zz(len(body) + inflated + 1) + body
    mib = bytes(1 << 20)
    if codec == 1:
        c: Any = zlib.compressobj(1, zlib.DEFLATED, 31)
        payload = c.compress(prefix) + b"".join(c.compress(mib) for _ in range(inflated >> 20)) + c.compress(
            _zz(0)) + c.flush()
    elif codec == 4:
        import zstandard

        c = zstandard.ZstdCompressor().compressobj()
        payload = c.compress(prefix) + b"".join(c.compress(mib) for _ in range(inflated >> 20)) + c.compress(
            _zz(0)) + c.flush()
    else:
        payload = _compressed(codec, prefix + bytes(inflated) + _zz(0), raw_snappy=True)
    return raw_batch(payload, count=1, attrs=codec)


@pytest.mark.parametrize(("codec", "mib"), [(1, 256), (2, 256), (3, 256), (4, 1024)])
def test_a_valid_batch_of_one_huge_record_is_checked_in_a_piece_of_memory(codec: int, mib: int) -> None:
    batch = _one_record_of(codec, mib << 20)
    tracemalloc.start()
    try:
        r = validation.validate(batch, config=LogConfig(), now=NOW, max_inflated=2 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert r is None
    assert peak < 4 << 20, peak   # the old validator held the whole record: mib MiB


# ---- the compiled and the Python streaming walks agree ---------------------------------------------------
@pytest.mark.skipif(validation.WALK_IMPL != "c", reason="compiled walk not built (no C compiler at install)")
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=8), st.integers(1, 8), st.booleans(),
       st.integers(-(2**63), 2**63 - 1))
def test_compiled_and_python_walkers_agree_on_any_split(data: bytes, cuts: list[int], count: int, records: bool,
                                                        base: int) -> None:
    if records:   # mostly well-formed records with a few bytes changed, rather than pure noise
        good = bytearray(_payload(count, value=30))
        for i, b in enumerate(data[:4]):
            good[(i * 97 + b) % len(good)] = b
        data = bytes(good)
    results = []
    for walker in (validation.Walker(count, base, NOW - 10, NOW + 10), pywalk.Walker(count, base, NOW - 10, NOW + 10)):
        stops, prev = [], 0
        for c in [*sorted(min(c, len(data)) for c in cuts), len(data)]:
            stops.append(walker.feed(data[prev:c]))
            if stops[-1]:
                break
            prev = c
        results.append((stops, walker.finish()))
    assert results[0] == results[1]
    whole = pywalk.walk(data, 0, True, 0, count, base, NOW - 10, NOW + 10, -1, -1, -1, -1)
    got = results[1][1]
    assert got[0] == whole[0] and (got[0] is not None or got[2:] == whole[2:])
    if got[0] is not None:
        assert got[2] == whole[2]   # the failing record's index


def test_a_record_cut_by_every_piece_boundary() -> None:
    data = _payload(12, value=300)
    whole = pywalk.walk(data, 0, True, 0, 12, NOW, NOW - 10, NOW + 100, -1, -1, -1, -1)
    for walker_type in {validation.Walker, pywalk.Walker}:
        w = walker_type(12, NOW, NOW - 10, NOW + 100)
        for i in range(len(data)):
            assert not w.feed(data[i : i + 1])
        assert w.finish()[2:] == whole[2:] and w.finish()[0] is None
