"""The transaction APIs on the wire against the embedded broker: error codes per version, partition
verification on Produce, read_committed Fetch (LSO, AbortedTransactions) once markers are written,
TxnOffsetCommit visibility, and a PrepareCommit left on disk completed by the next start."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalite.coordinator.txn.coordinator import TransactionCoordinator
from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import fetch_req, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)

Connect = Callable[[], RawClient]


def init(c: RawClient, tid: str, timeout_ms: int = 60_000, version: int = 4) -> tuple[int, int]:
    for _ in range(500):
        r = c.request(InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=timeout_ms), version)
        if r.error_code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
            break
        time.sleep(0.02)
    assert r.error_code == 0, r
    return r.producer_id, r.producer_epoch


def add(c: RawClient, tid: str, pid: int, epoch: int, parts: dict[str, list[int]], version: int = 3) -> dict:
    r = c.request(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=t, partitions=ps)
                             for t, ps in parts.items()]), version)
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def end(c: RawClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return int(c.request(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                       committed=commit), version).error_code)


def txn_produce(c: RawClient, tid: str, topic: str, pid: int, epoch: int, seq: int, values: list[bytes],
                partition: int = 0) -> tuple[int, int]:
    batch = encode_batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True,
                         base_timestamp=int(time.time() * 1000))
    req = produce_req(topic, batch, partition=partition)
    req.transactional_id = tid
    r = c.request(req, 9)
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def txn_offsets(c: RawClient, tid: str, group: str, pid: int, epoch: int, topic: str, offset: int) -> int:
    r = c.request(AddOffsetsToTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                         group_id=group), 3)
    assert r.error_code == 0
    r = c.request(TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                       committed_metadata="")])]), 3)
    return int(r.topics[0].partitions[0].error_code)


def group_offset(c: RawClient, group: str, topic: str) -> int:
    for _ in range(500):
        r = c.request(OffsetFetchRequest(group_id=group, topics=None), 7)
        if r.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            break
        time.sleep(0.02)
    assert r.error_code == 0, r
    return {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions}.get(
        (topic, 0), -1)


def fetch_committed(c: RawClient, topic: str, offset: int = 0):  # type: ignore[no-untyped-def]
    req = fetch_req(topic, offset)
    req.isolation_level = 1
    return c.request(req, 11).responses[0].partitions[0]


def test_transactional_produce_abort_commit_and_read_committed_fetch(raw: Connect) -> None:
    c = raw()
    create_topic(c, "tx-data", 2)
    pid, ep = init(c, "h1")
    assert add(c, "h1", pid, ep, {"tx-data": [0]}) == {("tx-data", 0): 0}
    # partition 1 was not added: Kafka 3.9's partition verification refuses the write
    assert txn_produce(c, "h1", "tx-data", pid, ep, 0, [b"x"], partition=1)[0] == ErrorCode.INVALID_TXN_STATE
    assert txn_produce(c, "h1", "tx-data", pid, ep, 0, [b"a1", b"a2"]) == (0, 0)
    p = fetch_committed(c, "tx-data")
    assert (p.high_watermark, p.last_stable_offset) == (2, 0)     # open transaction holds the LSO
    assert len(bytes(p.records or b"")) == 0
    assert end(c, "h1", pid, ep, commit=False) == 0               # ABORT marker at offset 2
    assert add(c, "h1", pid, ep, {"tx-data": [0]}) == {("tx-data", 0): 0}
    assert txn_produce(c, "h1", "tx-data", pid, ep, 2, [b"c1"]) == (0, 3)
    assert end(c, "h1", pid, ep, commit=True) == 0                # COMMIT marker at offset 4
    p = fetch_committed(c, "tx-data")
    assert (p.high_watermark, p.last_stable_offset) == (5, 5)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(pid, 0)]
    assert len(bytes(p.records)) > 0
    # read_uncommitted: no aborted-transaction list
    r = c.request(fetch_req("tx-data", 0), 11).responses[0].partitions[0]
    assert r.aborted_transactions in (None, [])
    # a retried commit succeeds, an abort after it does not
    assert end(c, "h1", pid, ep, commit=True) == 0
    assert end(c, "h1", pid, ep, commit=False) == ErrorCode.INVALID_TXN_STATE


def test_errors_by_version(raw: Connect) -> None:
    c = raw()
    create_topic(c, "tx-err", 1)
    r = c.request(InitProducerIdRequest(transactional_id="h2", transaction_timeout_ms=900_001), 4)
    assert r.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    pid, ep = init(c, "h2")
    got = add(c, "h2", pid, ep, {"tx-err": [0, 5], "no-such-topic": [0]})
    assert got == {("tx-err", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("tx-err", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                   ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert add(c, "nope", pid, ep, {"tx-err": [0]}) == {("tx-err", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    pid2, ep2 = init(c, "h2")                   # a second producer: the first is fenced
    assert (pid2, ep2) == (pid, ep + 1)
    # KIP-588: PRODUCER_FENCED from v2 on (AddPartitionsToTxn/EndTxn), INVALID_PRODUCER_EPOCH before
    assert add(c, "h2", pid, ep, {"tx-err": [0]}, version=1) == {("tx-err", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert add(c, "h2", pid, ep, {"tx-err": [0]}, version=2) == {("tx-err", 0): ErrorCode.PRODUCER_FENCED}
    assert end(c, "h2", pid, ep, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(c, "h2", pid, ep, True, version=3) == ErrorCode.PRODUCER_FENCED
    r = c.request(InitProducerIdRequest(transactional_id="h2", transaction_timeout_ms=1000,
                                        producer_id=pid, producer_epoch=ep), 3)
    assert r.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    # the fenced producer's writes fail on the partition too
    assert add(c, "h2", pid2, ep2, {"tx-err": [0]}) == {("tx-err", 0): 0}
    assert txn_produce(c, "h2", "tx-err", pid, ep, 0, [b"z"])[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(c, "h2", pid2, ep2, True) == 0
    # both or neither of producer id and epoch (v3+)
    r = c.request(InitProducerIdRequest(transactional_id="h2", transaction_timeout_ms=1000, producer_id=pid,
                                        producer_epoch=-1), 4)
    assert r.error_code == ErrorCode.INVALID_REQUEST
    # v0 InitProducerId (aiokafka) works
    assert init(c, "h2-v0", version=0)[1] == 0


def test_txn_offset_commit_visible_only_after_commit(raw: Connect) -> None:
    c = raw()
    create_topic(c, "tx-in", 1)
    assert c.request(FindCoordinatorRequest(key="h3", key_type=1), 1).error_code == 0
    pid, ep = init(c, "h3")

    def txn_commit(version: int = 3, topic: str = "tx-in", partition: int = 0) -> int:
        r = c.request(TxnOffsetCommitRequest(
            transactional_id="h3", group_id="g3", producer_id=pid, producer_epoch=ep, topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                        partition_index=partition, committed_offset=42, committed_metadata="m")])]), version)
        return int(r.topics[0].partitions[0].error_code)

    def fetched() -> int:
        r = c.request(OffsetFetchRequest(group_id="g3", topics=None), 7)
        return {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions}.get(
            ("tx-in", 0), -1)

    assert txn_commit() == ErrorCode.INVALID_TXN_STATE         # AddOffsetsToTxn first
    r = c.request(AddOffsetsToTxnRequest(transactional_id="h3", producer_id=pid, producer_epoch=ep,
                                         group_id="g3"), 3)
    assert r.error_code == 0
    assert txn_commit() == 0
    assert txn_commit(topic="no-such-topic") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert txn_commit(partition=3) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert fetched() == -1
    assert end(c, "h3", pid, ep, commit=False) == 0
    assert fetched() == -1                                     # aborted: dropped
    c.request(AddOffsetsToTxnRequest(transactional_id="h3", producer_id=pid, producer_epoch=ep, group_id="g3"), 3)
    assert txn_commit(version=0) == 0
    assert fetched() == -1
    assert end(c, "h3", pid, ep, commit=True) == 0
    assert fetched() == 42
    d = c.request(DescribeTransactionsRequest(transactional_ids=["h3", "unknown"]), 0).transaction_states
    assert (d[0].error_code, d[0].transaction_state, d[0].producer_id) == (0, "CompleteCommit", pid)
    assert d[1].error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    lt = c.request(ListTransactionsRequest(state_filters=["CompleteCommit", "Bogus"]), 1)
    assert "h3" in [t.transactional_id for t in lt.transaction_states] and lt.unknown_state_filters == ["Bogus"]


def test_prepare_commit_on_disk_is_completed_on_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker that stopped right after persisting PrepareCommit (markers unwritten) finishes the commit."""
    data = tmp_path / "data"
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "tx-crash", 1)
        pid, ep = init(c, "h4")
        add(c, "h4", pid, ep, {"tx-crash": [0]})
        assert txn_produce(c, "h4", "tx-crash", pid, ep, 0, [b"v"]) == (0, 0)
        assert txn_offsets(c, "h4", "g4", pid, ep, "tx-crash", 17) == 0
        with monkeypatch.context() as m:
            m.setattr(TransactionCoordinator, "_complete", lambda self, now, meta: None)
            assert end(c, "h4", pid, ep, commit=True) == 0
        assert fetch_committed(c, "tx-crash").last_stable_offset == 0     # no marker yet
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        for _ in range(500):
            p = fetch_committed(c, "tx-crash")
            if p.last_stable_offset == 2:
                break
            time.sleep(0.02)
        assert (p.high_watermark, p.last_stable_offset, p.aborted_transactions or []) == (2, 2, [])
        d = c.request(DescribeTransactionsRequest(transactional_ids=["h4"]), 0).transaction_states[0]
        assert d.transaction_state == "CompleteCommit"
        assert end(c, "h4", pid, ep, commit=True) == 0
        # the TxnOffsetCommit offsets were on disk as a transactional batch: the completed commit applies them
        assert group_offset(c, "g4", "tx-crash") == 17
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:   # and the COMMIT marker keeps them
        assert group_offset(c, "g4", "tx-crash") == 17


def test_open_transaction_aborted_after_restart_by_its_timeout(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "tx-open", 1)
        pid, ep = init(c, "h5", timeout_ms=1500)
        add(c, "h5", pid, ep, {"tx-open": [0]})
        assert txn_produce(c, "h5", "tx-open", pid, ep, 0, [b"v"]) == (0, 0)
        assert txn_offsets(c, "h5", "g5", pid, ep, "tx-open", 9) == 0
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        assert fetch_committed(c, "tx-open").last_stable_offset == 0
        deadline = time.monotonic() + 60   # bounds a hang only (the 1.5 s timeout + a loaded machine)
        while time.monotonic() < deadline:
            p = fetch_committed(c, "tx-open")
            if p.last_stable_offset == 2:
                break
            time.sleep(0.05)
        assert (p.last_stable_offset, [a.first_offset for a in p.aborted_transactions]) == (2, [0])
        assert group_offset(c, "g5", "tx-open") == -1     # the aborted transaction's offsets never apply
        assert end(c, "h5", pid, ep, commit=True) == ErrorCode.PRODUCER_FENCED

