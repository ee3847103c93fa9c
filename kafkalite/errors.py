"""The leaf of kafkalite's imports: the exceptions every room shares, and the one table that maps storage exceptions
to Kafka protocol error codes. It imports nothing of kafkalite, so any room may import it.

- ``ConfigError``: a malformed setting (the CLI exits 2); ``StartupError``: the environment stopped the start
  (exit 1); ``describe(exc)`` turns either into the CLI's one line;
- ``ConnectionClosed``: a protocol violation that ends one connection (raised by handlers, caught by the server);
- ``error_code_for(exc)``: storage exception -> Kafka error code.

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
    se.RecordBatchTooLargeError: ErrorCode.RECORD_LIST_TOO_LARGE,
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


class ConfigError(ValueError):
    """A setting is malformed (bad listener, non-integer number, ...): one line per problem, each naming the
    key, the value and why. The CLI exits with code 2 on it (a usage error)."""


class ConnectionClosed(Exception):
    """The connection must be closed (protocol violation); carries the reason for the log."""


# -- what went wrong at start, in one line, and the exit code the CLI gives it -----------------------------------
# Expected failures -- a bad setting, a data dir that is a file or not writable, a data dir another broker holds, an
# address already in use -- are reported as one line naming the key, file or address and what to do; the full
# traceback is logged only at DEBUG. Exit code 2 means a usage or configuration error (fix the command line or the
# config), 1 a runtime failure (the environment: the port or the data dir is taken). Anything else is a genuine
# bug: :func:`describe` returns None and the caller shows the traceback.

USAGE = 2
RUNTIME = 1


class StartupError(Exception):
    """The broker could not start for a reason outside its control (exit code 1); one line."""


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out += _leaves(sub)
        return out
    return [exc]


def describe(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, one-line message) for an expected startup failure (unwrapping exception groups)."""
    for leaf in _leaves(exc):
        if isinstance(leaf, ConfigError):
            return USAGE, str(leaf)
        if isinstance(leaf, StartupError):
            return RUNTIME, str(leaf)
        if isinstance(leaf, se.StorageError):
            return RUNTIME, f"storage: {leaf}"
        if isinstance(leaf, OSError):
            where = f"{leaf.filename}: " if leaf.filename else ""
            return RUNTIME, f"{where}{leaf.strerror or leaf}"
    return None
