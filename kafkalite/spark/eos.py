"""The exactly-once streaming sink (``exactlyOnce=true``): one Kafka transaction per task, committed by the driver.

Spark's Python streaming writer contract: ``write(rows)`` runs in a task on an executor and returns a commit
message; once every task of micro-batch ``b`` succeeded, the driver calls ``commit(messages, b)`` and only then
records ``b`` in the checkpoint's commit log. A batch whose commit log entry is missing is re-run after a
restart (with the same input offsets), and a failed task is re-run (another attempt) inside the batch.

Two-phase commit on that contract:

1. Task ``p`` of batch ``b`` (query id ``q``) opens a transactional producer with ``transactional.id =
   <prefix>-<q>-<p>``. ``init_transactions`` fences the id's previous producer and aborts its open
   transaction, if any (an earlier failed attempt of this task, or the batch before a driver crash).
2. It reads the committed offset of group ``<prefix>-<q>-<p>`` on the marker partition (``<topic>``, 0). That
   offset is ``last committed batch id + 1`` of this task id: if it is ``> b`` this task's rows of batch ``b``
   are already committed (the driver crashed after committing it), and the task writes nothing.
3. Otherwise it writes its rows in a transaction and adds ``offset = b + 1`` for that group to the same
   transaction (``send_offsets_to_transaction``), flushes, and returns ``(transactional id, producer id,
   epoch)`` without committing. The rows and the batch marker become visible together or not at all.
4. The driver's ``commit(messages, b)`` sends EndTxn(commit) for every message (retrying through broker
   restarts). A transaction fenced meanwhile fails the batch, which Spark then re-runs. When the batch's job
   fails, Spark's ``abort(messages, b)`` aborts the transactions of the tasks that had succeeded, so they stop
   holding the last stable offset back (a transaction nobody reports is aborted by the next attempt's
   ``init_transactions`` or by its timeout).

Hence a read_committed reader sees each row of each batch once, whatever crashes (driver, executor, broker):
a re-run either skips a task whose transaction committed or fences and replaces one that did not. Assumed: a
re-run of batch ``b`` gives task ``p`` the same rows, which holds for Spark's replay of a Kafka (or file)
source with deterministic transformations and partitioning.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from kafkalite.spark.options import KafkaOptionError, SinkOptions

_lock = threading.Lock()
_open: dict[str, Any] = {}  # transactional id -> the producer whose transaction the driver will commit


@dataclass
class TxnCommitMessage(WriterCommitMessage):
    rows: int
    transactional_id: str | None  # None: nothing to commit (batch already committed for this task, or no rows)
    producer_id: int = -1
    epoch: int = -1


def task_context() -> tuple[str, int, int, int]:
    """``(query id, batch id, partition id, attempt)`` of the running task, from Spark's local properties."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("not running in a Spark task")
    query = ctx.getLocalProperty("sql.streaming.queryId")
    batch = ctx.getLocalProperty("streaming.sql.batchId")
    if query is None or batch is None:
        raise KafkaOptionError("exactlyOnce=true needs a streaming query (no query id or batch id in the task)")
    return query, int(batch), ctx.partitionId(), ctx.attemptNumber()


def maybe_fail_task(opts: SinkOptions, batch: int, partition: int) -> None:
    """Test hook: fail this task once if ``<testHookDir>/fail-task-<batch>-<partition>`` exists (called after
    the rows were written), and every attempt, before writing, if ``fail-task-always-<batch>-<partition>`` does
    (called first)."""
    if not opts.test_hook_dir:
        return
    if (Path(opts.test_hook_dir) / f"fail-task-always-{batch}-{partition}").exists():
        raise RuntimeError(f"injected failure of task {partition} of batch {batch} (testHookDir)")
    armed = Path(opts.test_hook_dir) / f"fail-task-{batch}-{partition}"
    with contextlib.suppress(FileNotFoundError):
        armed.rename(armed.with_name(f"failed-task-{batch}-{partition}"))
        raise RuntimeError(f"injected failure of task {partition} of batch {batch} (testHookDir)")


def driver_pause(opts: SinkOptions, batch: int, point: str) -> None:
    """Test hook: at ``point`` of batch ``batch``, if armed, say so and wait for ``go`` (or a SIGKILL)."""
    if not opts.test_hook_dir:
        return
    d = Path(opts.test_hook_dir)
    if not (d / f"pause-{batch}-{point}").exists():
        return
    (d / f"at-{batch}-{point}").write_text(str(os.getpid()))
    end = time.monotonic() + 300
    while not (d / f"go-{batch}-{point}").exists() and time.monotonic() < end:
        time.sleep(0.1)


