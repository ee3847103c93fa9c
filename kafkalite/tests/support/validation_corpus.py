"""Hand-built malformed v2 batches for the validator tests (unit, compiled-vs-Python, wire level)."""
from __future__ import annotations

import random
import struct
import time

from kafkalite_storage.batch import crc32c
from kafkalite_storage.testing import Rec, _zz, encode_batch, encode_record

NOW = int(time.time() * 1000)
TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000


def raw_batch(payload: bytes, *, count: int, last_offset_delta: int | None = None, attrs: int = 0,
              base_ts: int = NOW, max_ts: int = NOW, pid: int = -1, epoch: int = -1, seq: int = -1) -> bytes:
    """A batch with exactly the given header fields over `payload` and a correct CRC-32C."""
    lod = count - 1 if last_offset_delta is None else last_offset_delta
    tail = struct.pack(">hiqqqhii", attrs, lod, base_ts, max_ts, pid, epoch, seq, count) + payload
    return struct.pack(">qiibI", 0, 9 + len(tail), -1, 2, crc32c(tail)) + tail


def record(off: int, *, ts_delta: int = 0, key: bytes | None = b"k", value: bytes | None = b"v",
           headers: list[tuple[str, bytes | None]] | None = None) -> bytes:
    return encode_record(off, ts_delta, Rec(value=value, key=key, headers=headers or ()))


def body_record(body: bytes) -> bytes:
    """A record made of `body` with a correct length prefix."""
    return _zz(len(body)) + body


def valid(n: int = 3, **kw: object) -> bytes:
    return encode_batch([Rec(value=b"value-%d" % i, key=b"key-%d" % i, timestamp=NOW) for i in range(n)],
                        base_timestamp=NOW, **kw)  # type: ignore[arg-type]


def cases() -> dict[str, tuple[bytes, int, str]]:
    """name -> (batch, expected error code, substring of the message or of the first record error)."""
    two = record(0) + record(1)
    rnd = random.Random(12).randbytes(200)
    head_body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(1) + b"v"
    return {
        "offset deltas out of order": (raw_batch(record(1) + record(0), count=2), 87, "offset delta 1"),
        "offset deltas duplicated": (raw_batch(record(0) + record(0), count=2), 87, "offset delta 0 of the record at index 1"),
        "RecordsCount above the records": (raw_batch(two, count=3), 87, "premature EOF"),
        "RecordsCount below the records": (raw_batch(two, count=1), 87, "records still remaining"),
        "LastOffsetDelta mismatched": (raw_batch(two, count=2, last_offset_delta=5), 87, "Inconsistent batch offset"),
        "70 bytes claiming 2^31-1 records": (raw_batch(record(0), count=2**31 - 1), 87, "premature EOF"),
        "RecordsCount zero": (raw_batch(b"", count=0, last_offset_delta=-1), 87, "invalid offset range"),
        "negative record length": (raw_batch(_zz(-5) + b"\x00" * 10, count=1), 87, "negative length"),
        "never-ending record length varint": (raw_batch(b"\xff" * 12, count=1), 87, "varint too long"),
        "record length past the batch": (raw_batch(_zz(100) + b"\x00" * 10, count=1), 87, "remaining bytes"),
        "header count 2^31-1": (raw_batch(body_record(head_body + _zz(2**31 - 1)), count=1), 87,
                                "is larger than the remaining size"),
        "header count -7": (raw_batch(body_record(head_body + _zz(-7)), count=1), 87,
                            "invalid number of record headers -7"),
        "negative header key size": (raw_batch(body_record(head_body + _zz(1) + _zz(-2) + _zz(-1)), count=1), 87,
                                     "Invalid negative header key size -2"),
        "key longer than the record": (raw_batch(body_record(b"\x00" + _zz(0) + _zz(0) + _zz(50) + b"k"), count=1),
                                       87, "invalid record structure"),
        "record longer than its fields": (raw_batch(body_record(head_body + _zz(0) + b"\x00\x00"), count=1), 87,
                                          "but instead read"),
        "random bytes as records": (raw_batch(rnd, count=3), 87, ""),
        # CompressionType.forId throws IllegalArgumentException: UNKNOWN_SERVER_ERROR, no message (Produce v7+)
        "codec id 5": (raw_batch(two, count=2, attrs=5), -1, ""),
        "codec id 6": (raw_batch(two, count=2, attrs=6), -1, ""),
        "codec id 7": (raw_batch(two, count=2, attrs=7), -1, ""),
        "gzip bit over plain records": (raw_batch(two, count=2, attrs=1), 2, "gzip"),
        "zstd bit over plain records": (raw_batch(two, count=2, attrs=4), 2, "zstd"),
        "lz4 bit over plain records": (raw_batch(two, count=2, attrs=3), 2, "lz4"),
        "snappy bit over random bytes": (raw_batch(b"\x82SNAPPY\x00" + bytes(8) + b"\x00\x00\x00\x05" + b"\xff" * 5,
                                                   count=2, attrs=2), 2, "snappy"),
        "transactional bit with producer id -1": (raw_batch(two, count=2, attrs=0x10), 87, "without a producer id"),
        "control bit": (raw_batch(two, count=2, attrs=0x20, pid=5, epoch=0, seq=0), 87, "control records"),
        "producer id without a sequence": (raw_batch(two, count=2, pid=5, epoch=0, seq=-1), 87,
                                           "Invalid sequence number -1"),
        "MaxTimestamp below a record's timestamp": (raw_batch(record(0) + record(1, ts_delta=5), count=2), 87,
                                                    "MaxTimestamp"),
        "LogAppendTime bit from a client": (raw_batch(two, count=2, attrs=0x08), 32, "LogAppendTime"),
    }
