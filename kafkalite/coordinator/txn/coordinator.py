"""The transaction coordinator as a pure state machine (Kafka's TransactionCoordinator + TransactionMetadata:
3.9's rules for the classic protocol, 4.x's for transaction.version 2).

Every method takes ``now_ms``; I/O goes through a :class:`TxnBackend` (persist a TransactionLogValue,
write a COMMIT/ABORT marker, allocate a producer id, complete a group's transactional offsets), all
synchronous: the broker appends to the page cache, as its Produce path does. So EndTxn writes
PrepareCommit/PrepareAbort, then every marker, then CompleteCommit/CompleteAbort before it answers
(Kafka answers after PrepareX and writes the markers asynchronously; the client cannot tell, except
that a retried EndTxn never sees CONCURRENT_TRANSACTIONS here).

Kafka's rules kept here:

- InitProducerId: timeout must be 1..``transaction.max.timeout.ms`` (INVALID_TRANSACTION_TIMEOUT). A new
  transactional id gets a fresh producer id at epoch 0; a known one gets its epoch bumped (Empty,
  CompleteCommit, CompleteAbort); an Ongoing transaction is fenced (epoch bump) and aborted first and the
  client is told CONCURRENT_TRANSACTIONS (it retries and gets the next epoch); PrepareCommit/PrepareAbort
  answer CONCURRENT_TRANSACTIONS. When the epoch would pass 32766 the id rotates to a new producer id at
  epoch 0. v3+ requests naming (producerId, epoch) must match the current id (or the previous one with an
  exhausted epoch), and the epoch must be the current one (bumped) or the previous one (a retry: the
  current epoch again); otherwise PRODUCER_FENCED.
- AddPartitionsToTxn / AddOffsetsToTxn / EndTxn: unknown id or other producer id ->
  INVALID_PRODUCER_ID_MAPPING; other epoch -> PRODUCER_FENCED (the handlers turn that into
  INVALID_PRODUCER_EPOCH for versions before KIP-588); PrepareX -> CONCURRENT_TRANSACTIONS.
- EndTxn: Ongoing -> PrepareX -> markers -> CompleteX. A retry of a completed EndTxn with the same result
  succeeds; the opposite result, or EndTxn in Empty, is INVALID_TXN_STATE.
- An Ongoing transaction older than its timeout is aborted with a bumped epoch (fencing the producer that
  let it expire: its next write or EndTxn fails with an epoch error).
- On load, PrepareCommit/PrepareAbort are completed (markers written again: markers are idempotent for
  readers); Ongoing ones wait for their timeout.
- transaction.version 2 (KIP-890 part 2; EndTxn v5, ``client_tv`` 2): every EndTxn bumps the epoch, the markers
  carry the bumped one and the answer names the id and epoch to go on with (``_end_txn_v2``); partitions and the
  group's offsets partition are added implicitly by Produce v12+ / TxnOffsetCommit v5+ (``add_partitions`` with
  ``client_tv`` 2, the producer sees PRODUCER_FENCED as INVALID_PRODUCER_EPOCH); AddPartitionsToTxn v4+'s
  VerifyOnly is ``verify_partitions``. A coordinator abort (timeout, a new producer) bumps once under either
  version. The client version is stored (TransactionLogValue version 1, ``records.py``).
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.common.keys import group_id_error, txn_id_error
from kafkalite.coordinator.txn.records import TxnLogValue

log = logging.getLogger("kafkalite.transactions")

TP = tuple[str, int]
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767
DEFAULT_MAX_TIMEOUT_MS = 900_000
MARKER_RETRY_MS = 1_000   # a marker that failed to write is tried again this much later
MAX_RETRY_MS = 60_000     # the longest a failing transactional id waits before its next attempt

# error codes used here besides the group coordinator's (same numbers as kafkalite_wire.errors.ErrorCode)
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TRANSACTION_ABORTABLE = 120


class TxnState(IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]


_NAMES = {TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
          TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
          TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead",
          TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
STATE_BY_NAME = {v: k for k, v in _NAMES.items()}


def epoch_exhausted(epoch: int) -> bool:
    """Kafka's TransactionMetadata.isEpochExhausted: the last usable epoch is Short.MaxValue - 1."""
    return epoch >= MAX_EPOCH - 1


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    state: TxnState = TxnState.EMPTY
    partitions: set[TP] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    # PrepareCommit/PrepareAbort whose markers could not all be written: when to try the rest again
    marker_retry_ms: int | None = None
    # an expired Ongoing transaction whose abort failed: when to try again (not before)
    abort_retry_ms: int | None = None
    # consecutive failures of this id's timer work (containment backoff; 0 once it succeeds)
    failures: int = 0
    # the transaction version of the client's last transition (2: KIP-890 part 2, EndTxn v5 bumps the epoch)
    client_tv: int = 0
    # TV2: the producer id a PrepareCommit/PrepareAbort whose epoch bump exhausted the epochs moves to
    next_producer_id: int = NO_PRODUCER_ID

    def to_value(self) -> TxnLogValue:
        parts: dict[str, list[int]] = {}
        for topic, p in self.partitions:
            parts.setdefault(topic, []).append(p)
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, int(self.state), parts,
                           self.last_update_ms, self.start_ms, previous_producer_id=self.last_producer_id,
                           next_producer_id=self.next_producer_id, client_transaction_version=self.client_tv)

    @classmethod
    def from_value(cls, txn_id: str, v: TxnLogValue) -> TxnMetadata:
        return cls(txn_id, v.producer_id, v.timeout_ms, v.producer_epoch, state=TxnState(v.status),
                   partitions={(t, p) for t, ps in v.partitions.items() for p in ps},
                   start_ms=v.start_ms, last_update_ms=v.last_update_ms, last_producer_id=v.previous_producer_id,
                   client_tv=v.client_transaction_version, next_producer_id=v.next_producer_id)


