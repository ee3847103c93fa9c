"""The broker killed (SIGKILL) or stopped (SIGTERM) mid-stream and restarted on the same data dir and port:
a producer and an assigned consumer of the same client are both running across the restart.

What is asserted is what Apache Kafka guarantees, the same for both brokers:
- the log (read again from scratch, each partition to its end) holds every acknowledged record exactly once, in
  the order sent: acks=all on one broker means the record was in the broker's log file before the answer (a killed
  process leaves the page cache), and the idempotent producer's retries are recognised after the restart because
  the broker rebuilds its producer state from the log (on a failure the duplicated records' batches are listed,
  with producer id, epoch and sequence, to tell a broker fault from a client that sent records again as new);
- the consumer that kept going delivered at least once, in order, never skipping an offset: a group member with
  no committed offset (kafkajs's consumer) starts again from the beginning when it rejoins after the restart, which
  Kafka allows; assign()-ed consumers keep their position and deliver each record once on both brokers.

Against Kafka 4.4 every client passes this (2026-11-28, 10 of 10 once Sarama's driver retries its leader look-up
over the whole timeout: Kafka's ~10 s restart outlasted Sarama's default 3 metadata retries, and it failed the
records); kafkajs's consumer re-delivered all 2000 records of a partition from the beginning (its group rejoin).

The records carry timestamps of the last few hours, not the fixed 2023 ``TS_BASE`` of the other tests: a broker
keeps an idempotent producer's state only while its last batch's timestamp is within producer.id.expiration.ms
(1 day) of now (Kafka's ProducerStateManager.loadFromSnapshot skips expired producers after a restart), so the
retry of a batch written just before a SIGKILL was appended again with 2023 timestamps: the duplicates the
earlier reference runs saw for every client."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from harness.batches import describe_duplicates, read_batches
from harness.clients import clients_with, make_client
from harness.records import Rec, assert_same_records, by_partition, make_records
from harness.topics import create_topic

PARTS = 2
# Enough records that the slower clients are still producing when the broker dies.
N = {"confluent-kafka": 20_000, "kcat": 20_000, "java": 10_000}
N_DEFAULT = 4_000


def _log_bytes(broker, topic: str) -> int:
    total = 0
    for p in range(PARTS):
        for f in (broker.data_dir / f"{topic}-{p}").glob("*.log"):
            total += f.stat().st_size
    return total


class _Runner(threading.Thread):
    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:
            self.error = e


@pytest.mark.parametrize(("client_name", "sig"), [
    *((c, signal.SIGKILL) for c in clients_with("produce", "consume", "idempotent")),
    ("confluent-kafka", signal.SIGTERM),
], ids=lambda v: v.name if isinstance(v, signal.Signals) else v)
def test_restart_mid_stream(broker_factory, client, client_name, sig, topic, compat_log_dir, get_client):
    broker = broker_factory()
    bs = broker.bootstrap
    create_topic(bs, topic, PARTS)
    n = N.get(client_name, N_DEFAULT)
    sent = make_records(n, partitions=PARTS, prefix=f"rs-{client_name}",
                        headers="headers" in client.features, per_record_headers=False,
                        timestamps="timestamps" in client.features, nulls=False,
                        ts_base=int(time.time() * 1000) - n * 1000)
    if client_name == "kafkajs":
        # kafkajs's consumer is a group member: have the group coordinator up before it joins (Kafka creates
        # __consumer_offsets on the first FindCoordinator), so the kill does not come during its first join,
        # which kafkajs 2.2.4 gives up at the first lost connection (KafkaJSGroupCoordinatorNotFound)
        from test_groups_support import committed

        committed(bs, f"warm-{topic}", topic, PARTS)
    # A JSON-lines driver (Java, kafkajs, Go, Rust) serves one command at a time: the consumer gets its own process.
    consumer = make_client(client_name, compat_log_dir) if hasattr(client, "_call") else client
    try:
        cons = _Runner(lambda: consumer.consume(bs, topic, list(range(PARTS)), n, timeout_s=90))
        prod = _Runner(lambda: client.produce(bs, topic, sent, idempotent=True, timeout_s=90))
        cons.start()
        time.sleep(0.5)
        prod.start()
        deadline = time.monotonic() + 60
        while _log_bytes(broker, topic) == 0 and prod.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        mid_stream = prod.is_alive()
        broker.restart(sig)
        if sig == signal.SIGTERM:  # graceful drain: exit status 0 and the clean-shutdown marker
            assert broker.last_exit == 0, f"broker exited {broker.last_exit} on SIGTERM"
        t_restarted = time.monotonic()
        prod.join(120)
        t_prod = time.monotonic() - t_restarted
        cons.join(120)
        t_cons = time.monotonic() - t_restarted
        print(f"restart: mid_stream={mid_stream} producer done +{t_prod:.1f}s consumer done +{t_cons:.1f}s")
    finally:
        if consumer is not client:
            consumer.close()
    assert not prod.is_alive() and not cons.is_alive(), "client still running after 120 s"
    if prod.error:
        raise AssertionError(f"producer failed across the restart (mid_stream={mid_stream})") from prod.error
    if cons.error:
        raise AssertionError(f"consumer failed across the restart (mid_stream={mid_stream})") from cons.error
    # The log, read again from scratch after the restart, partition by partition to its end (kafka-python, no
    # group): every acknowledged record once, in the order sent.
    log = read_log(get_client("kafka-python"), bs, topic, PARTS)
    for p in range(PARTS):   # which producer ids and epochs wrote the partition (a new one: the client started over)
        sessions = dict.fromkeys((b.producer_id, b.producer_epoch) for b in read_batches(broker.data_dir / f"{topic}-{p}"))
        print(f"partition {p}: {len(log.get(p, []))} records, written by (producer id, epoch) {list(sessions)}")
    assert_log_exactly_once(sent, log, broker.data_dir / f"{topic}", what=f"{client_name} log after restart")
    # The consumer that kept going: at least once and in order (see assert_at_least_once_in_order)
    replays = assert_at_least_once_in_order(cons.result, log, n, what=f"{client_name} consumer across restart")
    print(f"consumer across restart: {replays} record(s) delivered again")


def read_log(reader, bs: str, topic: str, parts: int) -> dict[int, list[Rec]]:
    """Every record of each partition up to its end offset, by a fresh assign()-ed reader (a log with more records
    than were sent is read whole, not cut at the count sent)."""
    from kafka import KafkaConsumer, TopicPartition

    probe = KafkaConsumer(bootstrap_servers=bs, group_id=None)
    try:
        ends = probe.end_offsets([TopicPartition(topic, p) for p in range(parts)])
    finally:
        probe.close()
    out: dict[int, list[Rec]] = {}
    for tp, end in ends.items():
        out[tp.partition] = reader.consume(bs, topic, [tp.partition], end, timeout_s=60) if end else []
    return out


def assert_log_exactly_once(sent: list[Rec], log: dict[int, list[Rec]], topic_dir, *, what: str) -> None:
    """Per partition: the log holds exactly the records sent, each once, in order, at consecutive offsets.

    What Kafka guarantees an acks=all idempotent producer of one broker that is SIGKILLed: nothing acknowledged
    is lost (the broker appended it to its log file before answering; a killed process leaves the page cache, and
    the restart recovers the log to its last whole batch) and no retry is appended twice (the producer state -
    the last five batches' sequence numbers per producer id and epoch - is rebuilt from the log on restart, and a
    retry of a batch already written is answered as a duplicate with its first offset). On a failure the
    duplicated records' batches are shown: copies under the same producer id, epoch and sequence are a broker
    fault; copies under a new epoch or sequence were sent again by the client as new records."""
    want = by_partition(sent)
    for p, wrecs in want.items():
        got = log.get(p, [])
        seen: dict[tuple[object, ...], list[int]] = {}
        for r in got:
            seen.setdefault((r.key, r.value), []).append(r.offset if r.offset is not None else -1)
        dups = [offs for offs in seen.values() if len(offs) > 1]
        detail = ""
        if dups:
            detail = (f"\n{len(dups)} record(s) written more than once, e.g.:\n"
                      + describe_duplicates(Path(f"{topic_dir}-{p}"), dups))
        assert len(got) == len(wrecs), f"{what}: partition {p}: sent {len(wrecs)}, the log has {len(got)}{detail}"
    assert_same_records(sent, [r for p in sorted(log) for r in log[p]], what=what)


def assert_at_least_once_in_order(got: list[Rec], log: dict[int, list[Rec]], n: int, *, what: str) -> int:
    """The consumer that ran across the restart: it stopped after ``n`` deliveries; per partition each delivery is
    the log's record at that offset, and it moved on one offset at a time, never skipping one; it may have gone
    back to an earlier offset and read a stretch again. That is Kafka's promise to a consumer (at least once): a
    position that a member takes again from its group's committed offset (none here: from the beginning), or that
    a consumer resets or validates after the leader's restart (OFFSET_OUT_OF_RANGE, KIP-320), can be behind
    what it had already delivered; exactly once needs committed offsets read back in a transaction.
    Returns how many deliveries were repeats."""
    assert len(got) == n, f"{what}: {len(got)} records delivered, {n} expected (stopped early?)"
    replays = 0
    for p, recs in sorted(by_partition(got).items()):
        plog = log.get(p, [])
        expected_next, highest = 0, -1
        for r in recs:
            assert r.offset is not None and 0 <= r.offset < len(plog), (
                f"{what}: partition {p}: offset {r.offset} is not in the log (0..{len(plog) - 1})")
            assert r.offset <= expected_next, (
                f"{what}: partition {p}: skipped from offset {expected_next} to {r.offset}")
            replays += r.offset <= highest
            highest = max(highest, r.offset)
            expected_next = r.offset + 1
            w = plog[r.offset]
            assert (r.key, r.value, r.headers, r.timestamp) == (w.key, w.value, w.headers, w.timestamp), (
                f"{what}: partition {p}: offset {r.offset} delivered as {r}, the log has {w}")
    return replays
