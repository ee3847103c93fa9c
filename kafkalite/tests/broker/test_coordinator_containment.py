"""Failures in the coordinators stay in their unit: one transactional id, one request. Writes to the internal
topics that fail answer Kafka's error codes (as its GroupMetadataManager / TransactionStateManager map log-append
errors), never a crash or a closed connection."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kafkalite.coordinator.classic.group import OffsetAndMetadata
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.txn.coordinator import MARKER_RETRY_MS, TransactionCoordinator, TxnState
from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import commit, create_topic
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.unit.test_group_coordinator import join, make
from kafkalite.tests.unit.test_transactions import T0, Backend, init
from kafkalite_storage import PartitionLog
from kafkalite_storage.errors import StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ApiVersionsRequest


class FailingBackend(Backend):
    def __init__(self) -> None:
        super().__init__()
        self.persist_calls = 0
        self.fail_with: BaseException | None = None
        self.fail_group_completion = False

    def persist(self, meta) -> None:  # type: ignore[no-untyped-def]
        self.persist_calls += 1
        if self.fail_with is not None:
            raise self.fail_with
        super().persist(meta)

    def complete_group_txn(self, producer_id: int, commit: bool) -> None:
        if self.fail_group_completion:
            raise RuntimeError("injected group completion failure")
        super().complete_group_txn(producer_id, commit)


def test_an_expired_abort_that_cannot_be_stored_backs_off_instead_of_spinning() -> None:
    be = FailingBackend()
    tc = TransactionCoordinator(be)
    pid, ep = init(tc, timeout=1000)
    assert tc.add_partitions(T0, "tx", pid, ep, [("a", 0)]) == E.NONE
    be.fail_with = E.AppendError(E.KAFKA_STORAGE_ERROR)
    calls = be.persist_calls
    assert tc.poll(T0 + 1000) == 0
    assert be.persist_calls == calls + 1
    assert tc.txns["tx"].state is TxnState.ONGOING
    assert tc.next_deadline() == T0 + 1000 + MARKER_RETRY_MS      # not "now" again: no busy loop
    tc.poll(T0 + 1500)
    assert be.persist_calls == calls + 1                          # nothing tried before the retry time
    tc.poll(T0 + 2000)
    assert be.persist_calls == calls + 2
    assert tc.next_deadline() == T0 + 2000 + 2 * MARKER_RETRY_MS  # doubling
    be.fail_with = None
    assert tc.poll(T0 + 4000) == 1
    assert tc.txns["tx"].state is TxnState.COMPLETE_ABORT and tc.next_deadline() is None


def test_one_failing_transactional_id_does_not_stop_the_others(caplog: pytest.LogCaptureFixture) -> None:
    be = FailingBackend()
    tc = TransactionCoordinator(be)
    bad_pid, bad_ep = init(tc, "bad", timeout=1000)
    good_pid, good_ep = init(tc, "good", timeout=1000)
    assert tc.add_offsets(T0, "bad", bad_pid, bad_ep, "group", 3) == E.NONE
    assert tc.add_partitions(T0, "good", good_pid, good_ep, [("a", 0)]) == E.NONE
    be.fail_group_completion = True
    caplog.set_level(logging.ERROR, "kafkalite.transactions")
    for t in range(3):
        tc.poll(T0 + 1000 + t * 100_000)           # must not raise
    assert tc.txns["good"].state is TxnState.COMPLETE_ABORT
    assert tc.txns["bad"].state is TxnState.PREPARE_ABORT and tc.txns["bad"].marker_retry_ms is not None
    failures = [r for r in caplog.records if "'bad' failed" in r.getMessage()]
    assert len(failures) == 3 and failures[0].exc_info and not failures[1].exc_info
    be.fail_group_completion = False
    tc.poll(T0 + 1_000_000)
    assert tc.txns["bad"].state is TxnState.COMPLETE_ABORT


@pytest.mark.parametrize(("append_code", "txn", "group", "offsets"), [
    (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR, E.NOT_COORDINATOR, E.NOT_COORDINATOR),
    (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_NOT_AVAILABLE,
     E.COORDINATOR_NOT_AVAILABLE),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR, E.INVALID_COMMIT_OFFSET_SIZE),
    (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE, E.REBALANCE_IN_PROGRESS, E.REQUEST_TIMED_OUT),
])
def test_failed_internal_writes_map_as_kafka_maps_them(append_code: int, txn: int, group: int, offsets: int) -> None:
    exc = E.AppendError(append_code)
    assert (E.txn_write_error(exc), E.group_write_error(exc), E.offset_write_error(exc)) == (txn, group, offsets)
    # through the coordinators
    be = FailingBackend()
    tc = TransactionCoordinator(be)
    be.fail_with = exc
    assert tc.init_producer_id(T0, "tx", 60_000)[0] == txn
    c, _ = make()
    p = join(c, 0, v4=False)
    c.poll(0)
    mid = p.result.member_id
    assert c.sync_group(0, "g", 1, mid, None, None, None, {mid: b"A"}).result.error == E.NONE

    def failing_append(partition: int, records: list) -> None:  # type: ignore[type-arg]
        raise exc

    c._append = failing_append
    assert c.commit_offsets(1, "g", mid, None, 1, {("t", 0): OffsetAndMetadata(5)}) == {("t", 0): offsets}
    rejoin = join(c, 2, member=mid, v4=False)     # the leader rejoining starts a rebalance
    c.poll(2)
    assert rejoin.result.error == E.NONE and rejoin.result.generation_id == 2
    s = c.sync_group(3, "g", 2, mid, None, None, None, {mid: b"A"})
    assert s.result.error == group


def test_storage_error_on_consumer_offsets_is_an_error_code_not_a_crash(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    original = PartitionLog.append
    failing = {"on": False}

    def append(self: PartitionLog, *a, **kw):  # type: ignore[no-untyped-def]
        if failing["on"] and self.topic == "__consumer_offsets":
            raise StorageError("injected: No space left on device")
        return original(self, *a, **kw)

    monkeypatch.setattr(PartitionLog, "append", append)
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "t")
        assert commit(c, "g", 2, "t", {0: 1}) == {0: 0}
        failing["on"] = True
        assert commit(c, "g", 2, "t", {0: 2}) == {0: ErrorCode.NOT_COORDINATOR}   # KAFKA_STORAGE_ERROR's mapping
        assert c.request(ApiVersionsRequest(), 0).error_code == 0                    # same connection, still up
        failing["on"] = False
        assert commit(c, "g", 2, "t", {0: 3}) == {0: 0}


def test_an_unexpected_error_in_one_transactional_request_is_an_error_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalite.coordinator.txn.service import TransactionService

    svc = TransactionService(None)
    svc.coordinator.backend = Backend()   # in-memory __transaction_state and producer ids
    svc.coordinator.loading = False
    pid, ep = init(svc.coordinator, "tx")

    def boom(*a, **kw):  # type: ignore[no-untyped-def]
        raise KeyError("injected")

    monkeypatch.setattr(svc.coordinator, "add_partitions", boom)
    monkeypatch.setattr(svc.coordinator, "end_txn", boom)
    assert svc.add_partitions("tx", pid, ep, [("a", 0)]) == E.UNKNOWN_SERVER_ERROR
    assert svc.end_txn("tx", pid, ep, True)[0] == E.UNKNOWN_SERVER_ERROR
    assert svc.coordinator.txns["tx"].state is TxnState.EMPTY
