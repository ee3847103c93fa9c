"""The share group DLQ's pure parts (KIP-1191): ARCHIVING in the share-partition (the start waits for the DLQ
write), the manager handing runs to the writer only after their ARCHIVING state is written and resuming them
after a restart, the DLQ record batch encoding, and Kafka 4.4's configuration checks in their order."""
from __future__ import annotations

import uuid

import pytest

from kafkalite.coordinator.share.config import GroupSettings, ShareConfig
from kafkalite.coordinator.share.dlq import DlqConfigError, check_config, chunks, encode_batch, headers
from kafkalite.coordinator.share.manager import ShareStateManager
from kafkalite.coordinator.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ARCHIVED,
    ARCHIVING,
    AVAILABLE,
    CAUSE_LIMIT,
    CAUSE_REJECT,
    GAP,
    REJECT,
    RELEASE,
    Limits,
    LogBatch,
    SharePartition,
)
from kafkalite.coordinator.share.records import ShareKey, decode_key, decode_value
from kafkalite.coordinator.share.state import StateReplay
from kafkalite_storage.batch import batch_records, validate_batch

KEY = ShareKey("g", uuid.UUID(int=9), 0)


def test_reject_and_limit_go_archiving_and_hold_the_start() -> None:
    sp = SharePartition(0, limits=Limits(lock_ms=10, delivery_limit=2), dlq=True)
    sp.acquire("m", [LogBatch(0, 3)], 10, now=0)
    code, changed = sp.acknowledge("m", [(0, 3, [REJECT, RELEASE, GAP, ACCEPT])], now=1)
    assert code == 0 and [(b.first, b.state) for b in changed] == [(0, ARCHIVING), (1, AVAILABLE), (2, ARCHIVED),
                                                                      (3, ACKNOWLEDGED)]
    assert sp.dlq_out == [(0, 0, 1, CAUSE_REJECT)] and sp.start == 0
    sp.dlq_out.clear()
    sp.acquire("m", [LogBatch(0, 3)], 10, now=2)          # offset 1 again (delivery 2): its lock expires
    assert sp.state_of(1) == (1, 2)
    assert [(b.first, b.state) for b in sp.poll(100)] == [(1, ARCHIVING)]
    assert sp.dlq_out == [(1, 1, 2, CAUSE_LIMIT)] and sp.fetch_offset() == 4 and sp.start == 0
    assert [(b.first, b.last, b.count) for b in sp.archiving()] == [(0, 0, 1), (1, 1, 2)]
    assert [(b.first, b.state) for b in sp.complete_archiving(0, 0)] == [(0, ARCHIVED)] and sp.start == 1
    sp.complete_archiving(1, 1)
    assert sp.start == 4 and sp.in_flight() == 0


def test_without_dlq_nothing_changes() -> None:
    sp = SharePartition(0, limits=Limits(delivery_limit=2))
    sp.acquire("m", [LogBatch(0, 1)], 10, now=0)
    assert sp.acknowledge("m", [(0, 1, [REJECT])], now=1)[0] == 0
    assert sp.start == 2 and sp.dlq_out == []


def _manager(written: list[tuple[bytes, bytes | None]], sink: list | None) -> ShareStateManager:
    cfg = ShareConfig(GroupSettings(delivery_limit=2, auto_offset_reset="earliest", dlq_topic="dlq.g"))
    order: list[str] = []

    def append(part: int, records: list[tuple[bytes, bytes | None]]) -> None:
        written.extend(records)
        order.append("write")

    mgr = ShareStateManager(cfg, append)
    mgr.dlq_supported = lambda: True
    if sink is not None:
        def take(key: ShareKey, tasks: list) -> None:
            # the ARCHIVING state is written before the DLQ gets the runs
            k, v = written[-1]
            assert v is not None
            assert any(b.state == ARCHIVING for b in decode_value(decode_key(k)[0], v).batches)
            sink.extend((key, t) for t in tasks)
        mgr.dlq_sink = take
    return mgr


