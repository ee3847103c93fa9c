"""transaction.version 2 (KIP-890 part 2) on the wire, against the embedded broker with the codec client: EndTxn
v5 answers the bumped epoch, Produce v12 adds its partition to the transaction, TxnOffsetCommit v5 adds the
group's offsets partition, markers carry the bumped epoch (a late write at the old one is fenced), the classic
(TV1) flow is unchanged, AddPartitionsToTxn v5 verifies, and the state survives a restart."""
from __future__ import annotations

import time
from pathlib import Path

from kafkalite.coordinator.classic.records import iter_records
from kafkalite.coordinator.txn.records import decode_txn_key, decode_txn_value
from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.broker.test_transaction_handlers import (
    Connect,
    add,
    end,
    fetch_committed,
    group_offset,
    init,
)
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AddPartitionsToTxnRequest,
    ApiVersionsRequest,
    EndTxnRequest,
    TxnOffsetCommitRequest,
)

APT = AddPartitionsToTxnRequest


def end5(c: RawClient, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    r = c.request(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit), 5)
    return int(r.error_code), r.producer_id, r.producer_epoch


def produce(c: RawClient, tid: str, topic: str, pid: int, epoch: int, seq: int, values: list[bytes],
            version: int = 12, partition: int = 0) -> tuple[int, int]:
    batch = encode_batch(values, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True,
                         base_timestamp=int(time.time() * 1000))
    req = produce_req(topic, batch, partition=partition)
    req.transactional_id = tid
    p = c.request(req, version).responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


def offsets5(c: RawClient, tid: str, group: str, pid: int, epoch: int, topic: str, offset: int) -> int:
    r = c.request(TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                                       committed_metadata="")])]), 5)
    return int(r.topics[0].partitions[0].error_code)


def test_transaction_version_2_is_finalized_and_its_versions_advertised(raw: Connect) -> None:
    r = raw().request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    assert {f.name: f.max_version_level for f in r.finalized_features}["transaction.version"] == 2
    keys = {k.api_key: k.max_version for k in r.api_keys}
    assert (keys[24], keys[26], keys[28], keys[0]) == (5, 5, 6, 13)


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(raw: Connect) -> None:
    c = raw()
    create_topic(c, "tv2-data", 1)
    pid, ep = init(c, "v2a")
    # no AddPartitionsToTxn: the produce adds the partition
    assert produce(c, "v2a", "tv2-data", pid, ep, 0, [b"a1", b"a2"]) == (0, 0)
    assert fetch_committed(c, "tv2-data").last_stable_offset == 0          # an open transaction
    assert end5(c, "v2a", pid, ep, commit=False) == (0, pid, ep + 1)       # ABORT marker (epoch ep+1) at 2
    # a retry of that EndTxn (the epoch one below) gets the same answer; the opposite result does not
    assert end5(c, "v2a", pid, ep, commit=False) == (0, pid, ep + 1)
    assert end5(c, "v2a", pid, ep, commit=True) == (ErrorCode.INVALID_TXN_STATE, -1, -1)
    # a late write at the old epoch is fenced
    assert produce(c, "v2a", "tv2-data", pid, ep, 2, [b"late"])[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    # the next transaction: the new epoch, sequences from 0
    assert produce(c, "v2a", "tv2-data", pid, ep + 1, 0, [b"c1"]) == (0, 3)
    assert end5(c, "v2a", pid, ep + 1, commit=True) == (0, pid, ep + 2)     # COMMIT marker at 4
    p = fetch_committed(c, "tv2-data")
    assert (p.high_watermark, p.last_stable_offset) == (5, 5)
    assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions] == [(pid, 0)]
    # an epoch that is neither current nor a retry
    assert end5(c, "v2a", pid, ep, commit=True) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    # an abort with nothing in the transaction bumps the epoch and writes nothing
    assert end5(c, "v2a", pid, ep + 2, commit=False) == (0, pid, ep + 3)
    assert fetch_committed(c, "tv2-data").high_watermark == 5


