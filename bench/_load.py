"""The client-side workloads of the broker benchmark, driven by confluent-kafka (librdkafka).

Every workload targets one loopback bootstrap address, is bounded in record count *and* wall time, and
returns plain dicts. Client settings are librdkafka defaults except where noted:

- produce: ``linger.ms=5`` (librdkafka's default, spelled out), no compression, no key (so librdkafka's
  sticky partitioner spreads batches over the partitions), 100-byte values, idempotence off, ``acks`` as asked; the clock runs from the first ``produce()`` to ``flush()`` returning,
  i.e. until every record is acknowledged. Delivery errors are counted (``delivery.report.only.error``).
  The sticky partitioner sends each linger window's records to one random partition, so 100k records over
  6 partitions land unevenly: partitions of 0 or a few hundred records next to ones of 40k are common.
- fill (``produce(..., partitions=n)``): record i goes to partition ``i % n``, so every partition holds the
  same count. The consume rows read topics filled so: a sticky-filled topic made them bimodal (see
  ``consume``).
- consume: ``assign()`` of every partition from the beginning (no group join, so coordinator speed does not
  leak into the figure); the clock runs from ``assign()`` to the last expected record; every assigned
  partition should hold records. librdkafka resolves OFFSET_BEGINNING with one ListOffsets per partition and
  sends its first Fetch as soon as the first answer is in, often naming that one partition only; it keeps
  one Fetch in flight per broker. If that partition is empty, the broker holds the Fetch for
  ``fetch.wait.max.ms`` (500 ms, MinBytes 1, as Kafka does) while the other partitions' data waits: a
  100k-record run of ~0.1 s took ~0.6 s (~170k instead of ~1M records/s) whenever that happened;
  ``receive.message.max.bytes`` is raised (see RECEIVE_MAX) and ``fetch.queue.backoff.ms`` lowered (see
  FETCH_QUEUE_BACKOFF_MS: with the default, librdkafka's own pauses set the pace, not the broker).
- latency: one producer paced at a fixed rate with ``linger.ms=0, acks=1``, one consumer thread with
  ``fetch.wait.max.ms=100``; each value carries the ``perf_counter_ns()`` at ``produce()`` and the consumer
  thread records ``perf_counter_ns()`` on receipt (same process, same clock).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

RECORD_SIZE = 100
# noida-db ignores the Fetch request's max_bytes and answers with the whole partition (110 MB for 1M
# records), which librdkafka rejects above receive.message.max.bytes (default 100 MB) and then retries
# forever. Raised for every broker alike; well-behaved brokers never send more than fetch.max.bytes (50 MB).
RECEIVE_MAX = 1_000_000_000
# librdkafka >= 2.4 stops fetching a partition for fetch.queue.backoff.ms (default 1000) whenever its local
# queue holds more than queued.min.messages (100k): with 100 B records that is every ~10 MB, so a reader
# that drains faster than that spends most of a 1M-record run in those pauses, and every broker that
# honours max_bytes looks the same (~180k records/s here). Lowered for every broker alike.
FETCH_QUEUE_BACKOFF_MS = 10
STALL_S = 60.0  # a consume run with no new record for this long is abandoned (reported incomplete)


class _Stats:
    """Keeps librdkafka's latest statistics (``statistics.interval.ms``) to count requests per API.

    librdkafka emits the JSON from ``poll()``/``consume()``/``flush()``; ``brokers.<name>.req`` holds
    per-API request counts and ``brokers.<name>.rtt.avg`` the mean round trip in microseconds. Figures
    lag the end of a run by up to the interval, so they are approximate."""

    INTERVAL_MS = 500

    def __init__(self) -> None:
        self.latest: dict[str, Any] = {}

    def __call__(self, raw: str) -> None:
        with contextlib.suppress(ValueError):
            self.latest = json.loads(raw)

    def summary(self, api: str) -> dict[str, Any]:
        brokers = [b for b in self.latest.get("brokers", {}).values() if b.get("nodeid", -1) >= 0]
        if not brokers:
            return {}
        requests = sum(int(b.get("req", {}).get(api, 0)) for b in brokers)
        rtts = [b.get("rtt", {}).get("avg", 0) for b in brokers if b.get("rtt", {}).get("cnt", 0)]
        out: dict[str, Any] = {f"{api.lower()}_requests": requests}
        if rtts:
            out["rtt_avg_ms"] = round(sum(rtts) / len(rtts) / 1000, 2)
        return out


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Create ``topic`` and wait until its metadata shows all partitions with a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                                  operation_timeout=timeout, request_timeout=timeout)
    futures[topic].result(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5)
        meta = md.topics.get(topic)
        if meta and meta.error is None and len(meta.partitions) == partitions and all(
            p.leader >= 0 for p in meta.partitions.values()
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {topic} not visible with {partitions} partitions after {timeout}s")


def produce(bootstrap: str, topic: str, count: int, acks: str, time_limit: float,
            partitions: int | None = None, on_ready: Callable[[], None] | None = None) -> dict[str, Any]:
    """Produce ``count`` records of RECORD_SIZE bytes: keyless (librdkafka's sticky partitioner picks the
    partition), or with ``partitions`` record i to partition ``i % partitions`` (an even fill).
    ``on_ready`` is called once the client is connected and has the topic's metadata, before the clock."""
    errors: list[str] = []

    def on_error(err: Any, _msg: Any) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))
        if err is not None:
            failed[0] += 1

    failed = [0]
    stats = _Stats()
    producer = Producer({
        "statistics.interval.ms": _Stats.INTERVAL_MS,
        "stats_cb": stats,
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": 5,
        "enable.idempotence": False,
        "queue.buffering.max.messages": 500_000,
        "delivery.report.only.error": True,
        "message.timeout.ms": int(time_limit * 1000),
        "on_delivery": on_error,
    })
    producer.list_topics(topic, timeout=10)  # warm metadata outside the clock
    if on_ready is not None:
        on_ready()
    value = b"v" * RECORD_SIZE
    sent = 0
    full = 0   # produce() calls refused because librdkafka's queue was full (each costs a 5 ms poll)
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    produce_fn = producer.produce
    while sent < count and time.perf_counter() < deadline:
        try:
            if partitions:
                produce_fn(topic, value, partition=sent % partitions)
            else:
                produce_fn(topic, value)
            sent += 1
        except BufferError:
            full += 1
            producer.poll(0.005)
        if sent & 0x3FF == 0:
            producer.poll(0)
    left = producer.flush(max(0.0, deadline - time.perf_counter()) + 1.0)
    elapsed = time.perf_counter() - t0
    acked = sent - left - failed[0]
    return {
        "records": acked,
        "t_start": t0,
        "seconds": round(elapsed, 3),
        "records_per_s": round(acked / elapsed, 1),
        "mb_per_s": round(acked * RECORD_SIZE / elapsed / 1e6, 2),
        "complete": acked == count,
        "failed": failed[0],
        "queue_full_waits": full,
        "unflushed": left,
        "errors": errors,
        **stats.summary("Produce"),
    }


