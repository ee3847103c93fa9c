"""The pure transaction coordinator (Kafka 3.9's rules) with explicit ``now_ms`` and an in-memory backend
that keeps the ``__transaction_state`` records it was given, so a new coordinator can load them."""
from __future__ import annotations

import pytest

from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.coordinator.txn.coordinator import (
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_EPOCH,
    INVALID_PRODUCER_ID_MAPPING,
    INVALID_TRANSACTION_TIMEOUT,
    INVALID_TXN_STATE,
    PRODUCER_FENCED,
    TRANSACTION_ABORTABLE,
    TRANSACTIONAL_ID_NOT_FOUND,
    TransactionCoordinator,
    TxnMetadata,
    TxnState,
)
from kafkalite.coordinator.txn.records import (
    TxnLogValue,
    decode_txn_key,
    decode_txn_value,
    encode_txn_key,
    encode_txn_value,
)

T0 = 1_700_000_000_000


class Backend:
    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes]] = []
        self.markers: list[tuple[tuple[str, int], int, int, bool]] = []
        self.group_completions: list[tuple[int, bool]] = []
        self.next_pid = 1000
        self.fail_persist = False

    def persist(self, meta: TxnMetadata) -> None:
        if self.fail_persist:
            raise OSError("disk full")
        self.records.append((encode_txn_key(meta.transactional_id), encode_txn_value(meta.to_value())))

    def write_marker(self, tp: tuple[str, int], producer_id: int, producer_epoch: int, commit: bool) -> None:
        self.markers.append((tp, producer_id, producer_epoch, commit))

    def allocate_producer_id(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def complete_group_txn(self, producer_id: int, commit: bool) -> None:
        self.group_completions.append((producer_id, commit))

    def replay(self) -> dict[str, TxnLogValue | None]:
        out: dict[str, TxnLogValue | None] = {}
        for k, v in self.records:
            out[decode_txn_key(k)] = decode_txn_value(v)
        return out


@pytest.fixture
def be() -> Backend:
    return Backend()


@pytest.fixture
def tc(be: Backend) -> TransactionCoordinator:
    return TransactionCoordinator(be, max_timeout_ms=900_000)


def init(tc: TransactionCoordinator, tid: str = "tx", timeout: int = 60_000, now: int = T0) -> tuple[int, int]:
    err, pid, epoch = tc.init_producer_id(now, tid, timeout)
    assert err == E.NONE
    return pid, epoch


def test_first_init_gives_new_producer_id_epoch_0_and_bumps_after(tc: TransactionCoordinator, be: Backend) -> None:
    pid, epoch = init(tc)
    assert (pid, epoch) == (1001, 0)
    assert init(tc) == (1001, 1)   # a second producer with the same id: same producer id, next epoch
    assert tc.txns["tx"].state == TxnState.EMPTY
    assert init(tc, "other")[0] == 1002   # never shared between transactional ids
    assert len(be.records) == 3           # every transition persisted before answering


@pytest.mark.parametrize("timeout", [0, -1, 900_001])
def test_invalid_transaction_timeout(tc: TransactionCoordinator, timeout: int) -> None:
    assert tc.init_producer_id(T0, "tx", timeout)[0] == INVALID_TRANSACTION_TIMEOUT
    assert "tx" not in tc.txns


def test_empty_transactional_id_and_loading(tc: TransactionCoordinator) -> None:
    assert tc.init_producer_id(T0, "", 1000)[0] == E.INVALID_REQUEST
    tc.loading = True
    assert tc.init_producer_id(T0, "tx", 1000)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert tc.end_txn(T0, "tx", 1, 0, True)[0] == E.COORDINATOR_LOAD_IN_PROGRESS


def test_commit_writes_markers_to_every_partition_then_completes(tc: TransactionCoordinator, be: Backend) -> None:
    pid, ep = init(tc)
    assert tc.add_partitions(T0 + 1, "tx", pid, ep, [("a", 0), ("b", 1)]) == E.NONE
    assert tc.txns["tx"].state == TxnState.ONGOING and tc.txns["tx"].start_ms == T0 + 1
    assert tc.add_partitions(T0 + 2, "tx", pid, ep, [("a", 1)]) == E.NONE
    assert tc.txns["tx"].start_ms == T0 + 1   # the timer starts with the first partition
    assert tc.check_produce("tx", ("a", 1), pid, ep) == E.NONE
    assert tc.end_txn(T0 + 3, "tx", pid, ep, True)[0] == E.NONE
    assert sorted(be.markers) == [(("a", 0), pid, ep, True), (("a", 1), pid, ep, True), (("b", 1), pid, ep, True)]
    meta = tc.txns["tx"]
    assert meta.state == TxnState.COMPLETE_COMMIT and meta.partitions == set()
    statuses = [decode_txn_value(v).status for _k, v in be.records]
    assert statuses[-2:] == [TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT]
    assert decode_txn_value(be.records[-2][1]).partitions == {"a": [0, 1], "b": [1]}


def test_end_txn_retries_and_wrong_states(tc: TransactionCoordinator, be: Backend) -> None:
    pid, ep = init(tc)
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == INVALID_TXN_STATE        # Empty: nothing to end
    tc.add_partitions(T0, "tx", pid, ep, [("a", 0)])
    assert tc.end_txn(T0, "tx", pid, ep, False)[0] == E.NONE
    n = len(be.markers)
    assert tc.end_txn(T0, "tx", pid, ep, False)[0] == E.NONE                  # retried abort succeeds
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == INVALID_TXN_STATE        # commit after abort does not
    assert len(be.markers) == n                                            # and writes nothing
    tc.add_partitions(T0, "tx", pid, ep, [("a", 0)])
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == E.NONE
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == E.NONE
    assert tc.end_txn(T0, "tx", pid, ep, False)[0] == INVALID_TXN_STATE


def test_unknown_id_wrong_producer_and_fenced_epoch(tc: TransactionCoordinator) -> None:
    pid, ep = init(tc)
    assert tc.add_partitions(T0, "nope", pid, ep, [("a", 0)]) == INVALID_PRODUCER_ID_MAPPING
    assert tc.add_partitions(T0, "tx", pid + 7, ep, [("a", 0)]) == INVALID_PRODUCER_ID_MAPPING
    assert tc.add_partitions(T0, "tx", pid, ep + 1, [("a", 0)]) == PRODUCER_FENCED
    assert tc.end_txn(T0, "tx", pid, ep - 1, True)[0] == PRODUCER_FENCED
    assert tc.add_offsets(T0, "tx", pid, ep, "", 0) == E.INVALID_GROUP_ID


def test_second_producer_fences_the_first_and_aborts_its_transaction(tc: TransactionCoordinator,
                                                                     be: Backend) -> None:
    pid, ep = init(tc)
    tc.add_partitions(T0, "tx", pid, ep, [("a", 0)])
    # the new producer finds an Ongoing transaction: it is fenced and aborted, the client retries
    assert tc.init_producer_id(T0 + 5, "tx", 60_000)[0] == CONCURRENT_TRANSACTIONS
    assert be.markers == [(("a", 0), pid, ep + 1, False)]   # aborted with the bumped epoch
    assert tc.txns["tx"].state == TxnState.COMPLETE_ABORT
    err, pid2, ep2 = tc.init_producer_id(T0 + 6, "tx", 60_000)
    assert (err, pid2, ep2) == (E.NONE, pid, ep + 2)
    # the old producer is fenced everywhere
    assert tc.add_partitions(T0, "tx", pid, ep, [("a", 0)]) == PRODUCER_FENCED
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == PRODUCER_FENCED
    assert tc.check_produce("tx", ("a", 0), pid, ep) == INVALID_PRODUCER_EPOCH
    # ... and its KIP-360 re-init with its old epoch too
    assert tc.init_producer_id(T0, "tx", 60_000, pid, ep)[0] == PRODUCER_FENCED


def test_v3_init_with_current_epoch_bumps_and_a_retry_returns_the_same(tc: TransactionCoordinator) -> None:
    pid, ep = init(tc)
    assert tc.init_producer_id(T0, "tx", 60_000, pid, ep) == (E.NONE, pid, ep + 1)
    # the answer was lost; the client retries with the epoch it had: same epoch again, no bump
    assert tc.init_producer_id(T0, "tx", 60_000, pid, ep) == (E.NONE, pid, ep + 1)
    assert tc.init_producer_id(T0, "tx", 60_000, pid + 1, ep + 1)[0] == PRODUCER_FENCED


def test_epoch_exhaustion_rotates_the_producer_id(tc: TransactionCoordinator) -> None:
    pid, _ = init(tc)
    tc.txns["tx"].producer_epoch = 32766
    err, pid2, ep2 = tc.init_producer_id(T0, "tx", 60_000)
    assert err == E.NONE and pid2 != pid and ep2 == 0
    assert tc.txns["tx"].last_producer_id == pid


def test_produce_verification(tc: TransactionCoordinator) -> None:
    pid, ep = init(tc)
    assert tc.check_produce("tx", ("a", 0), pid, ep) == INVALID_TXN_STATE          # no transaction yet
    tc.add_partitions(T0, "tx", pid, ep, [("a", 0)])
    assert tc.check_produce("tx", ("a", 0), pid, ep) == E.NONE
    assert tc.check_produce("tx", ("a", 1), pid, ep) == INVALID_TXN_STATE          # not added
    assert tc.check_produce("nope", ("a", 0), pid, ep) == INVALID_PRODUCER_ID_MAPPING
    assert tc.check_produce("tx", ("a", 0), pid + 1, ep) == INVALID_PRODUCER_ID_MAPPING


def test_txn_offset_commit_needs_the_group_partition(tc: TransactionCoordinator, be: Backend) -> None:
    """Kafka's verification of the group's partition: TRANSACTION_ABORTABLE when the transaction has not added
    it (the handler answers INVALID_TXN_STATE before v4), INVALID_PRODUCER_EPOCH for another epoch."""
    pid, ep = init(tc)
    assert tc.check_txn_offset_commit("tx", pid, ep, 7) == TRANSACTION_ABORTABLE
    assert tc.add_offsets(T0, "tx", pid, ep, "g", 7) == E.NONE
    assert tc.check_txn_offset_commit("tx", pid, ep, 7) == E.NONE
    assert tc.check_txn_offset_commit("tx", pid, ep + 1, 7) == INVALID_PRODUCER_EPOCH
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == E.NONE
    assert be.markers == [((OFFSETS_TOPIC, 7), pid, ep, True)]
    assert be.group_completions == [(pid, True)]


def test_timeout_aborts_with_an_epoch_bump(tc: TransactionCoordinator, be: Backend) -> None:
    pid, ep = init(tc, timeout=1000)
    assert tc.next_deadline() is None
    tc.add_partitions(T0 + 100, "tx", pid, ep, [("a", 0)])
    assert tc.next_deadline() == T0 + 1100
    assert tc.poll(T0 + 1099) == 0 and tc.txns["tx"].state == TxnState.ONGOING
    assert tc.poll(T0 + 1100) == 1
    meta = tc.txns["tx"]
    assert meta.state == TxnState.COMPLETE_ABORT and meta.producer_epoch == ep + 1
    assert be.markers == [(("a", 0), pid, ep + 1, False)]
    assert tc.next_deadline() is None
    # the producer that let it expire is fenced
    assert tc.end_txn(T0 + 1200, "tx", pid, ep, True)[0] == PRODUCER_FENCED
    assert tc.add_partitions(T0 + 1200, "tx", pid, ep, [("a", 0)]) == PRODUCER_FENCED


def test_concurrent_transactions_while_preparing(tc: TransactionCoordinator) -> None:
    pid, ep = init(tc)
    tc.txns["tx"].state = TxnState.PREPARE_COMMIT
    assert tc.init_producer_id(T0, "tx", 60_000)[0] == CONCURRENT_TRANSACTIONS
    assert tc.add_partitions(T0, "tx", pid, ep, [("a", 0)]) == CONCURRENT_TRANSACTIONS
    assert tc.end_txn(T0, "tx", pid, ep, True)[0] == CONCURRENT_TRANSACTIONS
    assert tc.end_txn(T0, "tx", pid, ep, False)[0] == INVALID_TXN_STATE


def test_failed_persist_changes_nothing(tc: TransactionCoordinator, be: Backend) -> None:
    pid, ep = init(tc)
    be.fail_persist = True   # an OSError: a storage fault -> NOT_COORDINATOR, as Kafka maps KAFKA_STORAGE_ERROR
    assert tc.add_partitions(T0, "tx", pid, ep, [("a", 0)]) == E.NOT_COORDINATOR
    assert tc.txns["tx"].state == TxnState.EMPTY and not tc.txns["tx"].partitions
    assert tc.init_producer_id(T0, "tx", 60_000)[0] == E.NOT_COORDINATOR
    assert tc.txns["tx"].producer_epoch == ep


def test_persistence_round_trip(tc: TransactionCoordinator, be: Backend) -> None:
    pid, ep = init(tc, "done")
    tc.add_partitions(T0, "done", pid, ep, [("a", 0)])
    tc.end_txn(T0, "done", pid, ep, True)
    pid2, ep2 = init(tc, "open", timeout=5000)
    tc.add_partitions(T0 + 10, "open", pid2, ep2, [("a", 1), ("b", 0)])
    again = TransactionCoordinator(be)
    again.load(T0 + 20, be.replay())
    assert again.txns["done"].state == TxnState.COMPLETE_COMMIT
    assert (again.txns["done"].producer_id, again.txns["done"].producer_epoch) == (pid, ep)
    o = again.txns["open"]
    assert (o.state, o.partitions, o.start_ms, o.timeout_ms) == (TxnState.ONGOING, {("a", 1), ("b", 0)},
                                                                  T0 + 10, 5000)
    assert again.next_deadline() == T0 + 5010
    assert again.end_txn(T0 + 30, "open", pid2, ep2, True)[0] == E.NONE   # the producer carries on


def test_prepare_commit_found_on_load_is_completed(be: Backend) -> None:
    v = TxnLogValue(producer_id=5, producer_epoch=3, timeout_ms=60_000, status=int(TxnState.PREPARE_COMMIT),
                    partitions={"a": [0, 2]}, last_update_ms=T0, start_ms=T0)
    w = TxnLogValue(producer_id=6, producer_epoch=0, timeout_ms=60_000, status=int(TxnState.PREPARE_ABORT),
                    partitions={"b": [1]}, last_update_ms=T0, start_ms=T0)
    tc = TransactionCoordinator(be)
    tc.load(T0 + 1, {"c": v, "d": w, "gone": None})
    assert sorted(be.markers) == [(("a", 0), 5, 3, True), (("a", 2), 5, 3, True), (("b", 1), 6, 0, False)]
    assert tc.txns["c"].state == TxnState.COMPLETE_COMMIT and tc.txns["d"].state == TxnState.COMPLETE_ABORT
    assert "gone" not in tc.txns
    assert decode_txn_value(be.records[-1][1]).status in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


def test_record_format_matches_kafka_layout() -> None:
    """TransactionLogKey v0 / TransactionLogValue v0, byte for byte as Kafka 3.9 writes them."""
    assert encode_txn_key("ab") == b"\x00\x00\x00\x02ab"
    v = TxnLogValue(7, 2, 60_000, 1, {"t": [1, 0]}, 11, 10)
    expected = (b"\x00\x00" + (7).to_bytes(8, "big") + b"\x00\x02" + (60_000).to_bytes(4, "big") + b"\x01"
                + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00\x00\x00\x00\x01"
                + (11).to_bytes(8, "big") + (10).to_bytes(8, "big"))
    assert encode_txn_value(v) == expected
    assert decode_txn_value(expected) == TxnLogValue(7, 2, 60_000, 1, {"t": [0, 1]}, 11, 10)


def test_describe_and_list(tc: TransactionCoordinator) -> None:
    pid, ep = init(tc, "a")
    tc.add_partitions(T0, "a", pid, ep, [("t", 0)])
    init(tc, "b")
    assert tc.describe("x")[0] == TRANSACTIONAL_ID_NOT_FOUND
    err, meta = tc.describe("a")
    assert err == 0 and meta is not None and meta.state.kafka_name == "Ongoing"
    assert [m.transactional_id for m in tc.list(T0, ["Ongoing"])] == ["a"]
    assert sorted(m.transactional_id for m in tc.list(T0)) == ["a", "b"]
    assert [m.transactional_id for m in tc.list(T0, producer_ids=[pid])] == ["a"]
    assert tc.list(T0 + 10, min_duration_ms=100) == []
    assert [m.transactional_id for m in tc.list(T0 + 100, min_duration_ms=100)] == ["a"]


def test_a_marker_that_fails_to_write_is_retried_before_the_transaction_completes(
        tc: TransactionCoordinator, be: Backend) -> None:
    """A storage error on one partition's marker must not complete the transaction without it (its
    read_committed readers would wait at the LSO forever): it stays PrepareCommit and the timer retries."""
    failing = {("b", 1): 2}   # the first two attempts on b-1 fail
    real = be.write_marker

    def flaky(tp: tuple[str, int], producer_id: int, producer_epoch: int, commit: bool) -> None:
        if failing.get(tp, 0) > 0:
            failing[tp] -= 1
            raise OSError("disk full")
        real(tp, producer_id, producer_epoch, commit)

    be.write_marker = flaky  # type: ignore[method-assign]
    pid, ep = init(tc)
    assert tc.add_partitions(T0 + 1, "tx", pid, ep, [("a", 0), ("b", 1)]) == E.NONE
    assert tc.end_txn(T0 + 2, "tx", pid, ep, True)[0] == E.NONE
    assert be.markers == [(("a", 0), pid, ep, True)]
    meta = tc.txns["tx"]
    assert meta.state == TxnState.PREPARE_COMMIT and meta.partitions == {("b", 1)}
    assert tc.end_txn(T0 + 3, "tx", pid, ep, True)[0] == CONCURRENT_TRANSACTIONS   # the client retries
    deadline = tc.next_deadline()
    assert deadline is not None and deadline > T0 + 2
    tc.poll(deadline - 1)
    assert len(be.markers) == 1                     # not before its retry time
    tc.poll(deadline)                               # second failure: still pending
    assert tc.txns["tx"].state == TxnState.PREPARE_COMMIT
    later = tc.next_deadline()
    assert later is not None
    tc.poll(later)                                  # third attempt succeeds
    assert be.markers == [(("a", 0), pid, ep, True), (("b", 1), pid, ep, True)]
    assert tc.txns["tx"].state == TxnState.COMPLETE_COMMIT and tc.next_deadline() is None
    assert tc.end_txn(later + 1, "tx", pid, ep, True)[0] == E.NONE
