"""Record-level reads of data already on disk stay bounded (issue 12 item 4): decompression bombs are read by
bounded streaming in timestamp lookups, compacted-topic key checks and the cleaner, and a client-claimed
RecordsCount never makes work (a LogAppendTime batch claiming 4 M records holds one)."""

from __future__ import annotations

import struct
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard

from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage import compression as codecs
from kafkalite_storage.batch import batch_records, crc32c, require_keys
from kafkalite_storage.cleaner import clean_log
from kafkalite_storage.errors import CorruptRecordError, RecordTooLargeError
from kafkalite_storage.testing import Rec, _zz, encode_batch, encode_record

NOW = time.time_ns() // 1_000_000


def _batch(payload: bytes, *, count: int, attrs: int, ts: int = NOW) -> bytes:
    tail = struct.pack(">hiqqqhii", attrs, count - 1, ts, ts, -1, -1, -1, count) + payload
    return struct.pack(">qiibI", 0, 9 + len(tail), -1, 2, crc32c(tail)) + tail


def zstd_bomb(inflated: int, key: bytes = b"k") -> bytes:
    """One keyed record whose value is `inflated` zero bytes, zstd-compressed chunk by chunk (a few KB)."""
    body = b"\x00" + _zz(0) + _zz(0) + _zz(len(key)) + key + _zz(inflated)
    c = zstandard.ZstdCompressor().compressobj()
    parts = [c.compress(_zz(len(body) + inflated + 1) + body)]
    parts += [c.compress(bytes(1 << 20)) for _ in range(inflated >> 20)]
    return _batch(b"".join(parts) + c.compress(_zz(0)) + c.flush(), count=1, attrs=4)


def peak_mib(fn: Callable[[], Any]) -> tuple[Any, float]:
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] / (1 << 20)
    finally:
        tracemalloc.stop()


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codecs, "MAX_INFLATED_BYTES", 4 << 20)


def test_stream_records_refuses_a_bomb_in_bounded_memory(small_bound: None) -> None:
    bomb = zstd_bomb(64 << 20)
    assert len(bomb) < 10_000

    def read() -> None:
        with pytest.raises(RecordTooLargeError):
            list(batch_records(bomb))
    _, peak = peak_mib(read)
    assert peak < 16


def test_compacted_key_check_does_not_inflate_a_bomb(small_bound: None) -> None:
    def refused() -> None:
        with pytest.raises(RecordTooLargeError):
            require_keys(zstd_bomb(64 << 20))

    _, peak = peak_mib(refused)
    assert peak < 16


def test_timestamp_lookups_over_a_bomb_on_disk(tmp_path: Path, small_bound: None) -> None:
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), LogConfig())
    log.append(encode_batch([Rec(b"a", timestamp=NOW - 10)], base_timestamp=NOW - 10), now_ms=NOW)
    log.append(zstd_bomb(64 << 20), now_ms=NOW)      # storage alone stores it (the broker's validator would not)
    found, peak = peak_mib(lambda: log.offset_for_timestamp(NOW - 5))
    assert found == (1, NOW)                         # answered at batch granularity
    assert peak < 16
    found, peak = peak_mib(log.max_timestamp_offset)
    assert found == (1, NOW) and peak < 16
    log.close()


def test_log_append_time_batch_claiming_millions_of_records(tmp_path: Path) -> None:
    claimed = 4_000_000
    one = encode_record(0, 0, Rec(b"only"))
    batch = _batch(one, count=claimed, attrs=0x08)   # LogAppendTime bit, one real record
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), LogConfig())
    log.append(batch, now_ms=NOW, leader_epoch=0)
    assert log.log_end_offset == claimed
    found, peak = peak_mib(lambda: log.offset_for_timestamp(NOW - 1))
    assert found == (0, NOW) and peak < 4
    found, peak = peak_mib(lambda: log.offset_for_timestamp(NOW + 1))
    assert found is None and peak < 4
    log.close()


def test_cleaner_keeps_a_bomb_batch_verbatim_in_bounded_memory(tmp_path: Path, small_bound: None) -> None:
    cfg = LogConfig(segment_bytes=100_000, cleanup_policy="compact", file_delete_delay_ms=0)
    log = PartitionLog.create(str(tmp_path / "c-0"), "c", 0, uuid.uuid4(), cfg)
    for i in range(3):
        log.append(encode_batch([Rec(b"v%d" % i, key=b"k")]), now_ms=NOW, validate_producer=False)
    log.append(zstd_bomb(64 << 20, key=b"bomb"), now_ms=NOW, validate_producer=False)
    log.roll(NOW)
    log.append(encode_batch([Rec(b"last", key=b"k")]), now_ms=NOW)
    result, peak = peak_mib(lambda: clean_log(log, NOW + 10_000_000, force=True))
    assert result is not None and result.records_removed == 2
    assert peak < 16
    offsets = [b.base_offset for _s, _p, b in [(s, p, h) for s, p, h in log.batches()]]
    assert 3 in offsets                              # the bomb batch is still there, untouched
    log.close()


def test_inflate_reads_gzip_members_and_ignores_trailing_garbage() -> None:
    import gzip
    import zlib

    data = bytes(range(256)) * 500
    two = gzip.compress(data[:50_000]) + gzip.compress(data[50_000:])
    assert b"".join(codecs.inflate(1, two)) == data
    assert b"".join(codecs.inflate(1, two + b"\\x00garbage")) == data   # as GZIPInputStream
    assert b"".join(codecs.inflate(1, zlib.compress(data))) == data
    assert data.startswith(b"".join(codecs.inflate(1, two[:3000])))     # truncated: what is there
    with pytest.raises(CorruptRecordError):
        list(codecs.inflate(1, b"\\x1f\\x8b\\x08\\x00garbage-garbage-garbage"))
    with pytest.raises(RecordTooLargeError):
        list(codecs.inflate(1, gzip.compress(bytes(10 << 20)), limit=1 << 20))


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_inflate_round_trips_every_codec_in_pieces(codec: int) -> None:
    data = b"".join(b"record %d " % i for i in range(100_000))
    pieces = list(codecs.inflate(codec, codecs.compress(codec, data), chunk=4096))
    assert b"".join(pieces) == data and len(pieces) > 10
