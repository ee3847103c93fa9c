"""``__transaction_state`` records in Kafka's own schemas (``4.3-coordinator-records``).

* key: int16 version 0, then ``TransactionLogKey`` v0 = TransactionalId (string).
* value: int16 version, then ``TransactionLogValue``: ProducerId int64, ProducerEpoch int16,
  TransactionTimeoutMs int32, TransactionStatus int8, TransactionPartitions [Topic, PartitionIds[]],
  TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64. Version 1 is the flexible
  layout with tagged fields: PreviousProducerId (tag 0), NextProducerId (1), ClientTransactionVersion (2),
  NextProducerEpoch (3), each left out at its default (-1, -1, 0, -1). Kafka writes version 1 once
  ``transaction.version`` 1 or higher is finalized (``TransactionVersion.transactionLogValueVersion``) and
  version 0 before; so does kafkalite (``encode_txn_value(v, version)``). The client transaction version
  (2: KIP-890 part 2, an epoch bump per transaction) survives a restart only in version 1.
* a null value is a tombstone (an expired transactional id).

TransactionStatus is Kafka's TransactionState id: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkalite.coordinator.classic.records import RecordDecodeError, _Reader, _str, _uvarint

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
    # version 1's tagged fields
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0
    next_producer_epoch: int = -1


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


def _cstr(s: str) -> bytes:
    b = s.encode("utf-8")
    return _uvarint(len(b) + 1) + b


def encode_txn_value(v: TxnLogValue, version: int = 0) -> bytes:
    fx = version >= 1
    out = bytearray(struct.pack(">hqhib", version, v.producer_id, v.producer_epoch, v.timeout_ms, v.status))
    out += _uvarint(len(v.partitions) + 1) if fx else struct.pack(">i", len(v.partitions))
    for topic in sorted(v.partitions):
        parts = sorted(v.partitions[topic])
        if fx:
            out += _cstr(topic) + _uvarint(len(parts) + 1) + b"".join(struct.pack(">i", p) for p in parts) + b"\0"
        else:
            out += _str(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    out += struct.pack(">qq", v.last_update_ms, v.start_ms)
    if fx:   # tagged fields in tag order, defaults left out (as Kafka's generated writer does)
        tags = []
        if v.previous_producer_id != -1:
            tags.append((0, struct.pack(">q", v.previous_producer_id)))
        if v.next_producer_id != -1:
            tags.append((1, struct.pack(">q", v.next_producer_id)))
        if v.client_transaction_version != 0:
            tags.append((2, struct.pack(">h", v.client_transaction_version)))
        if v.next_producer_epoch != -1:
            tags.append((3, struct.pack(">h", v.next_producer_epoch)))
        out += _uvarint(len(tags))
        for tag, body in tags:
            out += _uvarint(tag) + _uvarint(len(body)) + body
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
    v = TxnLogValue(pid, epoch, timeout, status, partitions, last_update, start)
    if fx:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            body = _Reader(r.take(size))
            if tag == 0:
                v.previous_producer_id = body.int64()
            elif tag == 1:
                v.next_producer_id = body.int64()
            elif tag == 2:
                v.client_transaction_version = body.int16()
            elif tag == 3:
                v.next_producer_epoch = body.int16()
    return v


__all__ = ["TXN_STATE_TOPIC", "TxnLogValue", "decode_txn_key", "decode_txn_value", "encode_txn_key",
           "encode_txn_value"]
