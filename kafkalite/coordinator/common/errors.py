"""Kafka error codes the group coordinator answers with (same numbers as ``kafkalite_wire.errors.ErrorCode``).

Kept as plain ints here so the pure coordinator does not depend on the codec.
"""
from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSTABLE_OFFSET_COMMIT = 88

# log-append errors the coordinators translate (Kafka's numbers)
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
RECORD_LIST_TOO_LARGE = 18
INVALID_FETCH_SIZE = 4
KAFKA_STORAGE_ERROR = 56


class AppendError(Exception):
    """A write to ``__consumer_offsets`` / ``__transaction_state`` failed; ``code`` is the error the log append
    gave (what Kafka's ReplicaManager reports to the coordinator). The trio glue raises it; the pure coordinators
    translate it with the functions below into what the client is told."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or f"log append failed with error {code}")
        self.code = code


def append_error(exc: BaseException) -> int:
    """The log-append error behind ``exc``: an AppendError's code, KAFKA_STORAGE_ERROR for an OSError (a disk
    fault that storage did not wrap), UNKNOWN_SERVER_ERROR for anything else (a bug)."""
    if isinstance(exc, AppendError):
        return exc.code
    if isinstance(exc, OSError):
        return KAFKA_STORAGE_ERROR
    return UNKNOWN_SERVER_ERROR


_UNAVAILABLE = (UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND)
_MOVED = (NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR)
_TOO_LARGE = (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE)


def group_write_error(exc: BaseException) -> int:
    """A failed group-metadata write (JoinGroup/SyncGroup), as Kafka 3.9's GroupMetadataManager.storeGroup maps
    it: unavailable partition -> COORDINATOR_NOT_AVAILABLE, not leader / storage error -> NOT_COORDINATOR,
    timeout -> REBALANCE_IN_PROGRESS, too large -> UNKNOWN_SERVER_ERROR, anything else unchanged."""
    code = append_error(exc)
    if code in _UNAVAILABLE:
        return COORDINATOR_NOT_AVAILABLE
    if code in _MOVED:
        return NOT_COORDINATOR
    if code == REQUEST_TIMED_OUT:
        return REBALANCE_IN_PROGRESS
    if code in _TOO_LARGE:
        return UNKNOWN_SERVER_ERROR
    return code


def offset_write_error(exc: BaseException) -> int:
    """A failed offset-commit write, as GroupMetadataManager.maybeConvertOffsetCommitError maps it (too large
    -> INVALID_COMMIT_OFFSET_SIZE)."""
    code = append_error(exc)
    if code in _UNAVAILABLE:
        return COORDINATOR_NOT_AVAILABLE
    if code in _MOVED:
        return NOT_COORDINATOR
    if code in _TOO_LARGE:
        return INVALID_COMMIT_OFFSET_SIZE
    return code


def txn_write_error(exc: BaseException) -> int:
    """A failed ``__transaction_state`` write, as TransactionStateManager.appendTransactionToLog maps it
    (timeout -> COORDINATOR_NOT_AVAILABLE so the client retries)."""
    code = append_error(exc)
    if code in _UNAVAILABLE or code == REQUEST_TIMED_OUT:
        return COORDINATOR_NOT_AVAILABLE
    if code in _MOVED:
        return NOT_COORDINATOR
    if code in (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE):
        return UNKNOWN_SERVER_ERROR
    return code
