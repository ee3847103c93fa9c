"""Helpers that build record-batch v2 bytes (tests, benchmarks, internal writers).

`encode_batch` produces exactly what a Kafka producer would send: records encoded with zig-zag varints,
optionally compressed, a 61-byte header and a CRC-32C over Attributes..end.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from kafkalite_storage.batch import (
    CONTROL_FLAG,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    crc32c,
)
from kafkalite_storage.compression import compress

_HEADER_TAIL = struct.Struct(">hiqqqhii")  # attributes .. records count (40 bytes)


def _zz(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _bytes_field(b: bytes | None) -> bytes:
    return _zz(-1) if b is None else _zz(len(b)) + b


@dataclass(slots=True)
class Rec:
    """A record to encode; timestamp None means the batch base timestamp."""

    value: bytes | None = b""
    key: bytes | None = None
    timestamp: int | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)


def encode_record(offset_delta: int, ts_delta: int, rec: Rec) -> bytes:
    body = bytearray(b"\x00")
    body += _zz(ts_delta) + _zz(offset_delta) + _bytes_field(rec.key) + _bytes_field(rec.value)
    body += _zz(len(rec.headers))
    for hk, hv in rec.headers:
        body += _bytes_field(hk.encode()) + _bytes_field(hv)
    return _zz(len(body)) + bytes(body)


def encode_batch(
    records: Sequence[Rec | bytes],
    *,
    base_offset: int = 0,
    base_timestamp: int = 1_700_000_000_000,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = 0,
    transactional: bool = False,
    control: bool = False,
    log_append_time: bool = False,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode one magic-2 batch. Plain `bytes` items become values with null keys."""
    recs = [r if isinstance(r, Rec) else Rec(value=r) for r in records]
    payload = bytearray()
    max_ts = -1
    for i, r in enumerate(recs):
        ts = base_timestamp if r.timestamp is None else r.timestamp
        max_ts = max(max_ts, ts)
        payload += encode_record(i, ts - base_timestamp, r)
    if compression:
        payload = bytearray(compress(compression, bytes(payload)))
    if max_timestamp is not None:
        max_ts = max_timestamp
    attrs = compression
    if log_append_time:
        attrs |= TIMESTAMP_TYPE_FLAG
    if transactional:
        attrs |= TRANSACTIONAL_FLAG
    if control:
        attrs |= CONTROL_FLAG
    tail = _HEADER_TAIL.pack(
        attrs,
        max(len(recs) - 1, 0),
        base_timestamp,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(recs),
    ) + bytes(payload)
    crc = crc32c(tail)
    length = 4 + 1 + 4 + len(tail)
    return struct.pack(">qiibI", base_offset, length, partition_leader_epoch, 2, crc) + tail


def encode_control_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    timestamp: int = 1_700_000_000_000,
    base_offset: int = 0,
) -> bytes:
    """A transaction marker batch (ABORT=0, COMMIT=1): transactional + control, one record."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch(
        [Rec(value=value, key=key)],
        base_offset=base_offset,
        base_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
    )
