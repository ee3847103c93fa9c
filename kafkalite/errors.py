"""The one table that maps storage exceptions to Kafka protocol error codes.

Handlers catch ``StorageError`` around a storage call and answer ``error_code_for(exc)`` in the per-partition
error field. The most specific class wins (the table is searched along the exception's MRO), and anything
unexpected from storage becomes KAFKA_STORAGE_ERROR; a non-storage exception is a bug and is not mapped.
"""
from __future__ import annotations

from kafkalite_storage import errors as se
from kafkalite_wire.errors import ErrorCode

STORAGE_ERROR_CODES: dict[type[BaseException], ErrorCode] = {
    se.CorruptRecordError: ErrorCode.CORRUPT_MESSAGE,
    se.RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    se.InvalidRecordError: ErrorCode.INVALID_RECORD,
    se.InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    se.OffsetOutOfRangeError: ErrorCode.OFFSET_OUT_OF_RANGE,
    se.DuplicateSequenceError: ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
    se.OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    se.InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    se.UnknownProducerIdError: ErrorCode.UNKNOWN_PRODUCER_ID,
    se.InvalidTxnStateError: ErrorCode.INVALID_TXN_STATE,
    se.TransactionCoordinatorFencedError: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    se.LogClosedError: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    se.KafkaStorageError: ErrorCode.KAFKA_STORAGE_ERROR,   # ENOSPC/EIO, rolled back or partition offline
    se.StorageError: ErrorCode.KAFKA_STORAGE_ERROR,
}


def error_code_for(exc: BaseException) -> ErrorCode:
    for cls in type(exc).__mro__:
        code = STORAGE_ERROR_CODES.get(cls)
        if code is not None:
            return code
    return ErrorCode.UNKNOWN_SERVER_ERROR