def consume(bootstrap: str, topic: str, partitions: int, count: int, time_limit: float,
            only: list[int] | None = None, on_ready: Callable[[], None] | None = None) -> dict[str, Any]:
    """Read ``count`` records of ``topic`` from offset 0 of every partition (or of the partitions ``only``).
    ``on_ready`` is called once the client is connected and has the topic's metadata, before the clock."""
    stats = _Stats()
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{topic}",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
        "statistics.interval.ms": _Stats.INTERVAL_MS,
        "stats_cb": stats,
        "receive.message.max.bytes": RECEIVE_MAX,
    })
    try:
        consumer.list_topics(topic, timeout=10)
        if on_ready is not None:
            on_ready()
        got = 0
        nbytes = 0
        errors: list[str] = []
        t0 = time.perf_counter()
        deadline = t0 + time_limit
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                         for p in (range(partitions) if only is None else only)])
        last_progress = t0
        first: float | None = None
        while got < count and time.perf_counter() < deadline:
            # consume(n, t) returns once n records are there or t has passed: never ask for more than are
            # left (the last call would sit out its timeout), and ask for 1 first (time to first record).
            want = 1 if first is None else min(10_000, count - got)
            for msg in consumer.consume(want, 0.2):
                if msg.error():
                    if len(errors) < 5:
                        errors.append(str(msg.error()))
                    continue
                if first is None:
                    first = time.perf_counter() - t0
                got += 1
                nbytes += len(msg.value() or b"")
                last_progress = time.perf_counter()
            if time.perf_counter() - last_progress > STALL_S:
                errors.append(f"no record for {STALL_S:.0f} s; gave up at {got}/{count}")
                break
        elapsed = time.perf_counter() - t0
    finally:
        consumer.close()
    return {
        "records": got,
        "t_start": t0,
        "seconds": round(elapsed, 3),
        "records_per_s": round(got / elapsed, 1),
        "mb_per_s": round(nbytes / elapsed / 1e6, 2),
        "complete": got == count,
        "first_record_ms": round(first * 1000, 1) if first is not None else None,
        "after_first_records_per_s": round((got - 1) / (elapsed - first), 1) if first and got > 1 else None,
        "errors": errors,
        **stats.summary("Fetch"),
    }


