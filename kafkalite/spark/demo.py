"""ShopFlow pipeline demo (``make pipeline-demo``): exact running revenue across a killed streaming job.

1. An embedded kafkalite broker starts (``kafkalite.Broker``) with a data directory under a temp dir.
2. A producer writes order events to ``order_events`` (3 partitions): JSON ``{"order_id", "type", "cents"}``
   where ``type`` is ``created``, ``paid`` or ``cancelled``. It keeps the exact expected paid revenue.
3. A Structured Streaming job, in its own process, reads the topic through the ``kafkalite`` source and keeps
   the running total of paid revenue (a stateful aggregation, checkpointed), writing the total after each
   micro-batch.
4. Mid-stream the job is killed with SIGKILL (no clean shutdown), while the producer keeps producing. It is
   started again on the same checkpoint and catches up.
5. The demo ends when the job has seen every event, and checks its total against the producer's: exact, with
   no event counted twice or missed.

    python -m kafkalite.spark.demo [--events N] [--keep DIR] [--cluster]

``--cluster`` (``make pipeline-demo CLUSTER=1``) runs the job on a Spark standalone cluster of a master and two
workers started here from the pyspark install (:mod:`kafkalite.spark.cluster`), instead of ``local[2]``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import kafkalite
import kafkalite.spark
from kafkalite.spark.cluster import StandaloneCluster

TOPIC = "order_events"


# --- the streaming job (runs in a child process) -------------------------------------------------------------

def run_job(bootstrap: str, checkpoint: str, out: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    master = os.environ.get("KAFKALITE_SPARK_MASTER", "local[2]")  # spark://... with --cluster
    spark = (SparkSession.builder.master(master).appName("shopflow-revenue")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafkalite.spark.register(spark)

    events = (spark.readStream.format("kafkalite")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", TOPIC)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "1500")
              .load()
              .select(F.from_json(F.col("value").cast("string"),
                                  "order_id long, type string, cents long").alias("e"))
              .select("e.*"))
    totals = events.agg(
        F.sum(F.when(F.col("type") == "paid", F.col("cents")).otherwise(F.lit(0))).alias("paid_cents"),
        F.count(F.lit(1)).alias("events"))

    def publish(batch: Any, batch_id: int) -> None:
        row = batch.collect()[0] if batch.count() else None
        doc = {"batch_id": batch_id, "paid_cents": int(row["paid_cents"] or 0) if row else 0,
               "events": int(row["events"]) if row else 0}
        tmp = out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(doc, fh)
        os.replace(tmp, out)

    query = (totals.writeStream.outputMode("complete").foreachBatch(publish)
             .option("checkpointLocation", checkpoint).trigger(processingTime="500 milliseconds").start())
    query.awaitTermination()


# --- the orchestrator -----------------------------------------------------------------------------------------

class OrderProducer(threading.Thread):
    """Produces ``n`` order events at a steady pace; ``paid_cents`` is the exact expected revenue."""

    def __init__(self, bootstrap: str, n: int, first: int, per_second: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.n, self.first, self.per_second = bootstrap, n, first, per_second
        # The second half waits until the job has been killed, so the kill always lands mid-stream.
        self.second_half = threading.Event()
        self.paid_cents = 0
        self.sent = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            from confluent_kafka import Producer

            rng = random.Random(self.first)
            p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 10,
                          "log_level": 3})
            start = time.monotonic()
            for i in range(self.first, self.first + self.n):
                if i - self.first == self.n // 2 and not self.second_half.is_set():
                    p.flush(30)
                    self.second_half.wait()
                    start = time.monotonic() - self.sent / self.per_second
                kind = rng.choices(["created", "paid", "cancelled"], weights=[5, 4, 1])[0]
                cents = rng.randint(100, 50_000)
                doc = json.dumps({"order_id": i // 2, "type": kind, "cents": cents}).encode()
                while True:
                    try:
                        p.produce(TOPIC, value=doc, key=str(i // 2).encode())
                        break
                    except BufferError:
                        p.poll(0.05)
                if kind == "paid":
                    self.paid_cents += cents
                self.sent += 1
                ahead = self.sent / self.per_second - (time.monotonic() - start)
                if ahead > 0:
                    p.flush(30)
                    time.sleep(ahead)
            if p.flush(60) != 0:
                raise RuntimeError("producer could not deliver every event")
        except BaseException as exc:
            self.error = exc


def _start_job(bootstrap: str, checkpoint: Path, out: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "kafkalite.spark.demo", "job", bootstrap, str(checkpoint),
                                 str(out)], stdout=fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _read(out: Path) -> dict[str, int]:
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError):
        return {"events": 0, "paid_cents": 0, "batch_id": -1}


def _wait(cond: Any, timeout: float, what: str, job: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if job.poll() is not None:
            raise SystemExit(f"the streaming job exited ({job.returncode}); see {log}")
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}; see {log}")
        time.sleep(0.25)


def _kill(job: subprocess.Popen[bytes]) -> None:
    """SIGKILL the job and the JVM it started (its own session/process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGKILL)
    job.wait()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["job"]:
        run_job(*argv[1:4])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rate", type=int, default=2_000, help="events per second")
    ap.add_argument("--keep", help="work directory to keep (default: a temp dir, removed at the end)")
    ap.add_argument("--cluster", action="store_true",
                    help="run the job on a Spark standalone cluster (a master and two workers) started here")
    opts = ap.parse_args(argv)
    if opts.cluster:
        work = Path(opts.keep or tempfile.mkdtemp(prefix="shopflow-"))
        with StandaloneCluster(work / "cluster", workers=2) as url:
            print(f"cluster     Spark standalone master {url}, 2 workers (1 core each)")
            os.environ["KAFKALITE_SPARK_MASTER"] = url
            rest = [a for a in argv if a != "--cluster"]
            rc = main([*rest, "--keep", str(work)] if not opts.keep else rest)
        if not opts.keep:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
        return rc

    from confluent_kafka.admin import AdminClient, NewTopic

    work = Path(opts.keep or tempfile.mkdtemp(prefix="shopflow-"))
    work.mkdir(parents=True, exist_ok=True)
    checkpoint, out, log = work / "checkpoint", work / "revenue.json", work / "job.log"
    with kafkalite.Broker(data_dir=work / "broker") as broker:
        print(f"broker      kafkalite on {broker.bootstrap_servers}, data in {broker.data_dir}")
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for f in admin.create_topics([NewTopic(TOPIC, 3, 1)]).values():
            f.result(timeout=30)
        producer = OrderProducer(broker.bootstrap_servers, opts.events, 0, opts.rate)
        producer.start()
        job = _start_job(broker.bootstrap_servers, checkpoint, out, log)
        print(f"job         started (pid {job.pid}); producing {opts.events} order events at ~{opts.rate}/s")
        try:
            _wait(lambda: _read(out)["events"] > 0, 300, "the first micro-batch", job, log)
            seen = _read(out)
            print(f"job         batch {seen['batch_id']}: {seen['events']} events, paid revenue "
                  f"{seen['paid_cents'] / 100:.2f}")
            _kill(job)
            print(f"job         KILLED (SIGKILL) mid-stream with {producer.sent}/{opts.events} events produced")
            producer.second_half.set()
            time.sleep(1.0)
            job = _start_job(broker.bootstrap_servers, checkpoint, out, log)
            print(f"job         restarted from its checkpoint (pid {job.pid})")
            producer.join()
            if producer.error is not None:
                raise SystemExit(f"producer failed: {producer.error}")
            print(f"producer    done: {opts.events} events, exact paid revenue {producer.paid_cents / 100:.2f}")
            _wait(lambda: _read(out)["events"] >= opts.events, 600, "the job to catch up", job, log)
        finally:
            producer.second_half.set()
            _kill(job)
    final = _read(out)
    print(f"job         batch {final['batch_id']}: {final['events']} events, paid revenue "
          f"{final['paid_cents'] / 100:.2f}")
    ok = final["events"] == opts.events and final["paid_cents"] == producer.paid_cents
    print("result      " + ("EXACT: the restarted job's total equals the producer's" if ok else
                            f"MISMATCH: expected {opts.events} events / {producer.paid_cents} cents"))
    if not opts.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