def test_txn_offset_commit_v5_adds_the_offsets_partition(raw: Connect) -> None:
    c = raw()
    create_topic(c, "tv2-src", 1)
    create_topic(c, "tv2-out", 1)
    pid, ep = init(c, "v2b")
    assert produce(c, "v2b", "tv2-out", pid, ep, 0, [b"x"])[0] == 0
    assert offsets5(c, "v2b", "g-v2b", pid, ep, "tv2-src", 3) == 0          # no AddOffsetsToTxn
    assert group_offset(c, "g-v2b", "tv2-src") == -1                       # pending until the commit
    assert end5(c, "v2b", pid, ep, commit=True) == (0, pid, ep + 1)
    assert group_offset(c, "g-v2b", "tv2-src") == 3
    # an aborted transaction's offsets are dropped
    assert offsets5(c, "v2b", "g-v2b", pid, ep + 1, "tv2-src", 9) == 0
    assert end5(c, "v2b", pid, ep + 1, commit=False)[0] == 0
    assert group_offset(c, "g-v2b", "tv2-src") == 3
    # the old epoch is fenced: INVALID_PRODUCER_EPOCH on this API
    assert offsets5(c, "v2b", "g-v2b", pid, ep, "tv2-src", 5) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_the_classic_flow_is_unchanged(raw: Connect) -> None:
    """A TV1 client: AddPartitionsToTxn, Produce before v12, EndTxn before v5 keeps the epoch."""
    c = raw()
    create_topic(c, "tv1-data", 1)
    pid, ep = init(c, "v1a")
    # not added: TRANSACTION_ABORTABLE from v11 (KIP-890 part 1), INVALID_TXN_STATE before (as Kafka 4.4)
    assert produce(c, "v1a", "tv1-data", pid, ep, 0, [b"x"], version=11)[0] == ErrorCode.TRANSACTION_ABORTABLE
    assert produce(c, "v1a", "tv1-data", pid, ep, 0, [b"x"], version=10)[0] == ErrorCode.INVALID_TXN_STATE
    assert add(c, "v1a", pid, ep, {"tv1-data": [0]}) == {("tv1-data", 0): 0}
    assert produce(c, "v1a", "tv1-data", pid, ep, 0, [b"x"], version=11) == (0, 0)
    assert end(c, "v1a", pid, ep, commit=True, version=4) == 0
    assert end(c, "v1a", pid, ep, commit=True, version=4) == 0              # the classic retry
    assert add(c, "v1a", pid, ep, {"tv1-data": [0]}) == {("tv1-data", 0): 0}  # the same epoch goes on
    assert produce(c, "v1a", "tv1-data", pid, ep, 1, [b"y"], version=11) == (0, 2)
    assert end(c, "v1a", pid, ep, commit=True, version=4) == 0
    assert fetch_committed(c, "tv1-data").last_stable_offset == 4


def test_add_partitions_to_txn_v5_verify_only_and_add(raw: Connect) -> None:
    c = raw()
    create_topic(c, "tv2-ver", 2)
    pid, ep = init(c, "v2c")

    def call(verify: bool, epoch: int = ep) -> dict[tuple[str, int], int]:
        r = c.request(APT(transactions=[APT.AddPartitionsToTxnTransaction(
            transactional_id="v2c", producer_id=pid, producer_epoch=epoch, verify_only=verify,
            topics=[APT.AddPartitionsToTxnTopic(name="tv2-ver", partitions=[0])])]), 5)
        assert r.error_code == 0 and [t.transactional_id for t in r.results_by_transaction] == ["v2c"]
        return {(t.name, p.partition_index): p.partition_error_code
                for t in r.results_by_transaction[0].topic_results for p in t.results_by_partition}

    assert call(True) == {("tv2-ver", 0): ErrorCode.TRANSACTION_ABORTABLE}
    assert call(False) == {("tv2-ver", 0): 0}
    assert call(True) == {("tv2-ver", 0): 0}
    assert call(True, ep + 1) == {("tv2-ver", 0): ErrorCode.PRODUCER_FENCED}
    assert end5(c, "v2c", pid, ep, commit=False) == (0, pid, ep + 1)