class TxnBackend(Protocol):
    def persist(self, meta: TxnMetadata) -> None:
        """Write ``meta`` to ``__transaction_state`` (raise on failure: nothing changes then)."""

    def write_marker(self, tp: TP, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """Append a COMMIT/ABORT marker to ``tp`` (a deleted partition is skipped)."""

    def allocate_producer_id(self) -> int: ...

    def complete_group_txn(self, producer_id: int, commit: bool) -> None:
        """Apply or drop the producer's pending TxnOffsetCommit offsets."""


class TransactionCoordinator:
    def __init__(self, backend: TxnBackend, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS) -> None:
        self.backend = backend
        self.max_timeout_ms = max_timeout_ms
        self.txns: dict[str, TxnMetadata] = {}
        self.loading = False
        # the finalized transaction.version: 1+ writes TransactionLogValue version 1 (its tagged fields carry the
        # client transaction version), as Kafka's TransactionVersion.transactionLogValueVersion
        self.transaction_version = 0
        # several brokers (kafkalite.cluster): whether this broker coordinates a transactional id
        self.owns: Callable[[str], bool] | None = None

    # -- helpers ---------------------------------------------------------------------------------
    def _transit(self, meta: TxnMetadata, now_ms: int, **changes: object) -> TxnMetadata:
        """Persist the new metadata first; only then does it replace the old (Kafka's pending transition)."""
        new = dataclasses.replace(meta, **changes)  # type: ignore[arg-type]
        if "partitions" not in changes:
            new.partitions = set(meta.partitions)
        new.last_update_ms = now_ms
        new.abort_retry_ms = None   # belongs to the Ongoing state it was set in
        self.backend.persist(new)
        self.txns[new.transactional_id] = new
        return new

    def _check_producer(self, txn_id: str, producer_id: int, producer_epoch: int) -> tuple[int, TxnMetadata | None]:
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, None
        err = txn_id_error(txn_id)
        if err is not None:
            return err, None
        if self.owns is not None and not self.owns(txn_id):
            return E.NOT_COORDINATOR, None
        meta = self.txns.get(txn_id)
        if meta is None or meta.state == TxnState.DEAD or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING, None
        if producer_epoch != meta.producer_epoch:
            return PRODUCER_FENCED, None
        return E.NONE, meta

    # -- InitProducerId --------------------------------------------------------------------------
    def init_producer_id(self, now_ms: int, txn_id: str, timeout_ms: int, producer_id: int = NO_PRODUCER_ID,
                         producer_epoch: int = NO_PRODUCER_EPOCH) -> tuple[int, int, int]:
        """-> (error, producer id, epoch)."""
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
        err = txn_id_error(txn_id)
        if err is not None:
            return err, -1, -1
        if self.owns is not None and not self.owns(txn_id):
            return E.NOT_COORDINATOR, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return INVALID_TRANSACTION_TIMEOUT, -1, -1
        expected = producer_id != NO_PRODUCER_ID
        meta = self.txns.get(txn_id)
        if meta is None or meta.state == TxnState.DEAD:
            meta = TxnMetadata(txn_id, self.backend.allocate_producer_id(), timeout_ms)
        elif expected and not (meta.producer_epoch == NO_PRODUCER_EPOCH or producer_id == meta.producer_id or
                               (producer_id == meta.last_producer_id and epoch_exhausted(producer_epoch))):
            return PRODUCER_FENCED, -1, -1
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            return CONCURRENT_TRANSACTIONS, -1, -1
        if meta.state == TxnState.ONGOING:
            self._fence_and_abort(now_ms, meta)
            return CONCURRENT_TRANSACTIONS, -1, -1
        # Empty / CompleteCommit / CompleteAbort (or new)
        if epoch_exhausted(meta.producer_epoch) and (not expected or producer_epoch == meta.producer_epoch):
            new_pid = self.backend.allocate_producer_id()
            changes: dict[str, object] = dict(
                producer_id=new_pid, producer_epoch=0, last_producer_id=meta.producer_id,
                last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH)
        elif not expected or meta.producer_epoch == NO_PRODUCER_EPOCH or producer_epoch == meta.producer_epoch:
            changes = dict(producer_epoch=meta.producer_epoch + 1,
                           last_producer_epoch=meta.producer_epoch if expected else NO_PRODUCER_EPOCH)
        elif producer_epoch == meta.last_producer_epoch:   # a retry of a bump whose answer was lost
            changes = {}
        else:
            return PRODUCER_FENCED, -1, -1
        try:
            new = self._transit(meta, now_ms, timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=set(),
                                start_ms=-1, **changes)
        except Exception as exc:
            log.exception("could not persist transactional id %r", txn_id)
            return E.txn_write_error(exc), -1, -1
        return E.NONE, new.producer_id, new.producer_epoch

    # -- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------
    def add_partitions(self, now_ms: int, txn_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[TP], client_tv: int = 0) -> int:
        """One error for the whole request (Kafka applies it to every partition). ``client_tv`` 2: added
        implicitly by a TV2 client's Produce v12+ or TxnOffsetCommit v5+ (the broker's AddPartitionsToTxn v5),
        recorded as the transaction's client version."""
        err, meta = self._check_producer(txn_id, producer_id, producer_epoch)
        if meta is None:
            return err
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            return CONCURRENT_TRANSACTIONS
        wanted = set(partitions)
        if meta.state == TxnState.ONGOING and wanted <= meta.partitions:
            return E.NONE
        start = meta.start_ms if meta.state == TxnState.ONGOING else now_ms
        try:
            self._transit(meta, now_ms, state=TxnState.ONGOING, partitions=meta.partitions | wanted, start_ms=start,
                          client_tv=client_tv)
        except Exception as exc:
            log.exception("could not persist transaction %r", txn_id)
            return E.txn_write_error(exc)
        return E.NONE

    def add_offsets(self, now_ms: int, txn_id: str, producer_id: int, producer_epoch: int, group_id: str,
                    offsets_partition: int, client_tv: int = 0) -> int:
        err = group_id_error(group_id)
        if err is not None:
            return err
        return self.add_partitions(now_ms, txn_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, offsets_partition)],
                                   client_tv)

    def verify_partitions(self, txn_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TP]) -> tuple[int, dict[TP, int]]:
        """AddPartitionsToTxn v4+ with VerifyOnly (Kafka's handleVerifyPartitionsInTransaction) -> (error for
        every partition, or NONE and per partition NONE / TRANSACTION_ABORTABLE when not in the transaction)."""
        err = self._lookup_error(txn_id)
        if err is not None:
            return err, {}
        meta = self.txns.get(txn_id)
        if meta is None or meta.state == TxnState.DEAD or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING, {}
        if meta.producer_epoch != producer_epoch:
            return PRODUCER_FENCED, {}
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return CONCURRENT_TRANSACTIONS, {}
        return E.NONE, {tp: E.NONE if tp in meta.partitions else TRANSACTION_ABORTABLE for tp in partitions}

    # -- EndTxn ------------------------------------------------------------------------------------
    def end_txn(self, now_ms: int, txn_id: str, producer_id: int, producer_epoch: int, commit: bool,
                client_tv: int = 0) -> tuple[int, int, int]:
        """-> (error, producer id, epoch). ``client_tv`` 2 (EndTxn v5, KIP-890 part 2): the transaction ends with
        the epoch bumped (markers carry the bumped epoch) and the answer names the id and epoch the producer
        goes on with; an error answers -1, -1. Before v5 the answer's id and epoch are not sent."""
        if client_tv >= 2:
            return self._end_txn_v2(now_ms, txn_id, producer_id, producer_epoch, commit)
        err, meta = self._check_producer(txn_id, producer_id, producer_epoch)
        if meta is None:
            return err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        st = meta.state
        if st == TxnState.ONGOING:
            err = self._end(now_ms, meta, commit)
        elif st == TxnState.COMPLETE_COMMIT:
            err = E.NONE if commit else INVALID_TXN_STATE
        elif st == TxnState.COMPLETE_ABORT:
            err = E.NONE if not commit else INVALID_TXN_STATE
        elif st == TxnState.PREPARE_COMMIT:
            err = CONCURRENT_TRANSACTIONS if commit else INVALID_TXN_STATE
        elif st == TxnState.PREPARE_ABORT:
            err = CONCURRENT_TRANSACTIONS if not commit else INVALID_TXN_STATE
        else:
            err = INVALID_TXN_STATE   # Empty, Dead, PrepareEpochFence
        return self._answer(err, txn_id)

    def _answer(self, err: int, txn_id: str) -> tuple[int, int, int]:
        """The id and epoch EndTxn v5 returns: those the producer's next transaction uses (after an epoch
        overflow the next producer id at epoch 0, even while the markers are still being retried)."""
        meta = self.txns.get(txn_id)
        if err != E.NONE or meta is None:
            return err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if meta.next_producer_id != NO_PRODUCER_ID:
            return err, meta.next_producer_id, 0
        return err, meta.producer_id, meta.producer_epoch

    def _end_txn_v2(self, now_ms: int, txn_id: str, producer_id: int, producer_epoch: int,
                    commit: bool) -> tuple[int, int, int]:
        """Kafka 4.x's TransactionCoordinator.endTransaction for a TV2 client. Every EndTxn bumps the epoch, so
        the same epoch no longer tells a retry from the next transaction's end: a retry is the request whose
        epoch is one below the stored one (the bump it caused), or one that overflowed (the previous producer
        id at epoch 32766 while the new id sits at epoch 0). Ongoing / Empty need the current epoch;
        PrepareX only a retry (CONCURRENT_TRANSACTIONS while it completes); CompleteX a retry (answered NONE
        with the current id and epoch for the same result) or the current epoch: an abort then starts and
        ends an empty transaction with its own bump, as an abort in Empty does (the client cannot know whether
        its Produce v12 requests added partitions). Any other epoch is PRODUCER_FENCED."""
        err = self._lookup_error(txn_id)
        if err is not None:
            return err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        meta = self.txns.get(txn_id)
        if meta is None or meta.state == TxnState.DEAD:
            return INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        st = meta.state
        retry_on_overflow = (meta.last_producer_id == producer_id and producer_epoch == MAX_EPOCH - 1
                             and meta.producer_epoch == 0)
        retry_on_bump = meta.producer_epoch == producer_epoch + 1
        if st in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            valid = retry_on_bump
        elif st in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        else:
            valid = producer_epoch == meta.producer_epoch
        if meta.producer_id != producer_id and not retry_on_overflow:
            return INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not valid:
            return PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        retry = retry_on_bump or retry_on_overflow
        if st == TxnState.ONGOING:
            err = self._end(now_ms, meta, commit, client_tv=2)
        elif st == TxnState.COMPLETE_COMMIT:
            if commit:
                err = E.NONE if retry else INVALID_TXN_STATE
            else:
                err = INVALID_TXN_STATE if retry else self._end(now_ms, meta, False, client_tv=2, empty=True)
        elif st == TxnState.COMPLETE_ABORT:
            if commit:
                err = INVALID_TXN_STATE
            else:
                err = E.NONE if retry else self._end(now_ms, meta, False, client_tv=2, empty=True)
        elif st == TxnState.PREPARE_COMMIT:
            err = CONCURRENT_TRANSACTIONS if commit else INVALID_TXN_STATE
        elif st == TxnState.PREPARE_ABORT:
            err = CONCURRENT_TRANSACTIONS if not commit else INVALID_TXN_STATE
        elif st == TxnState.EMPTY and not commit:
            err = self._end(now_ms, meta, False, client_tv=2, empty=True)
        else:
            err = INVALID_TXN_STATE   # commit in Empty, PrepareEpochFence
        return self._answer(err, txn_id)

    def _lookup_error(self, txn_id: str) -> int | None:
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        err = txn_id_error(txn_id)
        if err is not None:
            return err
        if self.owns is not None and not self.owns(txn_id):
            return E.NOT_COORDINATOR
        return None

    def _end(self, now_ms: int, meta: TxnMetadata, commit: bool, client_tv: int = 0, empty: bool = False,
             bump: bool | None = None) -> int:
        """Ongoing (or, TV2's abort, Empty/CompleteX with no partitions) -> PrepareX -> markers -> CompleteX.
        TV2 (Kafka's prepareAbortOrCommit): the prepared epoch is the current one + 1, the last epoch the
        current one; when that bump reaches the last usable epoch a new producer id is allocated first and
        taken, at epoch 0, on completion (prepareComplete)."""
        changes: dict[str, object] = {"state": TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                                      "client_tv": client_tv}
        if client_tv >= 2 if bump is None else bump:
            if epoch_exhausted(meta.producer_epoch):
                try:
                    changes["next_producer_id"] = self.backend.allocate_producer_id()
                except OSError as exc:   # no id block could be persisted (a full disk): retriable
                    log.error("cannot allocate a producer id for %r: %s", meta.transactional_id, exc)
                    return E.COORDINATOR_LOAD_IN_PROGRESS
            changes.update(producer_epoch=meta.producer_epoch + 1, last_producer_epoch=meta.producer_epoch)
        if empty:
            changes.update(partitions=set(), start_ms=now_ms)
        try:
            prepared = self._transit(meta, now_ms, **changes)
        except Exception as exc:
            log.exception("could not persist transaction %r", meta.transactional_id)
            return E.txn_write_error(exc)
        self._complete(now_ms, prepared)
        return E.NONE

    def _complete(self, now_ms: int, meta: TxnMetadata) -> None:
        """Write the markers of a PrepareCommit/PrepareAbort transaction, then CompleteCommit/CompleteAbort.

        A partition that disappeared is skipped by the backend (Kafka drops those markers too). A marker that
        fails to write (storage error) is retried every MARKER_RETRY_MS by :meth:`poll`, as Kafka's marker
        channel retries until it succeeds: the transaction stays PrepareX meanwhile (EndTxn retries get
        CONCURRENT_TRANSACTIONS), and read_committed readers of that partition wait at its LSO rather than
        the transaction being completed without its marker."""
        commit = meta.state == TxnState.PREPARE_COMMIT
        failed: set[TP] = set()
        for tp in sorted(meta.partitions):
            try:
                self.backend.write_marker(tp, meta.producer_id, meta.producer_epoch, commit)
            except Exception:
                log.exception("could not write %s marker to %s-%d for %r; will retry", "COMMIT" if commit
                              else "ABORT", tp[0], tp[1], meta.transactional_id)
                failed.add(tp)
        if any(t == OFFSETS_TOPIC for t, _ in meta.partitions - failed):
            self.backend.complete_group_txn(meta.producer_id, commit)
        if failed:
            meta.partitions = failed
            meta.marker_retry_ms = now_ms + MARKER_RETRY_MS
            return
        meta.marker_retry_ms = None
        done: dict[str, object] = {"state": TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
                                   "partitions": set()}
        if meta.client_tv >= 2 and meta.next_producer_id != NO_PRODUCER_ID:   # the epochs overflowed: rotate
            done.update(producer_id=meta.next_producer_id, producer_epoch=0, last_producer_id=meta.producer_id,
                        last_producer_epoch=meta.producer_epoch, next_producer_id=NO_PRODUCER_ID)
        try:
            self._transit(meta, now_ms, **done)
        except Exception:   # stays PrepareX in memory; completed again on the next load
            log.exception("could not persist completion of %r", meta.transactional_id)
            for k, v in done.items():
                setattr(meta, k, v)

    def _fence_and_abort(self, now_ms: int, meta: TxnMetadata) -> int:
        """Abort an Ongoing transaction on the coordinator's own behalf: bump the epoch (unless exhausted) so
        the producer that owned it is fenced, then abort with the bumped epoch (Kafka's PrepareEpochFence)."""
        epoch = meta.producer_epoch if epoch_exhausted(meta.producer_epoch) else meta.producer_epoch + 1
        fenced = dataclasses.replace(meta, producer_epoch=epoch, last_producer_epoch=NO_PRODUCER_EPOCH,
                                     partitions=set(meta.partitions))
        # one bump for either transaction version (Kafka 4.x lets TV2's prepareAbortOrCommit make it); the
        # client's transaction version is kept
        return self._end(now_ms, fenced, commit=False, client_tv=meta.client_tv, bump=False)

    # -- transactional produce / offsets ---------------------------------------------------------
    def check_produce(self, txn_id: str, tp: TP, producer_id: int, producer_epoch: int) -> int:
        """Kafka 3.9's partition verification for a transactional Produce."""
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS
        meta = self.txns.get(txn_id)
        if meta is None or meta.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING
        if producer_epoch < meta.producer_epoch:
            return INVALID_PRODUCER_EPOCH
        if meta.state != TxnState.ONGOING or tp not in meta.partitions or producer_epoch != meta.producer_epoch:
            return INVALID_TXN_STATE
        return E.NONE

    def check_txn_offset_commit(self, txn_id: str, producer_id: int, producer_epoch: int,
                                offsets_partition: int) -> int:
        """TxnOffsetCommit is valid only inside the producer's Ongoing transaction that added the group: Kafka
        verifies the group's ``__consumer_offsets`` partition with the transaction coordinator
        (``TransactionCoordinator.handleVerifyPartitionsInTransaction``, then ``AddPartitionsToTxnManager``):
        another epoch is PRODUCER_FENCED there, answered as INVALID_PRODUCER_EPOCH; a transaction completing is
        CONCURRENT_TRANSACTIONS; a partition not in the transaction TRANSACTION_ABORTABLE (the handler answers
        INVALID_TXN_STATE to versions before 4)."""
        err, meta = self._check_producer(txn_id, producer_id, producer_epoch)
        if meta is None:
            return INVALID_PRODUCER_EPOCH if err == PRODUCER_FENCED else err
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return CONCURRENT_TRANSACTIONS
        if meta.state != TxnState.ONGOING or (OFFSETS_TOPIC, offsets_partition) not in meta.partitions:
            return TRANSACTION_ABORTABLE
        return E.NONE

    # -- timers ------------------------------------------------------------------------------------
    @staticmethod
    def _expiry(m: TxnMetadata) -> int:
        due = m.start_ms + m.timeout_ms
        return due if m.abort_retry_ms is None else max(due, m.abort_retry_ms)

    def next_deadline(self) -> int | None:
        ds = [self._expiry(m) for m in self.txns.values() if m.state == TxnState.ONGOING]
        ds += [m.marker_retry_ms for m in self.txns.values() if m.marker_retry_ms is not None]
        return min(ds) if ds else None

    def poll(self, now_ms: int) -> int:
        """Retry markers that failed to write; abort every Ongoing transaction past its timeout (returns how
        many were aborted).

        Each transactional id is its own unit of failure: an abort that could not be stored, or an unexpected
        exception while completing or aborting one id, is logged (the traceback once, then one line per
        repeat) and that id alone is tried again later, backing off from MARKER_RETRY_MS doubling to
        MAX_RETRY_MS; it stays in its state meanwhile (Ongoing / PrepareX: its producer gets
        CONCURRENT_TRANSACTIONS or an epoch error, as while Kafka's coordinator retries). Other ids and the
        process are not affected."""
        if self.loading:
            return 0
        for meta in [m for m in self.txns.values()
                     if m.marker_retry_ms is not None and m.marker_retry_ms <= now_ms]:
            try:
                self._complete(now_ms, meta)
            except Exception as exc:
                self._contain(meta.transactional_id, now_ms, exc, "completing")
            else:
                self._succeeded(meta.transactional_id)
        expired = [m for m in self.txns.values() if m.state == TxnState.ONGOING and self._expiry(m) <= now_ms]
        aborted = 0
        for meta in expired:
            log.info("aborting transaction %r (producer %d epoch %d): older than its timeout of %d ms",
                     meta.transactional_id, meta.producer_id, meta.producer_epoch, meta.timeout_ms)
            try:
                err = self._fence_and_abort(now_ms, meta)
            except Exception as exc:
                self._contain(meta.transactional_id, now_ms, exc, "aborting")
                continue
            if err == E.NONE:
                aborted += 1
                self._succeeded(meta.transactional_id)
            else:   # could not be stored (already logged): not in a tight loop, after a backoff
                self._retry_later(meta.transactional_id, now_ms)
        return aborted

    def _succeeded(self, txn_id: str) -> None:
        cur = self.txns.get(txn_id)
        if cur is not None and cur.marker_retry_ms is None:
            cur.failures = 0

    def _retry_later(self, txn_id: str, now_ms: int) -> int:
        """Schedule the id's next attempt where its *current* state is retried (an exception may come after a
        transition was stored: PrepareX is completed again, Ongoing aborted again) -> the delay."""
        cur = self.txns.get(txn_id)
        if cur is None:
            return 0
        cur.failures += 1
        delay = int(min(MARKER_RETRY_MS * 2 ** min(cur.failures - 1, 16), MAX_RETRY_MS))
        if cur.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            cur.marker_retry_ms = now_ms + delay
        elif cur.state == TxnState.ONGOING:
            cur.abort_retry_ms = now_ms + delay
        return delay

    def _contain(self, txn_id: str, now_ms: int, exc: Exception, during: str) -> None:
        """Log one transactional id's unexpected failure (the traceback the first time) and retry it later."""
        delay = self._retry_later(txn_id, now_ms)
        failures = self.txns[txn_id].failures if txn_id in self.txns else 1
        if failures <= 1:
            log.error("transactional id %r failed while %s; retrying it in %d ms", txn_id, during, delay,
                      exc_info=exc)
        else:
            log.error("transactional id %r failed again while %s (%d times): %s: %s; retrying in %d ms",
                      txn_id, during, failures, type(exc).__name__, exc, delay)

    # -- load --------------------------------------------------------------------------------------
    def load(self, now_ms: int, values: dict[str, TxnLogValue | None]) -> None:
        """Install the last value of each transactional id; finish the ones found half-way through."""
        self.txns = {tid: TxnMetadata.from_value(tid, v) for tid, v in values.items() if v is not None}
        for meta in list(self.txns.values()):
            if meta.state == TxnState.PREPARE_EPOCH_FENCE:
                meta.state = TxnState.ONGOING
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                log.info("completing %s of %r found on load", meta.state.kafka_name, meta.transactional_id)
                self._complete(now_ms, meta)

    # -- describe / list -------------------------------------------------------------------------
    def describe(self, txn_id: str) -> tuple[int, TxnMetadata | None]:
        if self.loading:
            return E.COORDINATOR_LOAD_IN_PROGRESS, None
        meta = self.txns.get(txn_id)
        if meta is None or meta.state == TxnState.DEAD:
            return TRANSACTIONAL_ID_NOT_FOUND, None
        return E.NONE, meta

    def list(self, now_ms: int, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
             min_duration_ms: int = -1) -> list[TxnMetadata]:
        want_states = {STATE_BY_NAME[s] for s in states if s in STATE_BY_NAME}
        want_pids = set(producer_ids)
        out = []
        for meta in self.txns.values():
            if meta.state == TxnState.DEAD:
                continue
            if want_states and meta.state not in want_states:
                continue
            if want_pids and meta.producer_id not in want_pids:
                continue
            if min_duration_ms >= 0 and (meta.state != TxnState.ONGOING or now_ms - meta.start_ms < min_duration_ms):
                continue
            out.append(meta)
        return out
