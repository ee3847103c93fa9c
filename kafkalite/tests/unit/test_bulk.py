"""kafkalite.runtime.gcpolicy: no full garbage collection while a request of many entries is in flight; thresholds restored
after the last one, also when requests overlap or fail."""
from __future__ import annotations

import gc
from typing import Any

import pytest

from kafkalite.runtime import gcpolicy as bulk


def _full_collections_while(fn: Any) -> int:
    seen: list[int] = []

    def cb(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(cb)
    try:
        fn()
    finally:
        gc.callbacks.remove(cb)
    return len(seen)


def _allocate() -> list[Any]:
    # two million tracked objects that survive: each quarter of growth of the oldest generation would trigger a
    # full collection
    return [[i] for i in range(2_000_000)]


def test_no_full_collection_while_paused() -> None:
    gc.collect()
    before = gc.get_threshold()
    with bulk.paused():
        assert _full_collections_while(_allocate) == 0
    assert gc.get_threshold() == before
    gc.collect()
    assert _full_collections_while(_allocate) > 0    # the same allocation does trigger them otherwise


def test_overlapping_pauses_restore_once_and_on_error() -> None:
    before = gc.get_threshold()
    bulk.pause()
    with pytest.raises(RuntimeError), bulk.paused():
        assert bulk.active() == 2
        raise RuntimeError("handler failed")
    assert bulk.active() == 1 and gc.get_threshold()[2] == bulk.PAUSED_THRESHOLD
    bulk.resume()
    assert bulk.active() == 0 and gc.get_threshold() == before


def test_the_gil_changes_hands_often_while_paused() -> None:
    """A worker thread decoding a million entries holds the GIL for CPython's 5 ms switch interval at a time,
    and the event loop waits that long for it after every syscall (a convoy: the probe's round trip went from
    0.4 to 5.6 ms, a DescribeConfigs of a million resources stalled the loop 111-128 ms): while a bulk request
    is in flight the interval is bulk.SWITCH_INTERVAL, and the process's own interval comes back after."""
    import sys

    before = sys.getswitchinterval()
    assert before > bulk.SWITCH_INTERVAL
    with bulk.paused():
        assert sys.getswitchinterval() == pytest.approx(bulk.SWITCH_INTERVAL)
        with bulk.paused():
            assert sys.getswitchinterval() == pytest.approx(bulk.SWITCH_INTERVAL)
        assert sys.getswitchinterval() == pytest.approx(bulk.SWITCH_INTERVAL)
    assert sys.getswitchinterval() == before


def _produce_frame(version: int, topics: int, partitions: int, txn: str | None) -> memoryview:
    from kafkalite_storage.testing import encode_batch
    from kafkalite_wire import api
    from kafkalite_wire.headers import RequestHeader
    from kafkalite_wire.messages import ProduceRequest as P

    batch = encode_batch([b"x" * 100])
    body = P(transactional_id=txn, acks=1, timeout_ms=1, topic_data=[P.TopicProduceData(name=f"t{t}", partition_data=[
        P.PartitionProduceData(index=i, records=batch if i % 2 else None) for i in range(partitions)])
        for t in range(topics)])
    return memoryview(api.encode_request(RequestHeader(0, version, 1, "cid"), body))[4:]


@pytest.mark.parametrize("version", [3, 8, 9, 11])
@pytest.mark.parametrize(("topics", "partitions"), [(1, 1), (3, 5), (2, 600), (1, 5000), (2000, 0)])
def test_produce_entries_counts_topics_and_partitions_up_to_the_limit(version: int, topics: int,
                                                                      partitions: int) -> None:
    for txn in (None, "tx"):
        frame = _produce_frame(version, topics, partitions, txn)
        assert bulk.produce_entries(frame) == min(topics * (1 + partitions), bulk.PRODUCE_ENTRIES)


def test_produce_entries_of_a_frame_that_does_not_parse_is_the_limit() -> None:
    assert bulk.produce_entries(memoryview(b"\0\0\0\x09")) == bulk.PRODUCE_ENTRIES
    assert bulk.produce_entries(memoryview(b"\0\0\0\x09" + b"\0\0\0\0" + b"\xff\xff" + b"\xff" * 8)) \
        == bulk.PRODUCE_ENTRIES


def test_dismantle_empties_every_long_list_of_the_trees() -> None:
    from kafkalite_wire.messages import ProduceRequest as P

    parts = [P.PartitionProduceData(index=i, records=None) for i in range(10_000)]
    short = [P.PartitionProduceData(index=0, records=None)]
    topics = [P.TopicProduceData(name="a", partition_data=parts), P.TopicProduceData(name="b", partition_data=short)]
    many_topics = [P.TopicProduceData(name=f"t{i}", partition_data=[]) for i in range(5_000)]
    objs: list[Any] = [P(acks=1, timeout_ms=1, topic_data=topics), P(acks=1, timeout_ms=1, topic_data=many_topics)]
    bulk.dismantle(objs)
    assert objs == [] and parts == [] and many_topics == []
    assert len(topics) == 2 and len(short) == 1   # short lists are freed whole, with their owner


@pytest.mark.e2e
def test_a_broker_that_owns_its_process_switches_the_gil_often() -> None:
    """``kafkalite serve`` (state.allow_gc_freeze) sets a 1 ms GIL switch interval for its process: logs loading
    in worker threads after a restart made the loop wait 5 ms for the GIL after each syscall (stalls of
    100-290 ms at 20,000 partitions). An embedded broker leaves its host's interval alone."""
    import subprocess
    import sys

    from kafkalite.embedded import Broker

    out = subprocess.run([sys.executable, "-c", "import sys; from kafkalite.runtime.gcpolicy import allow_gc_freeze; "
                          "allow_gc_freeze(); print(sys.getswitchinterval())"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert float(out) == pytest.approx(0.001)
    before = sys.getswitchinterval()
    with Broker():
        assert sys.getswitchinterval() == before