def end_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """High watermark of each partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-wm-{topic}"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)]
    finally:
        consumer.close()


def parallel_child_main() -> None:
    """One client process of :func:`parallel` (``python -c``): the job comes as JSON in argv[1]; prints
    ``ready`` once its client is connected and has the topic's metadata, waits for a line on stdin, runs,
    prints its result as JSON.

    The clients are released only once connected: started from an import, a client's first metadata round
    trip took 5 ms in one process and ~55 ms in the other about half the time (librdkafka holds back a
    connection attempt it deems too soon after another), so the second client's clock started ~50 ms after
    the first one's, in a 100k-record consume run of ~0.1 s: the row measured that start skew."""
    import sys

    kind, args = json.loads(sys.argv[1])

    def wait_go() -> None:
        print("ready", flush=True)
        sys.stdin.readline()

    try:
        c0 = time.process_time()
        run = (produce(*args, on_ready=wait_go) if kind == "produce" else consume(*args, on_ready=wait_go))
        # perf_counter is CLOCK_MONOTONIC: comparable across processes on one machine
        run["t0"], run["t1"] = run["t_start"], run["t_start"] + run["seconds"]
        run["client_cpu_s"] = time.process_time() - c0
    except Exception as exc:  # reported to the parent, which fails the phase
        run = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(run), flush=True)


