"""Which group ids and transactional ids a coordinator can keep: the one check every API that names one makes.

A coordinator record's key (``OffsetCommitKey``, ``GroupMetadataKey``, ``TransactionLogKey``) stores the id as
an int16-length string, so an id of more than 32,767 UTF-8 bytes cannot be written to ``__consumer_offsets``
or ``__transaction_state``. Kafka never sees one: its generated request readers refuse any string over
0x7fff bytes while parsing (a flexible version's compact string could carry more), and the connection is
closed. kafkalite decodes such requests and answers each API with a clear code instead:

- a group id -> INVALID_GROUP_ID (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
  OffsetDelete, DeleteGroups, DescribeGroups, TxnOffsetCommit, AddOffsetsToTxn, FindCoordinator);
- a transactional id -> INVALID_REQUEST, the code Kafka's TransactionCoordinator gives an empty one
  (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, FindCoordinator).

Before this check, InitProducerId with such an id failed while encoding its record and answered
COORDINATOR_NOT_AVAILABLE with a traceback in the log.
"""
from __future__ import annotations

from kafkalite.coordinator.common import errors as E

#: the longest id, in UTF-8 bytes, that a coordinator record key can hold (an int16-length string)
MAX_KEY_BYTES = 32767


def storable(key: str) -> bool:
    """True if ``key`` fits a coordinator record key. Cheap for the usual short id (a UTF-8 character is at
    most 4 bytes, so 8,191 characters always fit; over 32,767 characters never do)."""
    n = len(key)
    if n <= MAX_KEY_BYTES // 4:
        return True
    return n <= MAX_KEY_BYTES and len(key.encode("utf-8", "surrogatepass")) <= MAX_KEY_BYTES


def group_id_error(group_id: str | None, allow_empty: bool = False) -> int | None:
    """INVALID_GROUP_ID for a null id, an empty one (unless the API allows it, as OffsetCommit and
    OffsetFetch do), or one too long to store; None if the id is usable."""
    if group_id is None or (not group_id and not allow_empty) or not storable(group_id):
        return E.INVALID_GROUP_ID
    return None


def txn_id_error(txn_id: str | None) -> int | None:
    """INVALID_REQUEST for a null, empty or unstorable transactional id; None if it is usable."""
    if not txn_id or not storable(txn_id):
        return E.INVALID_REQUEST
    return None