def test_manager_writes_archiving_first_and_a_restart_resumes() -> None:
    written: list[tuple[bytes, bytes | None]] = []
    got: list = []
    mgr = _manager(written, got)
    sp = mgr.partition(KEY, 0, 0, 10)
    mgr.acquire(KEY, "m", [LogBatch(0, 2)], 10, 0)
    assert mgr.acknowledge(KEY, "m", [(0, 2, [ACCEPT, REJECT, ACCEPT])], 1) == 0
    assert got == [(KEY, (1, 1, 1, CAUSE_REJECT))] and sp.start == 1
    # a restart before the DLQ write finished: replayed, the run is handed out again
    replay = StateReplay()
    for k, v in written:
        replay.feed(k, v)
    again: list = []
    mgr2 = _manager(written, again)
    mgr2.load(replay.states)
    sp2 = mgr2.partition(KEY, 5, 0, 10)
    assert sp2.start == 1 and sp2.state_of(1)[0] == ARCHIVING
    assert again == [(KEY, (1, 1, 1, CAUSE_REJECT))]
    assert mgr2.dlq_done(KEY, 1, 1, 6) and sp2.start == 3
    replay = StateReplay()
    for k, v in written:
        replay.feed(k, v)
    assert replay.states[KEY].start == 3


def test_manager_without_a_writer_archives_at_once() -> None:
    written: list[tuple[bytes, bytes | None]] = []
    mgr = _manager(written, None)
    sp = mgr.partition(KEY, 0, 0, 10)
    mgr.acquire(KEY, "m", [LogBatch(0, 1)], 10, 0)
    assert mgr.acknowledge(KEY, "m", [(0, 1, [REJECT])], 1) == 0
    assert sp.start == 2


def test_dlq_batch_encoding() -> None:
    recs = [(b"k", b"v", headers("t", 3, 7, "g", 2, CAUSE_LIMIT)), (None, None, headers("t", 3, 8, "g", 1,
                                                                                           CAUSE_REJECT))]
    batch = encode_batch(recs, 1234)
    hdr = validate_batch(batch)                         # the CRC holds
    assert (hdr.records_count, hdr.base_timestamp, hdr.producer_id) == (2, 1234, -1)
    out = list(batch_records(batch))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in out] == [(0, b"k", b"v", 1234), (1, None, None, 1234)]
    assert dict(out[0].headers) == {"__dlq.errors.topic": b"t", "__dlq.errors.partition": b"3",
                                    "__dlq.errors.offset": b"7", "__dlq.errors.group": b"g",
                                    "__dlq.errors.delivery.count": b"2",
                                    "__dlq.errors.message": b"Offset delivery count exceeded the threshold."}
    big = [(None, b"x" * 400, headers("t", 0, i, "g", 1, CAUSE_REJECT)) for i in range(10)]
    parts = chunks(big, 1000)
    assert sum(map(len, parts)) == 10 and all(len(encode_batch(p, 0)) <= 1000 for p in parts) and len(parts) > 1


@pytest.mark.parametrize(("args", "message"), [
    (("", False, False, False, "dlq."), "Configured DLQ topic name in share group: g is empty."),
    (("__x", True, True, True, ""), "Configured DLQ topic name in share group: g cannot start with __, topic: __x."),
    (("dlq.a", True, False, True, "dlq."), "DLQ is not enabled on configured DLQ topic for share group: g, topic: "
                                           "dlq.a."),
    (("dlq.a", False, False, False, "dlq."), "DLQ topic does not exist and auto create is disabled on cluster for "
                                             "share group: g, topic: dlq.a."),
    (("a", True, True, False, "dlq."), "Configured DLQ topic name does not comply with the DLQ topic prefix in "
                                       "share group: g, topic: a, prefix: dlq.."),   # Kafka's format: "prefix: %s."
])
def test_config_checks_in_kafkas_order(args: tuple, message: str) -> None:
    with pytest.raises(DlqConfigError) as e:
        check_config("g", *args)
    assert str(e.value) == message
    check_config("g", "a", True, True, False, "")       # no prefix: any name