def _marker(opts: SinkOptions, group: str) -> int:
    """The committed ``last batch + 1`` of ``group`` on the marker partition (0 when none)."""
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka import TopicPartition as KTP

    c = Consumer({"bootstrap.servers": opts.kafka["bootstrap.servers"], "group.id": group,
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    last: object = None
    try:
        for _ in range(30):
            try:
                got = c.committed([KTP(opts.marker_topic, 0)], timeout=30)[0]
                if got.error is None:
                    return max(got.offset, 0)
                last = got.error
            except KafkaException as exc:  # the coordinator is restarting, or an offset is pending (UNSTABLE_OFFSET)
                last = exc
            time.sleep(1.0)
        raise RuntimeError(f"cannot read the batch marker of {group}: {last}")
    finally:
        c.close()


def write_task(batches: Iterator[pa.RecordBatch], opts: SinkOptions) -> TxnCommitMessage:
    """Executor side of batch ``b``: rows + marker ``b + 1`` in one transaction, left open for the driver."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as KTP

    from kafkalite.spark.sink import produce_rows
    from kafkalite.spark.txnclient import TxnClient

    query, batch, partition, _attempt = task_context()
    if opts.test_hook_dir and (Path(opts.test_hook_dir) / f"fail-task-always-{batch}-{partition}").exists():
        maybe_fail_task(opts, batch, partition)
    txn_id = group = f"{opts.txn_prefix}-{query}-{partition}"
    conf = opts.producer_config()
    conf.pop("enable.idempotence", None)
    errors: list[Any] = []
    conf.update({"transactional.id": txn_id, "transaction.timeout.ms": opts.transaction_timeout_ms,
                 "delivery.report.only.error": True,
                 "on_delivery": lambda err, _msg: errors.append(err) if err is not None else None})
    producer = Producer(conf)
    producer.init_transactions(120)  # fences the previous holder of txn_id and aborts its open transaction
    with _lock:
        _open[txn_id] = producer  # the replaced, fenced producer is released
    if _marker(opts, group) > batch:
        for _ in batches:
            pass
        return TxnCommitMessage(rows=0, transactional_id=None)
    producer.begin_transaction()
    rows = produce_rows(producer, batches, opts, errors)
    meta_consumer = Consumer({"bootstrap.servers": opts.kafka["bootstrap.servers"], "group.id": group})
    try:
        producer.send_offsets_to_transaction([KTP(opts.marker_topic, 0, batch + 1)],
                                             meta_consumer.consumer_group_metadata(), 120)
    finally:
        meta_consumer.close()
    left = producer.flush(300)
    if errors or left:
        raise RuntimeError(f"{left} records unacknowledged, errors: {errors[:3]}")
    maybe_fail_task(opts, batch, partition)
    pid, epoch, state = TxnClient(opts.kafka["bootstrap.servers"]).describe(txn_id)
    if state != "Ongoing":
        raise RuntimeError(f"transaction {txn_id} is {state}, expected Ongoing")
    return TxnCommitMessage(rows=rows, transactional_id=txn_id, producer_id=pid, epoch=epoch)


def commit_batch(opts: SinkOptions, messages: list[Any], batch: int) -> None:
    """Driver side: commit every task's transaction of ``batch``; raise if any was fenced (Spark re-runs it)."""
    from kafkalite.spark.txnclient import TxnClient

    client = TxnClient(opts.kafka["bootstrap.servers"])
    todo = [m for m in messages if isinstance(m, TxnCommitMessage) and m.transactional_id]
    driver_pause(opts, batch, "before-commit")
    for i, m in enumerate(todo):
        if i == len(todo) // 2 and i:
            driver_pause(opts, batch, "half-committed")
        client.commit(m.transactional_id, m.producer_id, m.epoch)


def abort_batch(opts: SinkOptions, messages: list[Any], batch: int) -> None:
    """Driver side, after a failed batch: abort the open transactions of its successful tasks (best effort:
    one already committed, or fenced by a newer attempt, answers an error that changes nothing)."""
    import logging

    from kafkalite.spark.txnclient import TxnClient

    client = TxnClient(opts.kafka["bootstrap.servers"], deadline_s=30.0)
    for m in messages:
        if isinstance(m, TxnCommitMessage) and m.transactional_id:
            try:
                client.commit(m.transactional_id, m.producer_id, m.epoch, committed=False)
            except Exception as exc:
                logging.getLogger("kafkalite.spark").warning("batch %d: abort of %s: %s", batch,
                                                             m.transactional_id, exc)
