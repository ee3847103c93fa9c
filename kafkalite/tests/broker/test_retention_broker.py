"""Retention, DeleteRecords and compaction driven by the running broker's housekeeping loops.

- Fetch below the log start offset answers OFFSET_OUT_OF_RANGE carrying no offsets (-1, as Kafka: clients then
  apply auto.offset.reset); ListOffsets EARLIEST answers the new start.
- Lowering retention.ms / retention.bytes on a live topic (IncrementalAlterConfigs) lets the retention loop
  delete the old segments; the start survives a restart (checkpoint) after DeleteRecords.
- An expired active segment goes too (Kafka rolls a new one at the log end offset first): ListOffsets EARLIEST
  = LATEST = the log end offset, Fetch there reports it as LogStartOffset (below it: OFFSET_OUT_OF_RANGE), new
  records continue at that offset, and a restart keeps it.
- cleanup.policy=compact topics and `__consumer_offsets` are compacted by the cleaner loop: the latest record of
  each key remains at its original offset, and committed offsets survive a restart after compaction.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalite.embedded import Broker
from kafkalite.metadata.partitions import partition_for
from kafkalite.tests.broker.test_admin import create, topic
from kafkalite.tests.broker.test_configs_protocol import SET, incremental
from kafkalite.tests.broker.test_protocol import fetch_req, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    DeleteRecordsRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

FAST = {"log.retention.check.interval.ms": "100", "log.initial.task.delay.ms": "0", "log.cleaner.backoff.ms": "100",
        "log.flush.offset.checkpoint.interval.ms": "200"}
HOUR_AGO = int(time.time() * 1000) - 3_600_000  # within the 7-day default, beyond 60 s


def wait_for(cond: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def earliest(c: RawClient, name: str, partition: int = 0) -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=name, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-2)])])
    return c.request(req, 7).topics[0].partitions[0].offset


def fetch(c: RawClient, name: str, offset: int, partition: int = 0) -> Any:
    return c.request(fetch_req(name, offset, partition=partition), 11).responses[0].partitions[0]


def records(c: RawClient, name: str, offset: int, partition: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record from `offset` on (repeated fetches), as (offset, key, value)."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    while True:
        p = fetch(c, name, offset, partition)
        assert p.error_code == 0, p.error_code
        data = bytes(p.records or b"")
        if not data:
            return out
        for pos, h in iter_batches(data):
            for r in batch_records(data[pos : pos + h.size]):
                if r.offset >= offset:
                    out.append((r.offset, r.key, r.value))
            offset = max(offset, h.last_offset + 1)


def produce(c: RawClient, name: str, recs: list[Rec], ts: int | None = None) -> int:
    batch = encode_batch(recs, base_timestamp=ts if ts is not None else int(time.time() * 1000))
    r = c.request(produce_req(name, batch), 9).responses[0].partition_responses[0]
    assert r.error_code == 0, r.error_code
    return int(r.base_offset)


def test_time_and_size_retention_with_live_config_changes(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, overrides=FAST) as b, RawClient(b.host, b.port) as c:
        create(c, topic("tr", 1, configs={"internal.segment.bytes": "1000"}), topic("sr", 1, configs={"internal.segment.bytes": "1000"}))
        for i in range(30):
            produce(c, "tr", [Rec(b"old-%d" % i + b"x" * 200)], ts=HOUR_AGO + i)
            produce(c, "sr", [Rec(b"new-%d" % i + b"x" * 200)])
        time.sleep(0.5)  # several retention passes: the defaults (7 days, unlimited) delete nothing
        assert earliest(c, "tr") == 0 and earliest(c, "sr") == 0
        assert incremental(c, "tr", ("retention.ms", SET, "60000"))[0] == 0
        assert incremental(c, "sr", ("retention.bytes", SET, "2000"))[0] == 0
        start = wait_for(lambda: earliest(c, "tr") or None, "time retention")
        active = max(int(n.name[:20]) for n in (tmp_path / "tr-0").iterdir() if n.name.endswith(".log"))
        assert start == active == 30  # every segment is gone, the expired active one too (rolled first)
        s_start = wait_for(lambda: earliest(c, "sr") or None, "size retention")
        kept = records(c, "sr", s_start)
        assert [o for o, _k, _v in kept] == list(range(s_start, 30))
        assert 2000 // 260 <= len(kept) <= 2000 // 200 + 1000 // 200 + 1
        below = fetch(c, "sr", s_start - 1)
        assert (below.error_code, below.high_watermark, below.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1)
        ok = fetch(c, "sr", s_start)
        assert ok.error_code == 0 and ok.log_start_offset == s_start
        assert records(c, "tr", start) == []


def latest(c: RawClient, name: str, partition: int = 0) -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=name, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, timestamp=-1)])])
    return c.request(req, 7).topics[0].partitions[0].offset


def test_expired_active_segment_is_rolled_and_deleted(tmp_path: Path) -> None:
    stamped_2023 = 1_690_000_000_000
    with Broker(data_dir=tmp_path, overrides=FAST) as b, RawClient(b.host, b.port) as c:
        # default segment.bytes: every record is in the active segment; retention.ms off while producing
        create(c, topic("aged", 1, configs={"retention.ms": "-1", "file.delete.delay.ms": "0"}))
        for i in range(3):
            produce(c, "aged", [Rec(b"old-%d" % i)], ts=stamped_2023 + i)
        assert (earliest(c, "aged"), latest(c, "aged")) == (0, 3)
        assert incremental(c, "aged", ("retention.ms", SET, str(86_400_000)))[0] == 0
        wait_for(lambda: earliest(c, "aged") == 3, "retention of the expired active segment")
        assert latest(c, "aged") == 3
        part = tmp_path / "aged-0"
        wait_for(lambda: sorted(n.name for n in part.iterdir() if ".log" in n.name) == [f"{3:020d}.log"],
                 "the old segment to leave the disk")
        assert {f"{3:020d}.index", f"{3:020d}.timeindex"} <= {n.name for n in part.iterdir()}
        below = fetch(c, "aged", 0)
        assert (below.error_code, below.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)   # as Kafka
        at = fetch(c, "aged", 3)
        assert (at.error_code, at.log_start_offset, at.high_watermark, bytes(at.records or b"")) == (0, 3, 3, b"")
        assert produce(c, "aged", [Rec(b"new-3")]) == 3   # appends continue at the same offset
        assert records(c, "aged", 3) == [(3, None, b"new-3")]
        assert (earliest(c, "aged"), latest(c, "aged")) == (3, 4)
    with Broker(data_dir=tmp_path, overrides=FAST) as b, RawClient(b.host, b.port) as c:
        assert (earliest(c, "aged"), latest(c, "aged")) == (3, 4)
        assert fetch(c, "aged", 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch(c, "aged", 3).log_start_offset == 3
        assert records(c, "aged", 3) == [(3, None, b"new-3")]


def test_delete_records_survives_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, overrides=FAST) as b, RawClient(b.host, b.port) as c:
        create(c, topic("dr", 1, configs={"internal.segment.bytes": "1000"}))
        for i in range(20):
            produce(c, "dr", [Rec(b"v%d" % i + b"y" * 150)])
        R = DeleteRecordsRequest
        req = R(topics=[R.DeleteRecordsTopic(name="dr", partitions=[
            R.DeleteRecordsPartition(partition_index=0, offset=13)])], timeout_ms=5000)
        p = c.request(req, 2).topics[0].partitions[0]
        assert (p.error_code, p.low_watermark) == (0, 13)
        assert fetch(c, "dr", 12).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    with Broker(data_dir=tmp_path, overrides=FAST) as b, RawClient(b.host, b.port) as c:
        assert earliest(c, "dr") == 13
        assert fetch(c, "dr", 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert [o for o, _k, _v in records(c, "dr", 13)] == list(range(13, 20))
        part = tmp_path / "dr-0"
        assert min(int(n[:20]) for n in (x.name for x in part.iterdir()) if n.endswith(".log")) <= 13


def test_delete_records_needs_the_delete_policy(tmp_path: Path) -> None:
    """Kafka refuses DeleteRecords on compact-only topics with POLICY_VIOLATION; compact,delete accepts it."""
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        create(c, topic("only-compact", 1, configs={"cleanup.policy": "compact"}),
               topic("both", 1, configs={"cleanup.policy": "compact,delete"}))
        R = DeleteRecordsRequest
        for name in ("only-compact", "both"):
            produce(c, name, [Rec(b"v%d" % i, key=b"k%d" % i) for i in range(5)])
        req = R(topics=[R.DeleteRecordsTopic(name=n, partitions=[R.DeleteRecordsPartition(partition_index=0,
                                                                                           offset=3)])
                        for n in ("only-compact", "both")], timeout_ms=5000)
        got = {t.name: (t.partitions[0].error_code, t.partitions[0].low_watermark) for t in c.request(req, 2).topics}
        assert got == {"only-compact": (ErrorCode.POLICY_VIOLATION, -1), "both": (0, 3)}
        assert earliest(c, "only-compact") == 0 and earliest(c, "both") == 3


def test_compacted_topic_is_cleaned_by_the_broker(tmp_path: Path) -> None:
    cfg = {"cleanup.policy": "compact", "internal.segment.bytes": "1000", "min.cleanable.dirty.ratio": "0.01",
           "delete.retention.ms": "0", "file.delete.delay.ms": "0"}
    with Broker(data_dir=tmp_path, overrides=FAST) as b, RawClient(b.host, b.port) as c:
        create(c, topic("cmp", 1, configs=cfg))
        latest: dict[bytes, tuple[int, bytes | None]] = {}
        for i in range(200):
            k, v = b"k%d" % (i % 10), b"v%d" % i
            latest[k] = (produce(c, "cmp", [Rec(v, key=k)]), v)
        off = produce(c, "cmp", [Rec(None, key=b"k0")])  # a tombstone
        latest[b"k0"] = (off, None)
        for i in range(12):  # unique keys: roll the segments holding the updates out of the active one
            produce(c, "cmp", [Rec(b"f" * 300, key=b"filler-%d" % i)])
        want = sorted((o, k, v) for k, (o, v) in latest.items() if v is not None)
        more = iter(range(12, 10**6))

        def cleaned() -> bool:
            # the first cleaning keeps the tombstone and writes its delete horizon (KIP-534: now + 0 ms); a
            # later cleaning removes it, and more data makes the log dirty for one
            produce(c, "cmp", [Rec(b"f" * 300, key=b"filler-%d" % next(more))])
            got = [x for x in records(c, "cmp", earliest(c, "cmp")) if not x[1].startswith(b"filler")]
            return got == want

        wait_for(cleaned, "the cleaner to keep only the latest value of each key (tombstone gone)")


def test_consumer_offsets_are_compacted(tmp_path: Path) -> None:
    overrides = dict(FAST, **{"offsets.topic.segment.bytes": "1500"})
    group = "compacted-group"
    part = partition_for(group, 50)
    OC, F = OffsetCommitRequest, OffsetFetchRequest

    def commit(c: RawClient, offset: int) -> None:
        req = OC(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[OC.OffsetCommitRequestTopic(
            name="t", partitions=[OC.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset + p)
                                  for p in range(3)])])
        r = c.request(req, 2)
        assert all(x.error_code == 0 for t in r.topics for x in t.partitions)

    def fetched(c: RawClient) -> dict[int, int]:
        def once() -> Any:  # None while the coordinator is still loading the partition after a start
            r = c.request(F(group_id=group, topics=[F.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1, 2])]),
                          3)
            return None if r.error_code else r

        r = wait_for(once, "OffsetFetch to answer")
        return {p.partition_index: p.committed_offset for p in r.topics[0].partitions}

    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as c:
        create(c, topic("t", 3))
        for i in range(150):
            commit(c, i)
        total = 150 * 3

        def compacted() -> bool:
            n = len(records(c, "__consumer_offsets", earliest(c, "__consumer_offsets", part), part))
            return n < total // 4

        wait_for(compacted, "__consumer_offsets to be compacted")
        assert fetched(c) == {0: 149, 1: 150, 2: 151}
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as c:
        assert fetched(c) == {0: 149, 1: 150, 2: 151}  # reloaded from the compacted log
