"""The produce validator on hand-built batches (kafkalite/validation): every class of malformed batch gets
Kafka's error code, valid batches of every codec pass, the compiled walk agrees with the Python one."""
from __future__ import annotations

import importlib
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite import validation
from kafkalite.tests.support.validation_corpus import NOW, TEN_YEARS_MS, cases, raw_batch, record, valid
from kafkalite_storage.compression import compress
from kafkalite_storage.config import LogConfig
from kafkalite_storage.testing import Rec, _zz, encode_batch
from kafkalite_wire.errors import ErrorCode

pywalk = importlib.import_module("kafkalite.validation.pywalk")
CASES = cases()


def check(batch: bytes, config: LogConfig | None = None, **kw: object) -> validation.Rejection | None:
    return validation.validate(batch, config=config or LogConfig(), now=NOW, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_batch_is_refused(name: str) -> None:
    batch, code, text = CASES[name]
    r = check(batch, transactional_id="t")
    assert r is not None, name
    assert r.code == code, (name, r)
    assert text in r.message + " ".join(m for _i, m in r.record_errors), (name, r)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_valid_batches_of_every_codec_pass(codec: int) -> None:
    assert check(valid(50, compression=codec)) is None
    assert check(valid(1, compression=codec)) is None


def test_bad_crc_wins_over_record_errors() -> None:
    batch = bytearray(CASES["offset deltas out of order"][0])
    batch[-1] ^= 0xFF
    r = check(bytes(batch))
    assert r is not None and r.code == ErrorCode.CORRUPT_MESSAGE and "crc" in r.message


def test_record_ten_years_ahead_inside_a_batch_whose_max_timestamp_is_now() -> None:
    # the header says MaxTimestamp = now; record 1 is 10 years ahead (header-only checks let it through)
    batch = raw_batch(record(0) + record(1, ts_delta=TEN_YEARS_MS), count=2, max_ts=NOW)
    hour = 3600 * 1000
    r = check(batch, LogConfig(message_timestamp_after_max_ms=hour))
    assert r is not None and r.code == ErrorCode.INVALID_TIMESTAMP
    assert r.record_errors[0][0] == 1 and f"Timestamp {NOW + TEN_YEARS_MS} of message" in r.record_errors[0][1]
    # the deprecated difference.max.ms applies while before/after are at their defaults (Kafka 3.6+)
    r = check(batch, LogConfig(message_timestamp_difference_max_ms=hour))
    assert r is not None and r.code == ErrorCode.INVALID_TIMESTAMP and r.record_errors[0][0] == 1
    # ... but an explicit after.max.ms wins over it
    r = check(batch, LogConfig(message_timestamp_difference_max_ms=hour, message_timestamp_after_max_ms=2 * TEN_YEARS_MS))
    assert r is not None and r.code == ErrorCode.INVALID_RECORD and "MaxTimestamp" in r.message
    # a record too old, in a compressed batch
    old = encode_batch([Rec(b"a", timestamp=NOW), Rec(b"b", timestamp=NOW - 10 * hour)], base_timestamp=NOW,
                       compression=4)
    r = check(old, LogConfig(message_timestamp_before_max_ms=hour))
    assert r is not None and r.code == ErrorCode.INVALID_TIMESTAMP and r.record_errors[0][0] == 1
    # LogAppendTime topics do not check client timestamps
    assert check(old, LogConfig(message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=hour)) is None


def test_compacted_topic_needs_keys_in_compressed_batches_too() -> None:
    batch = encode_batch([Rec(b"a", key=b"k"), Rec(b"b", key=None)], compression=3)
    r = check(batch, LogConfig(cleanup_policy="compact"))
    assert r is not None and r.code == ErrorCode.INVALID_RECORD and r.record_errors[0][0] == 1
    assert check(batch) is None


def test_zstd_needs_produce_v7() -> None:
    r = check(valid(2, compression=4), version=6)
    assert r is not None and r.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_transactional_batch_needs_a_transactional_id() -> None:
    batch = valid(2, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    r = check(batch)
    assert r is not None and r.code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert check(batch, transactional_id="tx") is None


def _bomb(codec: int, inflated: int) -> bytes:
    """One record whose value is `inflated` zero bytes, compressed with `codec` (built chunk by chunk)."""
    body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(inflated)
    tail = _zz(0)
    prefix = _zz(len(body) + inflated + len(tail)) + body
    if codec == 1:
        c = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts = [c.compress(prefix)] + [c.compress(bytes(1 << 20)) for _ in range(inflated >> 20)]
        payload = b"".join(parts) + c.compress(tail) + c.flush()
    else:
        import zstandard
        c = zstandard.ZstdCompressor().compressobj()
        parts = [c.compress(prefix)] + [c.compress(bytes(1 << 20)) for _ in range(inflated >> 20)]
        payload = b"".join(parts) + c.compress(tail) + c.flush()
    return raw_batch(payload, count=1, attrs=codec)


@pytest.mark.parametrize("codec", [1, 4])
def test_decompression_bomb_is_refused_without_inflating_it(codec: int) -> None:
    import tracemalloc

    batch = _bomb(codec, 256 << 20)   # 256 MiB of zeros in a small batch
    assert len(batch) < 300_000
    tracemalloc.start()
    r = check(batch, max_inflated=8 << 20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert r is not None and r.code == ErrorCode.MESSAGE_TOO_LARGE
    assert peak < 32 << 20
    with pytest.raises(validation.Deferred):
        check(batch, inline_budget=1 << 20)


def test_inflate_limit_counts_many_small_records() -> None:
    batch = encode_batch([b"x" * 1000] * 200, compression=3)
    r = check(batch, max_inflated=100_000)
    assert r is not None and r.code == ErrorCode.MESSAGE_TOO_LARGE
    assert check(batch, max_inflated=1 << 20) is None


def test_gzip_stream_of_several_members_and_records_across_pieces() -> None:
    payload = b"".join(record(i, value=bytes(100_000)) for i in range(3))
    gz = compress(1, payload[:150_000]) + compress(1, payload[150_000:])
    assert check(raw_batch(gz, count=3, attrs=1)) is None


# ---- the compiled walk and the Python walk agree ----------------------------------------------------------

def _both(buf: bytes, pos: int, final: bool, count: int, base: int, lo: int, hi: int) -> None:
    args = (buf, pos, final, 0, count, base, lo, hi, -1, -1, -1, -1)
    expected = pywalk.walk(*args)
    if validation.WALK_IMPL == "c":
        assert validation.walk(*args) == expected


@pytest.mark.skipif(validation.WALK_IMPL != "c", reason="compiled walk not built (no C compiler at install)")
def test_compiled_walk_is_in_use() -> None:
    assert validation.walk is not pywalk.walk


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_and_python_walk_agree_on_the_corpus(name: str) -> None:
    batch = CASES[name][0]
    count = int.from_bytes(batch[57:61], "big", signed=True)
    for final in (True, False):
        _both(batch, 61, final, count, NOW, NOW - 1000, NOW + 1000)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=6), st.integers(0, 5),
       st.booleans(), st.integers(-(2**63), 2**63 - 1), st.integers(0, 300))
def test_compiled_and_python_walk_agree_on_mutations(flips: list[tuple[int, int]], n: int, final: bool,
                                                    base: int, cut: int) -> None:
    payload = bytearray(b"".join(record(i, ts_delta=i * 7 - 3, key=None if i == 2 else b"k",
                                        headers=[("h", b"v")] if i % 2 else None) for i in range(n)))
    for pos, val in flips:
        if pos < len(payload):
            payload[pos] = val
    data = bytes(payload[: max(len(payload) - cut, 0)]) if cut > 250 else bytes(payload)
    _both(data, 0, final, max(n, 1), base, -(2**63), 2**63 - 1)
    _both(data, 0, final, max(n, 1), base, max(base - 5, -(2**63)), min(base + 5, 2**63 - 1))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 2**31 - 1), st.booleans())
