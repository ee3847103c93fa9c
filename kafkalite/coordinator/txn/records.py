"""``__transaction_state`` records in Kafka's own schemas (``3.9.0-coordinator-records``).

* key: int16 version 0, then ``TransactionLogKey`` v0 = TransactionalId (string).
* value: int16 version, then ``TransactionLogValue``: ProducerId int64, ProducerEpoch int16,
  TransactionTimeoutMs int32, TransactionStatus int8, TransactionPartitions [Topic, PartitionIds[]],
  TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64. Version 1 is the flexible
  (tagged-field) layout; it is decoded but never written, as Kafka 3.9 writes version 0.
* a null value is a tombstone (an expired transactional id).

TransactionStatus is Kafka's TransactionState id: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkalite.coordinator.classic.records import RecordDecodeError, _Reader, _str

TXN_STATE_TOPIC = "__transaction_state"


@dataclass(slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: dict[str, list[int]] = field(default_factory=dict)
    last_update_ms: int = -1
    start_ms: int = -1


def encode_txn_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + _str(transactional_id)


def decode_txn_key(data: bytes) -> str:
    r = _Reader(bytes(data))
    version = r.int16()
    if version != 0:
        raise RecordDecodeError(f"unknown TransactionLogKey version {version}")
    txn_id = r.string()
    if txn_id is None:
        raise RecordDecodeError("null transactional id")
    return txn_id


def encode_txn_value(v: TxnLogValue) -> bytes:
    out = bytearray(struct.pack(">hqhib", 0, v.producer_id, v.producer_epoch, v.timeout_ms, v.status))
    out += struct.pack(">i", len(v.partitions))
    for topic in sorted(v.partitions):
        parts = sorted(v.partitions[topic])
        out += _str(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">qq", v.last_update_ms, v.start_ms)
    return bytes(out)


def decode_txn_value(data: bytes) -> TxnLogValue:
    r = _Reader(bytes(data))
    version = r.int16()
    if version not in (0, 1):
        raise RecordDecodeError(f"unknown TransactionLogValue version {version}")
    fx = version >= 1
    pid, epoch, timeout, status = r.int64(), r.int16(), r.int32(), r.int8()
    partitions: dict[str, list[int]] = {}
    n = r.array_len(fx)
    for _ in range(max(n, 0)):
        topic = r.string(fx)
        ids = [r.int32() for _ in range(max(r.array_len(fx), 0))]
        if fx:
            r.skip_tags()
        if topic is not None:
            partitions.setdefault(topic, []).extend(ids)
    last_update, start = r.int64(), r.int64()
    if fx:
        r.skip_tags()
    return TxnLogValue(pid, epoch, timeout, status, partitions, last_update, start)


__all__ = ["TXN_STATE_TOPIC", "TxnLogValue", "decode_txn_key", "decode_txn_value", "encode_txn_key",
           "encode_txn_value"]
