"""Storage exceptions.

Every failure the log engine reports to its callers is one of these types; the broker maps them to Kafka
error codes in a single table (`kafkalite/errors.py`). A rejected batch never leaves bytes on disk.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every storage failure (maps to KAFKA_STORAGE_ERROR when nothing more specific fits)."""


class CorruptRecordError(StorageError):
    """A batch failed structural checks or its CRC-32C (CORRUPT_MESSAGE)."""


class RecordTooLargeError(StorageError):
    """A batch is larger than max.message.bytes (MESSAGE_TOO_LARGE)."""


class RecordBatchTooLargeError(StorageError):
    """A batch larger than the log's segment size: it could never fit one segment (RECORD_LIST_TOO_LARGE)."""


class InvalidRecordError(StorageError):
    """A well-formed batch the broker refuses, e.g. a client-sent control batch (INVALID_RECORD)."""


class InvalidTimestampError(StorageError):
    """A record timestamp outside message.timestamp.*.ms bounds (INVALID_TIMESTAMP)."""


class OffsetOutOfRangeError(StorageError):
    """A read below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""

    def __init__(self, message: str, *, log_start_offset: int = -1, log_end_offset: int = -1) -> None:
        super().__init__(message)
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class DuplicateSequenceError(StorageError):
    """A duplicate of an idempotent batch that is no longer cached (DUPLICATE_SEQUENCE_NUMBER)."""


class OutOfOrderSequenceError(StorageError):
    """An idempotent batch whose sequence does not follow the last one (OUT_OF_ORDER_SEQUENCE_NUMBER)."""


class InvalidProducerEpochError(StorageError):
    """A batch from a fenced (older) producer epoch (INVALID_PRODUCER_EPOCH)."""


class UnknownProducerIdError(StorageError):
    """The broker has no state for the producer id (UNKNOWN_PRODUCER_ID)."""


class InvalidTxnStateError(StorageError):
    """A transaction marker or transactional batch that contradicts the producer's state (INVALID_TXN_STATE)."""


class TransactionCoordinatorFencedError(StorageError):
    """A marker from an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED)."""


class LogClosedError(StorageError):
    """The partition log was closed or deleted."""


class KafkaStorageError(StorageError):
    """A write failed with an I/O error (ENOSPC, EIO, ...) and was rolled back: the files and the in-memory
    state are as they were before the failed call, so a retry once the disk recovers continues cleanly
    (KAFKA_STORAGE_ERROR)."""


class RollbackFailedError(KafkaStorageError):
    """A failed write could not be rolled back either (e.g. EIO on the truncation): the partition's memory and
    files may disagree, so the partition goes offline until the next restart recovers it."""


class LogOfflineError(KafkaStorageError):
    """The partition is offline after a failed rollback; every produce and fetch on it fails
    (KAFKA_STORAGE_ERROR, as Kafka answers for a partition in an offline log dir)."""
