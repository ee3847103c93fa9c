"""Transactional offsets against plain commits, and what ``__consumer_offsets`` holds after a transaction.

Kafka 3.9 (``GroupMetadata.completePendingTxnOffsetCommit``, ``GroupMetadataManager.doLoadGroupsAndOffsets``):
a TxnOffsetCommit is written at once as a transactional batch of the producer; the transaction's COMMIT
marker is the only thing written when it commits, and it applies the pending offset only if no plain
commit for the partition was written to the log after the transactional one (base offsets compared).
The same rule holds when the coordinator rebuilds its state from the log after a restart.
"""
from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_group_handlers import create_topic
from kafkalite.tests.broker.test_protocol import fetch_req
from kafkalite.tests.broker.test_transaction_handlers import end, group_offset, init, txn_offsets
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.batch import batch_payload, parse_header
from kafkalite_storage.batch import iter_records as records_of
from kafkalite_wire.messages import OffsetCommitRequest

ONE_PARTITION = {"offsets.topic.num.partitions": "1"}


def settled(call: Callable[[], int]) -> int:
    """The call's error code once the coordinators have loaded (COORDINATOR_LOAD_IN_PROGRESS retried)."""
    for _ in range(500):
        code = call()
        if code != 14:
            return code
        time.sleep(0.02)
    return code


def plain_commit(c: RawClient, group: str, topic: str, offset: int) -> int:
    r = c.request(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                            committed_metadata="")])]), 8)
    return int(r.topics[0].partitions[0].error_code)


def offsets_log(c: RawClient) -> list[tuple]:
    """Every batch of ``__consumer_offsets-0``: (attributes, producer id, epoch, base sequence, records)."""
    data = bytes(c.request(fetch_req("__consumer_offsets", 0), 11).responses[0].partitions[0].records or b"")
    out, pos = [], 0
    while pos < len(data):
        hdr = parse_header(memoryview(data), pos)
        end_ = pos + hdr.size
        recs = [(bytes(r.key) if r.key is not None else None, bytes(r.value) if r.value is not None else None)
                for r in records_of(hdr, batch_payload(memoryview(data)[pos:end_], hdr))]
        out.append((hdr.base_offset, hdr.attributes, hdr.producer_id, hdr.producer_epoch, hdr.base_sequence, recs))
        pos = end_
    return out


def _str(b: bytes, pos: int) -> tuple[str, int]:
    n = struct.unpack_from(">h", b, pos)[0]
    return b[pos + 2:pos + 2 + n].decode(), pos + 2 + n


def decode_offset_record(key: bytes, value: bytes) -> tuple:
    """OffsetCommitKey v1 / OffsetCommitValue v3 read field by field from the 3.9 record schemas."""
    assert struct.unpack_from(">h", key)[0] == 1
    group, p = _str(key, 2)
    topic, p = _str(key, p)
    (partition,) = struct.unpack_from(">i", key, p)
    assert struct.unpack_from(">h", value)[0] == 3
    offset, leader_epoch = struct.unpack_from(">qi", value, 2)
    metadata, p = _str(value, 14)
    (commit_ts,) = struct.unpack_from(">q", value, p)
    assert p + 8 == len(value)
    return group, topic, partition, offset, leader_epoch, metadata, commit_ts > 0


def test_a_plain_commit_after_the_txn_offset_survives_the_commit_and_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "ord", 1)
        pid, ep = init(c, "ord-tx")
        assert txn_offsets(c, "ord-tx", "ord-g", pid, ep, "ord", 10) == 0
        assert plain_commit(c, "ord-g", "ord", 20) == 0
        assert end(c, "ord-tx", pid, ep, commit=True) == 0
        assert group_offset(c, "ord-g", "ord") == 20          # kafkalite kept 10 before: the txn won blindly
        batches = offsets_log(c)
        # the log is exactly Kafka's: the transactional batch, the plain commit, the COMMIT marker; no copy
        assert [(a, p, e, s) for _o, a, p, e, s, _r in batches] == [
            (0x10, pid, ep, 0), (0x00, -1, -1, 0), (0x30, pid, ep, -1)]
        assert [decode_offset_record(*r) for r in batches[0][5]] == [("ord-g", "ord", 0, 10, -1, "", True)]
        assert [decode_offset_record(*r) for r in batches[1][5]] == [("ord-g", "ord", 0, 20, -1, "", True)]
        assert batches[2][5] == [(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0))]   # COMMIT, coord epoch 0
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        assert group_offset(c, "ord-g", "ord") == 20          # the loader applies the same rule


def test_a_txn_offset_written_after_a_plain_commit_wins_and_reloads(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "ord2", 1)
        pid, ep = init(c, "ord2-tx")
        assert plain_commit(c, "ord2-g", "ord2", 20) == 0
        assert txn_offsets(c, "ord2-tx", "ord2-g", pid, ep, "ord2", 10) == 0
        assert group_offset(c, "ord2-g", "ord2") == 20
        assert end(c, "ord2-tx", pid, ep, commit=True) == 0
        assert group_offset(c, "ord2-g", "ord2") == 10
        assert [a for _o, a, *_ in offsets_log(c)] == [0x00, 0x10, 0x30]
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        assert group_offset(c, "ord2-g", "ord2") == 10


def test_restart_between_the_txn_offset_and_the_plain_commit(tmp_path: Path) -> None:
    data = tmp_path / "d"
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        create_topic(c, "ord3", 1)
        pid, ep = init(c, "ord3-tx")
        assert txn_offsets(c, "ord3-tx", "ord3-g", pid, ep, "ord3", 10) == 0
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        assert settled(lambda: plain_commit(c, "ord3-g", "ord3", 20)) == 0   # the reloaded pending one is older
        assert settled(lambda: end(c, "ord3-tx", pid, ep, commit=True)) == 0
        assert group_offset(c, "ord3-g", "ord3") == 20
        assert [a for _o, a, *_ in offsets_log(c)] == [0x10, 0x00, 0x30]
    with Broker(data_dir=data, overrides=ONE_PARTITION) as b, RawClient(b.host, b.port) as c:
        assert group_offset(c, "ord3-g", "ord3") == 20
