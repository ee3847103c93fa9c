"""The broker killed (SIGKILL) or stopped (SIGTERM) mid-stream and restarted on the same data dir and port:
a producer and an assigned consumer of the same client are both running across the restart. Everything the
producer got acknowledged is there afterwards, exactly once (idempotent producer) and in order, and the
consumer that kept going across the restart saw every record once, in order.

The records carry timestamps of the last few hours, not the fixed 2023 ``TS_BASE`` of the other tests: a broker
keeps an idempotent producer's state only while its last batch's timestamp is within producer.id.expiration.ms
(1 day) of now. Apache Kafka drops older entries when it reloads its producer snapshots after a restart
(ProducerStateManager.loadFromSnapshot skips expired producers; ProducerAppendInfo takes the batch's max
timestamp, i.e. the client's CreateTime), so the retry of a batch written just before a SIGKILL was appended again
with 2023 timestamps: duplicates on Kafka 4.4 for every client, not a client or broker fault."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from harness.clients import clients_with, make_client
from harness.records import assert_same_records, make_records
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
    assert_same_records(sent, cons.result, what=f"{client_name} consumer across restart")
    # And the log itself: read again from scratch after the restart (kafka-python: no group.id needed).
    again = get_client("kafka-python").consume(bs, topic, list(range(PARTS)), n, timeout_s=60)
    assert_same_records(sent, again, what=f"{client_name} log after restart")
