"""Client quotas: a producer and a consumer held to their configured byte rates.

A kafkalite broker process (Kafka's default quota windows: 11 samples of 1 s) gets
``producer_byte_rate`` for client id ``bench-producer`` and ``consumer_byte_rate`` for ``bench-consumer``
through AlterClientQuotas. A confluent-kafka producer then writes 1 KB records as fast as it can, and a
consumer reads a topic preloaded (by an unthrottled client id) with more than it may read, each for
``--seconds``. Reported per client: the configured rate, the measured rate over the whole run and over the
steady state (after 22 s: a new client may first burst up to the
window's worth, as in Kafka, and that burst leaves the measurement 11 s later), their ratios to the configured rate, and the largest
throttle_time_ms the client was sent (librdkafka's throttle callback).

    python -m bench.bench_quotas [--quick] [--rate BYTES_PER_S] [--seconds S]
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Any

from bench import _brokers
from bench._report import table

BENCH_TIMEOUT = 400
RECORD = 1000
WARMUP_S = 22.0   # two measurement windows (11 x 1 s): the first burst has expired by then


def _set_quota(host: str, port: int, client_id: str, key: str, rate: float) -> None:
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import AlterClientQuotasRequest as A

    with RawClient(host, port) as c:
        resp = c.request(A(entries=[A.EntryData(entity=[A.EntityData(entity_type="client-id", entity_name=client_id)],
                                                ops=[A.OpData(key=key, value=rate, remove=False)])]), 1)
        assert resp.entries[0].error_code == 0, resp


def _rates(events: list[tuple[float, int]], t0: float, t_end: float) -> tuple[float, float]:
    total = sum(n for _t, n in events)
    steady = sum(n for t, n in events if t >= t0 + WARMUP_S)
    return total / (t_end - t0), steady / max(t_end - t0 - WARMUP_S, 1e-9)


def _produce(bs: str, topic: str, seconds: float, client_id: str) -> tuple[list[tuple[float, int]], float, float, float]:
    from confluent_kafka import Producer

    events: list[tuple[float, int]] = []
    throttles = [0.0]
    p = Producer({"bootstrap.servers": bs, "client.id": client_id, "linger.ms": 5, "acks": 1,
                  "queue.buffering.max.kbytes": 4096,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    value = os.urandom(RECORD)

    def done(err: Any, _msg: Any) -> None:
        if err is None:
            events.append((time.monotonic(), RECORD))

    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            p.produce(topic, value, on_delivery=done)
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    t_end = time.monotonic()
    p.flush(60)
    return [e for e in events if e[0] <= t_end], max(throttles), t0, t_end


def _preload(bs: str, topic: str, nbytes: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs, "client.id": "bench-preload", "linger.ms": 20, "acks": 1,
                  "compression.type": "none"})
    value = os.urandom(RECORD)
    for _ in range(nbytes // RECORD):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    p.flush(120)


def _consume(bs: str, topic: str, seconds: float, client_id: str) -> tuple[list[tuple[float, int]], float, float, float]:
    from confluent_kafka import Consumer, TopicPartition

    throttles = [0.0]
    c = Consumer({"bootstrap.servers": bs, "client.id": client_id, "group.id": "bench-quotas",
                  "enable.auto.commit": False, "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    events: list[tuple[float, int]] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            m = c.poll(0.1)
            if m is not None and not m.error():
                events.append((time.monotonic(), len(m.value() or b"")))
        t_end = time.monotonic()
    finally:
        c.close()
    return events, max(throttles), t0, t_end


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rate", type=float, default=1_000_000, help="configured bytes/s for both clients")
    ap.add_argument("--seconds", type=float, default=None, help="length of each client's run")
    args = ap.parse_args(argv)
    seconds = args.seconds or (35.0 if args.quick or os.environ.get("BENCH_QUICK") else 60.0)
    rate = args.rate
    broker = _brokers.start("kafkalite")
    rows = []
    try:
        bs = broker.bootstrap
        _set_quota(broker.host, broker.port, "bench-producer", "producer_byte_rate", rate)
        _set_quota(broker.host, broker.port, "bench-consumer", "consumer_byte_rate", rate)
        from confluent_kafka.admin import AdminClient, NewTopic

        adm = AdminClient({"bootstrap.servers": bs})
        for t in ("bench-quota-p", "bench-quota-c"):
            adm.create_topics([NewTopic(t, 1, 1)])[t].result(30)
        for name, run, topic in (("producer", _produce, "bench-quota-p"), ("consumer", _consume, "bench-quota-c")):
            if name == "consumer":
                _preload(bs, topic, int(rate * (seconds + WARMUP_S) * 1.3))
            events, throttle, t0, t_end = run(bs, topic, seconds, f"bench-{name}")
            overall, steady = _rates(events, t0, t_end)
            rows.append({"client": name, "configured B/s": rate, "measured B/s": round(overall),
                         "steady B/s (after 22 s)": round(steady), "measured / configured": round(overall / rate, 3),
                         "steady / configured": round(steady / rate, 3), "max throttle_time_ms": round(throttle * 1000),
                         "seconds": round(t_end - t0, 1)})
            print(rows[-1], flush=True)
    finally:
        broker.stop()
    header = list(rows[0])
    return {"rows": rows, "markdown": table(header, [[r[h] for h in header] for r in rows])}


if __name__ == "__main__":
    res = main()
    print(res["markdown"])
