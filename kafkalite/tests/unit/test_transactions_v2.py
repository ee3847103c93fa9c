"""transaction.version 2 (KIP-890 part 2) in the pure transaction coordinator: EndTxn v5 bumps the epoch
(markers carry the bumped one), retries are told apart by their epoch, the epochs' overflow moves to a new
producer id, partitions and the group's offsets partition are added implicitly, and the client transaction
version survives a reload through TransactionLogValue version 1."""
from __future__ import annotations

import pytest

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.txn.coordinator import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
    TransactionCoordinator,
    TxnMetadata,
    TxnState,
)
from kafkalite.coordinator.txn.records import TxnLogValue, decode_txn_value, encode_txn_key, encode_txn_value
from kafkalite.tests.unit.test_transactions import T0, Backend

TP0 = ("t", 0)


class BackendV1(Backend):
    """Writes TransactionLogValue version 1, as a broker with transaction.version 1+ finalized does."""

    def persist(self, meta: TxnMetadata) -> None:
        if self.fail_persist:
            raise OSError("disk full")
        self.records.append((encode_txn_key(meta.transactional_id), encode_txn_value(meta.to_value(), 1)))


@pytest.fixture
def be() -> BackendV1:
    return BackendV1()


@pytest.fixture
def tc(be: BackendV1) -> TransactionCoordinator:
    c = TransactionCoordinator(be, max_timeout_ms=900_000)
    c.transaction_version = 2
    return c


def begin(tc: TransactionCoordinator, pid: int, epoch: int, tid: str = "tx", now: int = T0) -> None:
    """A TV2 client's first Produce v12 of a transaction: the partition is added implicitly."""
    assert tc.add_partitions(now, tid, pid, epoch, [TP0], client_tv=2) == E.NONE
    assert tc.check_produce(tid, TP0, pid, epoch) == E.NONE


def start(tc: TransactionCoordinator, tid: str = "tx") -> tuple[int, int]:
    err, pid, epoch = tc.init_producer_id(T0, tid, 60_000)
    assert err == E.NONE
    return pid, epoch


def test_end_txn_v5_bumps_the_epoch_and_writes_markers_with_it(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)
    assert tc.end_txn(T0 + 1, "tx", pid, ep, True, client_tv=2) == (E.NONE, pid, ep + 1)
    assert be.markers == [(TP0, pid, ep + 1, True)]
    meta = tc.txns["tx"]
    assert (meta.state, meta.producer_epoch, meta.last_producer_epoch, meta.client_tv) == (
        TxnState.COMPLETE_COMMIT, ep + 1, ep, 2)
    # the next transaction runs at the new epoch and ends with the next bump
    begin(tc, pid, ep + 1)
    assert tc.end_txn(T0 + 2, "tx", pid, ep + 1, False, client_tv=2) == (E.NONE, pid, ep + 2)
    assert be.markers[-1] == (TP0, pid, ep + 2, False)


def test_a_retry_is_the_epoch_below_and_answers_the_bumped_one(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2)[0] == E.NONE
    markers = len(be.markers)
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2) == (E.NONE, pid, ep + 1)   # the same again
    assert len(be.markers) == markers                                                 # nothing written
    assert tc.end_txn(T0, "tx", pid, ep, False, client_tv=2) == (INVALID_TXN_STATE, -1, -1)   # the other result
    # the current epoch committing with nothing in the transaction: not a retry, nothing to commit
    assert tc.end_txn(T0, "tx", pid, ep + 1, True, client_tv=2) == (INVALID_TXN_STATE, -1, -1)


def test_stale_and_future_epochs_are_fenced(tc: TransactionCoordinator) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)
    assert tc.end_txn(T0, "tx", pid, ep + 1, True, client_tv=2) == (PRODUCER_FENCED, -1, -1)   # Ongoing: exact
    assert tc.end_txn(T0, "tx", pid + 7, ep, True, client_tv=2) == (INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2)[0] == E.NONE
    assert tc.end_txn(T0, "tx", pid, ep - 1, True, client_tv=2) == (PRODUCER_FENCED, -1, -1)   # two below
    assert tc.end_txn(T0, "tx", pid, ep + 2, True, client_tv=2) == (PRODUCER_FENCED, -1, -1)   # above
    assert tc.end_txn(T0, "nobody", pid, ep, True, client_tv=2) == (INVALID_PRODUCER_ID_MAPPING, -1, -1)


def test_abort_with_no_transaction_bumps_without_markers(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, ep = start(tc)
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2) == (INVALID_TXN_STATE, -1, -1)   # Empty: commit
    assert tc.end_txn(T0, "tx", pid, ep, False, client_tv=2) == (E.NONE, pid, ep + 1)
    assert be.markers == []
    assert tc.txns["tx"].state == TxnState.COMPLETE_ABORT
    assert tc.end_txn(T0, "tx", pid, ep + 1, False, client_tv=2) == (E.NONE, pid, ep + 2)   # and again


def test_prepare_state_answers_concurrent_transactions_to_a_retry(tc: TransactionCoordinator,
                                                                  be: BackendV1) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)

    def fail(*_a: object) -> None:
        raise OSError("EIO")

    be.write_marker = fail   # type: ignore[method-assign]
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2) == (E.NONE, pid, ep + 1)
    assert tc.txns["tx"].state == TxnState.PREPARE_COMMIT
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2) == (CONCURRENT_TRANSACTIONS, -1, -1)
    assert tc.end_txn(T0, "tx", pid, ep, False, client_tv=2) == (INVALID_TXN_STATE, -1, -1)
    assert tc.end_txn(T0, "tx", pid, ep + 1, True, client_tv=2) == (PRODUCER_FENCED, -1, -1)


