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
4. The driver's ``commit(messages, b)`` first records the batch's **decision**: one offset commit, for group
   ``<prefix>-<q>`` on the marker partition, of offset ``b + 1`` with metadata listing every task's
   ``(partition, producer id, epoch)`` (a single OffsetCommit record is atomic). Only then does it send
   EndTxn(commit) for every message (retrying through broker restarts). A transaction fenced meanwhile fails
   the batch, which Spark then re-runs. When the batch's job fails, Spark's ``abort(messages, b)`` aborts
   the transactions of the tasks that had succeeded, so they stop holding the last stable offset back (a
   transaction nobody reports is aborted by the next attempt's ``init_transactions`` or by its timeout) —
   unless the decision for ``b`` was recorded, in which case it completes the commits instead.
5. A re-run of batch ``b`` (after the driver died) rolls the decision forward: before ``init_transactions``
   (which would abort it), task ``p`` reads the decision and, if it is for ``b`` and names ``p``, sends
   EndTxn(commit) for exactly that producer id and epoch. Those identify the decided transaction alone: any
   later attempt of the task ran ``init_transactions`` and holds a higher epoch, so an EndTxn for the decided
   epoch then answers fenced and commits nothing. The task's marker then says ``b`` committed and it writes
   nothing. Without a decision the re-run's ``init_transactions`` aborts every open transaction of ``b``.

So a batch is all-or-nothing once the driver is gone and the query restarted: **decided -> committed whole**
(the original transactions, nothing written twice), **undecided -> aborted whole and written again**. The
one exception is a restart later than ``transaction.timeout.ms``: the coordinator has then aborted the
decided but uncommitted transactions, and the re-run writes those tasks' rows again (correct when the re-run
gives each task the same rows, as below). Nothing makes the commit sweep itself instantaneous: while the driver
sends the EndTxn requests one after another (and the coordinator writes each transaction's markers partition
by partition, as Kafka's own single transactions do), a read_committed reader can see some partitions of a
batch before others; and after a driver crash in the sweep, the decided rest appears when the query restarts.

Hence a read_committed reader sees each row of each batch once, whatever crashes (driver, executor, broker):
a re-run either skips a task whose transaction committed or fences and replaces one that did not. Assumed: a
re-run of batch ``b`` has the same tasks and, where it writes a task's rows again (task failures, undecided
batches), gives task ``p`` the same rows, which holds for Spark's replay of a Kafka (or file) source with
deterministic transformations and partitioning.
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
from kafkalite.spark.produce import produce_rows

_lock = threading.Lock()
_open: dict[str, Any] = {}  # transactional id -> the producer whose transaction the driver will commit


@dataclass
class TxnCommitMessage(WriterCommitMessage):
    rows: int
    transactional_id: str | None  # None: nothing to commit (batch already committed for this task, or no rows)
    producer_id: int = -1
    epoch: int = -1
    query: str = ""
    partition: int = -1


DECISION_METADATA_MAX = 4000  # below Kafka's default offset.metadata.max.bytes (4096)


def decision_group(opts: SinkOptions, query: str) -> str:
    return f"{opts.txn_prefix}-{query}"


def encode_decision(batch: int, txns: list[tuple[int, int, int]]) -> str | None:
    """``b=<batch>;<partition>:<producer id>:<epoch>,...``; None when it would not fit the metadata limit (the
    decision is then not recorded: a re-run aborts and rewrites the batch's uncommitted tasks, as without it)."""
    text = f"b={batch};" + ",".join(f"{p}:{pid}:{epoch}" for p, pid, epoch in txns)
    return text if len(text) <= DECISION_METADATA_MAX else None


def decode_decision(offset: int, metadata: str | None) -> tuple[int, dict[int, tuple[int, int]]] | None:
    """``(batch, {partition: (producer id, epoch)})`` of a recorded decision, None if none is."""
    if offset <= 0 or not metadata or not metadata.startswith("b="):
        return None
    head, _, body = metadata.partition(";")
    batch = int(head[2:])
    if batch != offset - 1:
        return None
    txns = {}
    for item in filter(None, body.split(",")):
        p, pid, epoch = (int(x) for x in item.split(":"))
        txns[p] = (pid, epoch)
    return batch, txns