def test_tv2_state_survives_a_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "tv2-rs", 1)
        pid, ep = init(c, "v2r")
        assert produce(c, "v2r", "tv2-rs", pid, ep, 0, [b"a"]) == (0, 0)
        assert end5(c, "v2r", pid, ep, commit=True) == (0, pid, ep + 1)
    # __transaction_state holds TransactionLogValue version 1 with the client transaction version
    values = [(bytes(v[:2]), decode_txn_value(v)) for log in tmp_path.glob("__transaction_state-*/*.log")
              for _o, k, v in iter_records(log.read_bytes()) if v is not None and decode_txn_key(k) == "v2r"]
    assert values and {ver for ver, _ in values} == {b"\x00\x01"}
    assert (values[-1][1].status, values[-1][1].client_transaction_version) == (4, 2)   # CompleteCommit, TV2
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        for _ in range(500):   # __transaction_state loads
            got = end5(c, "v2r", pid, ep, commit=True)
            if got[0] != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                break
            time.sleep(0.02)
        assert got == (0, pid, ep + 1)                       # still recognised as a retry: TV2 was kept
        assert produce(c, "v2r", "tv2-rs", pid, ep + 1, 0, [b"b"]) == (0, 2)
        assert end5(c, "v2r", pid, ep + 1, commit=True) == (0, pid, ep + 2)
        assert fetch_committed(c, "tv2-rs").last_stable_offset == 4


def test_tv2_on_a_cluster_adds_partitions_led_by_other_brokers() -> None:
    """Three brokers: Produce v12 to each partition's leader adds it at the transaction coordinator (another
    broker for two of them); EndTxn v5 at the coordinator writes the bumped-epoch markers to every leader."""
    from kafkalite.cluster import Cluster
    from kafkalite_wire.messages import FindCoordinatorRequest

    with Cluster(brokers=3, overrides={"transaction.state.log.num.partitions": "3",
                                       "offsets.topic.num.partitions": "3"}) as cluster:
        addrs = cluster.addresses()
        with RawClient(*addrs[1]) as c:
            create_topic(c, "tv2-cl", 3)
            for _ in range(500):
                r = c.request(FindCoordinatorRequest(key="v2cl", key_type=1), 3)
                if r.error_code == 0:
                    break
                time.sleep(0.02)
            assert r.error_code == 0, r
        coord = RawClient(*addrs[r.node_id])
        try:
            pid, ep = init(coord, "v2cl")
            for p in range(3):
                with RawClient(*addrs[_leader(cluster, "tv2-cl", p)]) as lc:
                    assert produce(lc, "v2cl", "tv2-cl", pid, ep, 0, [b"v"], partition=p) == (0, 0)
            assert end5(coord, "v2cl", pid, ep, commit=True) == (0, pid, ep + 1)
            for p in range(3):
                with RawClient(*addrs[_leader(cluster, "tv2-cl", p)]) as lc:
                    f = fetch_committed_p(lc, "tv2-cl", p)
                    assert (f.error_code, f.high_watermark, f.last_stable_offset) == (0, 2, 2)
        finally:
            coord.close()


def _leader(cluster, topic: str, partition: int) -> int:  # type: ignore[no-untyped-def]
    d = {(p["topic"], p["partition"]): p for p in cluster.sync.describe()["partitions"]}
    return int(d[(topic, partition)]["leader"])


def fetch_committed_p(c: RawClient, topic: str, partition: int):  # type: ignore[no-untyped-def]
    from kafkalite.tests.broker.test_protocol import fetch_req

    req = fetch_req(topic, 0, partition=partition)
    req.isolation_level = 1
    for _ in range(500):   # acks=-1: the high watermark follows the replicas
        got = c.request(req, 11).responses[0].partitions[0]
        if got.high_watermark == 2 and got.last_stable_offset == 2:
            return got
        time.sleep(0.02)
    return got