def parallel(kind: str, bootstrap: str, topic: str, partitions: int, count: int, clients: int,
             time_limit: float, acks: str = "1") -> dict[str, Any]:
    """``clients`` client processes at once, each with its share of the work: for produce ``count // clients``
    records each; for consume, partition p goes to client ``p % clients`` and each reads its partitions'
    records. Throughput = all records / (last client done - first client started).

    This is the saturated case: on a 2-core machine the clients alone can use both cores, so the broker's
    own CPU per record decides how much is left for them (one client process measures mostly the client).
    The children are plain subprocesses released together once each has its client connected (no
    multiprocessing: its resource-tracker process would outlive the run)."""
    jobs: list[list[Any]] = []
    if kind == "produce":
        share = count // clients
        jobs = [[bootstrap, topic, share, acks, time_limit] for _ in range(clients)]
        expected = share * clients
    else:
        ends = end_offsets(bootstrap, topic, partitions)
        for c in range(clients):
            mine = [p for p in range(partitions) if p % clients == c]
            jobs.append([bootstrap, topic, partitions, sum(ends[p] for p in mine), time_limit, mine])
        expected = sum(ends)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = "from bench._load import parallel_child_main; parallel_child_main()"
    procs = [subprocess.Popen([sys.executable, "-c", code, json.dumps([kind, job])], cwd=root, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) for job in jobs]
    runs: list[dict[str, Any]] = []
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"client process {proc.pid} did not start: {line[:300]}")
        for proc in procs:   # release them together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, _ = proc.communicate(timeout=time_limit + 60)
            runs.append(json.loads(out.strip().splitlines()[-1]) if out.strip() else {"error": "no result"})
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        raise RuntimeError("; ".join(errors))
    got = sum(r["records"] for r in runs)
    elapsed = max(r["t1"] for r in runs) - min(r["t0"] for r in runs)
    return {
        "records": got,
        "clients": clients,
        "seconds": round(elapsed, 3),
        "records_per_s": round(got / elapsed, 1),
        "mb_per_s": round(got * RECORD_SIZE / elapsed / 1e6, 2),
        "complete": got == expected,
        "children_client_cpu_s": round(sum(r["client_cpu_s"] for r in runs), 2),
        "per_client_records_per_s": [r["records_per_s"] for r in runs],
    }


def latency(bootstrap: str, topic: str, rate: int, seconds: float, drain: float = 10.0) -> dict[str, Any]:
    """End-to-end latency at a paced ``rate`` msg/s for ``seconds``; returns p50/p99/max in ms."""
    stamp = struct.Struct(">q")
    pad = b"p" * (RECORD_SIZE - stamp.size)
    lat_ns: list[int] = []
    stop = threading.Event()
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{topic}",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "receive.message.max.bytes": RECEIVE_MAX,
    })
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    warm = threading.Event()

    def reader() -> None:
        # poll() returns as soon as one record is there; consume(n, t) would wait for n records or t.
        while not stop.is_set():
            msg = consumer.poll(0.05)
            now = time.perf_counter_ns()
            if msg is None or msg.error():
                continue
            value = msg.value() or b""
            if value.startswith(b"warm"):
                warm.set()
                continue
            lat_ns.append(now - stamp.unpack_from(value)[0])

    thread = threading.Thread(target=reader, name="bench-latency-reader", daemon=True)
    thread.start()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0,
                         "enable.idempotence": False})
    try:
        # Warm up: the consumer must be fetching before the clock starts.
        warm_deadline = time.monotonic() + 30
        while not warm.is_set() and time.monotonic() < warm_deadline:
            producer.produce(topic, b"warm" + pad, partition=0)
            producer.flush(5)
            warm.wait(0.5)
        if not warm.is_set():
            raise KafkaException("latency warm-up record never arrived")
        total = int(rate * seconds)
        interval = 1.0 / rate
        t0 = time.perf_counter()
        for i in range(total):
            target = t0 + i * interval
            delay = target - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            producer.produce(topic, stamp.pack(time.perf_counter_ns()) + pad, partition=0)
            producer.poll(0)
        send_elapsed = time.perf_counter() - t0
        producer.flush(drain)
        drain_deadline = time.monotonic() + drain
        while len(lat_ns) < total and time.monotonic() < drain_deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(5)
        consumer.close()
    ms = sorted(v / 1e6 for v in lat_ns)
    return {
        "sent": total,
        "received": len(ms),
        "achieved_rate": round(total / send_elapsed, 1),
        "p50_ms": round(_pct(ms, 50), 2) if ms else None,
        "p99_ms": round(_pct(ms, 99), 2) if ms else None,
        "max_ms": round(ms[-1], 2) if ms else None,
        "mean_ms": round(statistics.fmean(ms), 2) if ms else None,
    }


def _pct(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    idx = max(0, min(len(sorted_values) - 1, round(pct / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[idx]