def _consumer(opts: SinkOptions, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({**opts.client_config(), "group.id": group, "isolation.level": "read_committed",
                     "enable.auto.commit": False})


def read_decision(opts: SinkOptions, query: str) -> tuple[int, dict[int, tuple[int, int]]] | None:
    from confluent_kafka import KafkaException
    from confluent_kafka import TopicPartition as KTP

    c = _consumer(opts, decision_group(opts, query))
    last: object = None
    try:
        for _ in range(30):
            try:
                got = c.committed([KTP(opts.marker_topic, 0)], timeout=30)[0]
                if got.error is None:
                    return decode_decision(got.offset, got.metadata)
                last = got.error
            except KafkaException as exc:  # the coordinator is restarting
                last = exc
            time.sleep(1.0)
        raise RuntimeError(f"cannot read the batch decision of query {query}: {last}")
    finally:
        c.close()


def record_decision(opts: SinkOptions, query: str, batch: int, txns: list[tuple[int, int, int]]) -> bool:
    """Commit offset ``batch + 1`` with the transactions' list to the decision group (one atomic record)."""
    from confluent_kafka import TopicPartition as KTP

    meta = encode_decision(batch, txns)
    if meta is None:
        import logging

        logging.getLogger("kafkalite.spark").warning(
            "batch %d: %d transactions do not fit a decision record; a re-run after a driver crash rewrites "
            "the uncommitted tasks' rows instead of committing them", batch, len(txns))
        return False
    c = _consumer(opts, decision_group(opts, query))
    try:
        c.commit(offsets=[KTP(opts.marker_topic, 0, batch + 1, metadata=meta)], asynchronous=False)
    finally:
        c.close()
    return True


def roll_forward(opts: SinkOptions, query: str, batch: int, partition: int, txn_id: str) -> bool:
    """Re-run of ``batch``: commit this task's transaction of the recorded decision, if any. True if it did."""
    import logging

    # our codec's client: on a re-run only (spark.source/sink import none)
    from kafkalite.spark.txnclient import TxnCommitError

    decision = read_decision(opts, query)
    if decision is None or decision[0] != batch or partition not in decision[1]:
        return False
    pid, epoch = decision[1][partition]
    try:
        opts.txn_client().commit(txn_id, pid, epoch)
    except TxnCommitError as exc:  # aborted by its timeout, or fenced by a later attempt: written again below
        logging.getLogger("kafkalite.spark").warning("batch %d task %d: decided transaction not committed (%s); "
                                                     "writing its rows again", batch, partition, exc)
        return False
    return True


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


def simulated_crash(opts: SinkOptions, batch: int, point: str) -> None:
    """Test hook: if ``crash-<batch>-<point>`` exists, the driver "dies" here: raise, and from then on
    :func:`abort_batch` of that batch does nothing (a dead driver cleans nothing up)."""
    if not opts.test_hook_dir:
        return
    armed = Path(opts.test_hook_dir) / f"crash-{batch}-{point}"
    with contextlib.suppress(FileNotFoundError):
        armed.rename(armed.with_name(f"crashed-{batch}-{point}"))
        raise RuntimeError(f"simulated driver crash at {point} of batch {batch} (testHookDir)")


def task_pause(opts: SinkOptions, batch: int, partition: int) -> None:
    """Test hook: once, if ``pause-task-<batch>-<partition>`` exists, the task (rows written, transaction open)
    writes its Python worker's pid to ``at-task-<batch>-<partition>`` and waits for ``go-task-...`` (or a
    SIGKILL of its executor)."""
    if not opts.test_hook_dir:
        return
    d = Path(opts.test_hook_dir)
    try:
        (d / f"pause-task-{batch}-{partition}").rename(d / f"paused-task-{batch}-{partition}")
    except FileNotFoundError:
        return
    (d / f"at-task-{batch}-{partition}").write_text(str(os.getpid()))
    end = time.monotonic() + 300
    while not (d / f"go-task-{batch}-{partition}").exists() and time.monotonic() < end:
        time.sleep(0.1)


def _crashed(opts: SinkOptions, batch: int) -> bool:
    return bool(opts.test_hook_dir) and any(Path(opts.test_hook_dir).glob(f"crashed-{batch}-*"))


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

    c = Consumer({**opts.client_config(), "group.id": group, "isolation.level": "read_committed",
                  "enable.auto.commit": False})
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

    query, batch, partition, _attempt = task_context()
    if opts.test_hook_dir and (Path(opts.test_hook_dir) / f"fail-task-always-{batch}-{partition}").exists():
        maybe_fail_task(opts, batch, partition)
    txn_id = group = f"{opts.txn_prefix}-{query}-{partition}"
    roll_forward(opts, query, batch, partition, txn_id)  # before init_transactions, which would abort it
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
        return TxnCommitMessage(rows=0, transactional_id=None, query=query, partition=partition)
    producer.begin_transaction()
    rows = produce_rows(producer, batches, opts, errors)
    meta_consumer = Consumer({**opts.client_config(), "group.id": group})
    try:
        producer.send_offsets_to_transaction([KTP(opts.marker_topic, 0, batch + 1)],
                                             meta_consumer.consumer_group_metadata(), 120)
    finally:
        meta_consumer.close()
    left = producer.flush(300)
    if errors or left:
        raise RuntimeError(f"{left} records unacknowledged, errors: {errors[:3]}")
    maybe_fail_task(opts, batch, partition)
    task_pause(opts, batch, partition)
    pid, epoch, state = opts.txn_client().describe(txn_id)
    if state != "Ongoing":
        raise RuntimeError(f"transaction {txn_id} is {state}, expected Ongoing")
    return TxnCommitMessage(rows=rows, transactional_id=txn_id, producer_id=pid, epoch=epoch, query=query,
                            partition=partition)


def commit_batch(opts: SinkOptions, messages: list[Any], batch: int) -> None:
    """Driver side: record the decision, then commit every task's transaction of ``batch``; raise if any was
    fenced (Spark re-runs the batch)."""

    client = opts.txn_client()
    todo = [m for m in messages if isinstance(m, TxnCommitMessage) and m.transactional_id]
    driver_pause(opts, batch, "before-commit")
    simulated_crash(opts, batch, "before-decision")
    if todo:
        record_decision(opts, todo[0].query, batch, [(m.partition, m.producer_id, m.epoch) for m in todo])
    for i, m in enumerate(todo):
        if i == len(todo) // 2 and i:
            driver_pause(opts, batch, "half-committed")
            simulated_crash(opts, batch, "half-committed")
        client.commit(m.transactional_id, m.producer_id, m.epoch)


def abort_batch(opts: SinkOptions, messages: list[Any], batch: int) -> None:
    """Driver side, after a failed batch: abort the open transactions of its successful tasks, or, if the
    batch's decision was recorded (its commit failed part way), complete their commits instead. Best effort:
    one already completed, or fenced by a newer attempt, answers an error that changes nothing."""
    import logging


    if _crashed(opts, batch):
        return
    todo = [m for m in messages if isinstance(m, TxnCommitMessage) and m.transactional_id]
    if not todo:
        return
    log = logging.getLogger("kafkalite.spark")
    try:
        decision = read_decision(opts, todo[0].query)
    except RuntimeError as exc:
        log.warning("batch %d: %s; aborting its transactions", batch, exc)
        decision = None
    commit = decision is not None and decision[0] == batch
    client = opts.txn_client(deadline_s=30.0)
    for m in todo:
        try:
            client.commit(m.transactional_id, m.producer_id, m.epoch, committed=commit)
        except Exception as exc:
            log.warning("batch %d: %s of %s: %s", batch, "commit" if commit else "abort", m.transactional_id, exc)