def test_compiled_and_python_walk_agree_on_random_bytes(data: bytes, count: int, final: bool) -> None:
    _both(data, 0, final, count, NOW, NOW - 10, NOW + 10)


@pytest.mark.parametrize("name", list(CASES))
def test_validate_gives_the_same_verdict_with_either_walk(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    batch = CASES[name][0]
    compiled = check(batch, transactional_id="t")
    monkeypatch.setattr(validation, "walk", pywalk.walk)
    monkeypatch.setattr(validation, "Walker", pywalk.Walker)
    assert check(batch, transactional_id="t") == compiled


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=4), st.sampled_from([0, 1, 3, 4]))
def test_validate_agrees_on_mutated_compressed_batches(flips: list[tuple[int, int]], codec: int) -> None:
    # records mutated before compression: the compressed stream is valid, its records are not
    payload = bytearray(b"".join(record(i, ts_delta=i, key=b"key", headers=[("h", b"v")]) for i in range(12)))
    for pos, val in flips:
        if pos < len(payload):
            payload[pos] = val
    batch = raw_batch(compress(codec, bytes(payload)), count=12, attrs=codec, max_ts=NOW + 11)
    compiled = check(batch)
    saved = validation.walk, validation.Walker
    validation.walk, validation.Walker = pywalk.walk, pywalk.Walker
    try:
        assert check(batch) == compiled
    finally:
        validation.walk, validation.Walker = saved
    if not flips:
        assert compiled is None
