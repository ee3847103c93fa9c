"""SIGKILL soak: a real broker process killed again and again under an idempotent acks=all producer and a
committing consumer group (confluent-kafka), checked after every restart.

    make soak                         # SOAK_SECONDS (default 180) of kill/restart cycles
    make soak ARGS="--cycles 50"      # or a fixed number of cycles (whichever limit is reached first)
    .venv/bin/python tools/soak.py --seconds 30 --keep

Each cycle produces for a random 0.5-2.5 s (records ``<seq>`` keyed by partition, round-robin over the
partitions) while the group consumer polls and commits synchronously, then SIGKILLs the broker at that random
moment and starts it again on the same data dir and port. After the restart the producer's outstanding
records are flushed (its retries must be deduplicated by the broker's producer state), and the whole topic is
read back and checked:

- lost: every record whose delivery was acknowledged is in the log at the offset it was acknowledged with;
- duplicated: no value appears twice in the log;
- reordered: values increase along each partition (one idempotent producer, so its order is the log order);
- commits: the group's committed offset of every partition is at least the last commit the broker
  acknowledged before the kill, and no more than the log end.

At the end the group consumer must have seen every acknowledged record (it may see some twice: at-least-once
after a crash). Prints one summary line ``soak: ok: N cycles, M acknowledged records ...`` and exits 0, or
prints what went wrong and exits 1. The broker's log and data dir are kept on failure (or with ``--keep``).
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "compat-tests"))

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from harness.broker import BrokerProcess  # noqa: E402

TOPIC = "soak"
GROUP = "soak-group"


class SoakFailure(AssertionError):
    pass


class Soak:
    def __init__(self, workdir: Path, partitions: int, seed: int) -> None:
        self.workdir = workdir
        self.partitions = partitions
        self.rng = random.Random(seed)
        self.broker = BrokerProcess(workdir / "data", workdir / "broker.log")
        self.seq = 0
        self.acked: dict[int, dict[int, int]] = {p: {} for p in range(partitions)}   # partition -> offset -> seq
        self.delivery_errors: list[str] = []
        self.committed: dict[int, int] = {}          # last commit the broker acknowledged
        self.group_seen: set[int] = set()
        self.cycles = 0
        self.producer: Producer | None = None
        self.consumer: Consumer | None = None

    # -- clients -------------------------------------------------------------------------------------
    def start(self) -> None:
        bs = self.broker.start()
        admin = AdminClient({"bootstrap.servers": bs})
        fut = admin.create_topics([NewTopic(TOPIC, self.partitions, 1)])[TOPIC]
        fut.result(30)
        self.producer = Producer({
            "bootstrap.servers": bs, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "message.timeout.ms": 300_000, "retry.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
            "max.in.flight.requests.per.connection": 5, "log_level": 2,   # no "Connection refused" noise
        })
        self.consumer = Consumer({
            "bootstrap.servers": bs, "group.id": GROUP, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 10_000, "reconnect.backoff.max.ms": 500,
            "log_level": 2,
        })
        self.consumer.subscribe([TOPIC])

    def _on_delivery(self, err, msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            self.delivery_errors.append(str(err))
            return
        seq = int(msg.value())
        prev = self.acked[msg.partition()].setdefault(msg.offset(), seq)
        if prev != seq:
            self.delivery_errors.append(f"offset {msg.partition()}/{msg.offset()} acknowledged for {prev} and {seq}")

    def _produce_some(self, n: int) -> None:
        assert self.producer is not None
        for _ in range(n):
            p = self.seq % self.partitions
            try:
                self.producer.produce(TOPIC, value=str(self.seq).encode(), key=str(p).encode(), partition=p,
                                      on_delivery=self._on_delivery)
            except BufferError:
                self.producer.poll(0.05)
                return
            self.seq += 1
        self.producer.poll(0)

    def _consume_and_commit(self) -> None:
        assert self.consumer is not None
        msgs = self.consumer.consume(500, timeout=0.02)
        last: dict[int, int] = {}
        for m in msgs:
            if m.error() is None:
                self.group_seen.add(int(m.value()))
                last[m.partition()] = m.offset() + 1
        if not last:
            return
        try:
            done = self.consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in last.items()],
                                        asynchronous=False)
        except KafkaException:
            return   # not acknowledged (broker down, rebalance): nothing to hold the broker to
        for tp in done or []:
            if tp.error is None and tp.offset >= 0:
                self.committed[tp.partition] = max(self.committed.get(tp.partition, 0), tp.offset)

    # -- one cycle -----------------------------------------------------------------------------------
    def cycle(self) -> None:
        run_for = self.rng.uniform(0.5, 2.5)
        end = time.monotonic() + run_for
        while time.monotonic() < end:
            self._produce_some(200)
            self._consume_and_commit()
        self.broker.stop(signal.SIGKILL)
        time.sleep(self.rng.uniform(0.0, 0.3))
        self.broker.start()
        assert self.producer is not None
        deadline = time.monotonic() + 180
        while len(self.producer) and time.monotonic() < deadline:
            self.producer.poll(0.1)
            self._consume_and_commit()
        if len(self.producer):
            raise SoakFailure(f"{len(self.producer)} records still unacknowledged 180 s after the restart")
        if self.delivery_errors:
            raise SoakFailure(f"delivery failed: {self.delivery_errors[:5]}")
        self.verify_log()
        self.verify_commits()
        self.cycles += 1

    # -- checks --------------------------------------------------------------------------------------
    def read_partition(self, p: int) -> list[tuple[int, int]]:
        c = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": "soak-verify",
                      "enable.auto.commit": False, "fetch.max.bytes": 50 * 1024 * 1024, "log_level": 2})
        try:
            _low, high = c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)
            c.assign([TopicPartition(TOPIC, p, 0)])
            out: list[tuple[int, int]] = []
            deadline = time.monotonic() + 120
            while (not out or out[-1][0] < high - 1) and high > 0:
                if time.monotonic() > deadline:
                    raise SoakFailure(f"partition {p}: read {len(out)} records, not up to {high}")
                for m in c.consume(10_000, timeout=1.0):
                    if m.error() is None:
                        out.append((m.offset(), int(m.value())))
            return out
        finally:
            c.close()

    def verify_log(self) -> None:
        for p in range(self.partitions):
            log = self.read_partition(p)
            by_offset = dict(log)
            values = [v for _o, v in log]
            if len(set(values)) != len(values):
                dup = sorted({v for v in values if values.count(v) > 1})[:5]
                raise SoakFailure(f"cycle {self.cycles}: partition {p} holds duplicates, e.g. {dup}")
            if any(b <= a for a, b in zip(values, values[1:], strict=False)):
                raise SoakFailure(f"cycle {self.cycles}: partition {p} is out of order")
            lost = [(o, s) for o, s in self.acked[p].items() if by_offset.get(o) != s]
            if lost:
                raise SoakFailure(f"cycle {self.cycles}: partition {p} lost {len(lost)} acknowledged records, "
                                  f"e.g. (offset, seq) {sorted(lost)[:5]}")

    def verify_commits(self) -> None:
        assert self.consumer is not None
        deadline = time.monotonic() + 60
        while True:
            try:
                got = self.consumer.committed([TopicPartition(TOPIC, p) for p in range(self.partitions)],
                                              timeout=10)
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for tp in got:
            want = self.committed.get(tp.partition)
            if want is not None and tp.offset < want:
                raise SoakFailure(f"cycle {self.cycles}: committed offset of partition {tp.partition} went back "
                                  f"from {want} to {tp.offset}")

    def finish(self) -> None:
        """The group consumer must see every acknowledged record."""
        wanted = {s for offs in self.acked.values() for s in offs.values()}
        deadline = time.monotonic() + 120
        while not wanted <= self.group_seen and time.monotonic() < deadline:
            self._consume_and_commit()
        missing = wanted - self.group_seen
        if missing:
            raise SoakFailure(f"the group consumer never saw {len(missing)} acknowledged records, "
                              f"e.g. {sorted(missing)[:5]}")

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None
        if self.producer is not None:
            self.producer.flush(5)
            self.producer = None
        self.broker.stop()

    @property
    def acked_count(self) -> int:
        return sum(len(v) for v in self.acked.values())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", "180")),
                    help="stop starting new cycles after this long (env SOAK_SECONDS, default 180)")
    ap.add_argument("--cycles", type=int, default=int(os.environ.get("SOAK_CYCLES", "0")),
                    help="stop after this many cycles (0: no limit)")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", str(int(time.time())))))
    ap.add_argument("--keep", action="store_true", help="keep the data dir and broker log")
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kafkalite-soak-"))
    soak = Soak(workdir, args.partitions, args.seed)
    t0 = time.monotonic()
    ok = False
    try:
        soak.start()
        while time.monotonic() - t0 < args.seconds and (args.cycles <= 0 or soak.cycles < args.cycles):
            soak.cycle()
        soak.finish()
        ok = True
    except SoakFailure as exc:
        print(f"soak: FAILED after {soak.cycles} cycles (seed {args.seed}): {exc}", flush=True)
    finally:
        soak.close()
    elapsed = time.monotonic() - t0
    if ok:
        print(f"soak: ok: {soak.cycles} SIGKILL cycles, {soak.acked_count} acknowledged records, 0 lost, "
              f"0 duplicated, 0 reordered; group saw {len(soak.group_seen)} records, commits held; "
              f"{elapsed:.0f} s (seed {args.seed})", flush=True)
    if ok and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"soak: data dir and broker log kept in {workdir}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