def test_epoch_overflow_moves_to_a_new_producer_id(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, _ = start(tc)
    tc.txns["tx"].producer_epoch = 32766          # the last usable epoch
    begin(tc, pid, 32766)
    err, new_pid, new_ep = tc.end_txn(T0, "tx", pid, 32766, True, client_tv=2)
    assert (err, new_ep) == (E.NONE, 0) and new_pid != pid
    assert be.markers == [(TP0, pid, 32767, True)]   # the markers still belong to the old id
    meta = tc.txns["tx"]
    assert (meta.producer_id, meta.producer_epoch, meta.last_producer_id, meta.state) == (
        new_pid, 0, pid, TxnState.COMPLETE_COMMIT)
    # a retry from the old id at the old epoch is recognised
    assert tc.end_txn(T0, "tx", pid, 32766, True, client_tv=2) == (E.NONE, new_pid, 0)
    begin(tc, new_pid, 0)
    assert tc.end_txn(T0, "tx", new_pid, 0, True, client_tv=2) == (E.NONE, new_pid, 1)


def test_implicit_adds_and_the_produce_check(tc: TransactionCoordinator) -> None:
    pid, ep = start(tc)
    assert tc.check_produce("tx", TP0, pid, ep) == INVALID_TXN_STATE     # nothing added yet
    assert tc.add_partitions(T0, "tx", pid, ep + 1, [TP0], client_tv=2) == PRODUCER_FENCED
    begin(tc, pid, ep)
    assert tc.txns["tx"].client_tv == 2
    # TxnOffsetCommit v5's implicit AddOffsetsToTxn
    assert tc.add_offsets(T0, "tx", pid, ep, "g", 7, client_tv=2) == E.NONE
    assert tc.check_txn_offset_commit("tx", pid, ep, 7) == E.NONE
    assert tc.txns["tx"].partitions == {TP0, (OFFSETS_TOPIC, 7)}


def test_verify_only(tc: TransactionCoordinator) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)
    assert tc.verify_partitions("tx", pid, ep, [TP0, ("t", 1)]) == (E.NONE, {TP0: E.NONE,
                                                                             ("t", 1): TRANSACTION_ABORTABLE})
    assert tc.verify_partitions("tx", pid, ep + 1, [TP0])[0] == PRODUCER_FENCED
    assert tc.verify_partitions("tx", pid + 1, ep, [TP0])[0] == INVALID_PRODUCER_ID_MAPPING
    assert tc.verify_partitions("tx", pid, ep, []) == (E.NONE, {})


def test_a_second_producer_fences_a_tv2_producer(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)
    assert tc.init_producer_id(T0, "tx", 60_000)[0] == CONCURRENT_TRANSACTIONS   # aborts at ep + 1
    assert be.markers == [(TP0, pid, ep + 1, False)]
    assert tc.txns["tx"].client_tv == 2
    err, pid2, ep2 = tc.init_producer_id(T0, "tx", 60_000)
    assert (err, pid2, ep2) == (E.NONE, pid, ep + 2)
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2) == (PRODUCER_FENCED, -1, -1)
    assert tc.add_partitions(T0, "tx", pid, ep, [TP0], client_tv=2) == PRODUCER_FENCED


def test_tv1_end_txn_keeps_the_epoch(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, ep = start(tc)
    assert tc.add_partitions(T0, "tx", pid, ep, [TP0]) == E.NONE
    assert tc.end_txn(T0, "tx", pid, ep, True) == (E.NONE, pid, ep)
    assert be.markers == [(TP0, pid, ep, True)]
    assert tc.end_txn(T0, "tx", pid, ep, True) == (E.NONE, pid, ep)     # the classic retry


def test_state_survives_a_reload(tc: TransactionCoordinator, be: BackendV1) -> None:
    pid, ep = start(tc)
    begin(tc, pid, ep)
    assert tc.end_txn(T0, "tx", pid, ep, True, client_tv=2)[0] == E.NONE
    again = TransactionCoordinator(be)
    again.load(T0 + 5, be.replay())
    meta = again.txns["tx"]
    assert (meta.state, meta.producer_epoch, meta.client_tv) == (TxnState.COMPLETE_COMMIT, ep + 1, 2)
    # the retry after a coordinator restart is still recognised as one
    assert again.end_txn(T0, "tx", pid, ep, True, client_tv=2) == (E.NONE, pid, ep + 1)


def test_log_value_version_1_round_trip_and_layout() -> None:
    v = TxnLogValue(5, 3, 60_000, 4, {"t": [1, 0]}, 11, 10, previous_producer_id=4, next_producer_id=-1,
                    client_transaction_version=2)
    data = encode_txn_value(v, 1)
    assert data[:2] == b"\x00\x01"
    back = decode_txn_value(data)
    assert back == TxnLogValue(5, 3, 60_000, 4, {"t": [0, 1]}, 11, 10, 4, -1, 2, -1)
    # default tags are left out: version 1 of a TV0 value ends with an empty tag section
    plain = encode_txn_value(TxnLogValue(5, 3, 60_000, 0, {}, 11, -1), 1)
    assert plain.endswith(b"\x00") and decode_txn_value(plain).client_transaction_version == 0
    assert decode_txn_value(encode_txn_value(v, 0)).client_transaction_version == 0   # version 0 has no tags
