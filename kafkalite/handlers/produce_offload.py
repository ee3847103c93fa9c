"""Produce off the event loop: which batches are validated and written by worker threads, in what order.

Every client shares the event loop's thread, so no one request may hold it long (the issue's goal: under 20 ms
of loop CPU). For one partition's batch (bench/bench_bigbatch.py measures the figures):

- uncompressed, under ``STAGE_BYTES``: validated inline (the compiled walk, ~10 ns a record) and appended
  inline (CRC-32C ~0.07 ms/MB, the copy to the page cache ~0.3 ms at 1 MB, ~3.4 ms at 4 MB);
- compressed, under ``validation.THREAD_THRESHOLD_BYTES`` (128 KiB): validated inline until it has inflated
  ``validation.INLINE_INFLATE_BYTES`` (2 MiB, a few ms), then again in a worker thread; appended inline;
- compressed, from 128 KiB to ``STAGE_BYTES``: validated in a worker thread (streaming, bounded memory:
  kafkalite.validation), appended inline;
- ``STAGE_BYTES`` (4 MiB) or more, compressed or not: validated *and* written in one worker-thread job
  (kafkalite_storage.staging: CRC check, the copy into a ``.tmp`` file of the partition directory); the
  loop then adopts the file as the log's new segment (checks, a 61-byte header write, a rename: 0.3-2.3 ms
  whatever the size, against ~100 ms of loop CPU for an inline append of 50 MB). Such a batch starts a
  segment of its own (see kafkalite_storage.staging): 4 MiB keeps inline appends to a few ms while making
  that rare (batches that large need max.message.bytes raised from its 1 MiB default).

Order. While a batch of a partition is off the loop, later produce appends to that partition wait their turn
(``kafkalite.runtime.turns``), so the appends to a partition keep the order in which requests reached it,
as Kafka's log lock gives (LogValidator runs under it there). A partition with nothing in flight costs the
hot path one dict lookup. Requests on one connection are handled one at a time anyway, so a client's own
requests keep their order; acks are answered after the append, as before.

Memory: at most ``THREADS`` jobs run at once; each holds only its request's batch (already in memory) and the
streaming validator's pieces (64 KiB, plus 256 KiB of snappy history).
"""
from __future__ import annotations

from collections.abc import Callable

import trio

from kafkalite.runtime.turns import Turns
from kafkalite.validation import THREAD_THRESHOLD_BYTES, Rejection

__all__ = ["BUSY", "STAGE_BYTES", "THREADS", "THREAD_THRESHOLD_BYTES", "TURNS", "limiter", "off_loop", "validate",
           "validate_and_stage"]
from kafkalite_storage import PartitionLog
from kafkalite_storage.staging import StagedBatch, stage

#: batches at least this large are validated and written by a worker thread, then adopted by the loop
STAGE_BYTES = 4 * 1024 * 1024
#: worker threads validating or writing produce batches at once
THREADS = 2

_LIMITER: trio.lowlevel.RunVar[trio.CapacityLimiter] = trio.lowlevel.RunVar("produce_offload_threads")
#: the partitions with a batch off the loop, keyed by their PartitionLog objects (one per broker, so the brokers
#: of a cluster in one process, or brokers in several trio runs, never share a key); a key leaves the table
#: when its last task does
TURNS = Turns()
#: the table's keys, live: the hot path's ``plog in BUSY`` is one C-level lookup
BUSY = TURNS.keys()


def limiter() -> trio.CapacityLimiter:
    try:
        return _LIMITER.get()
    except LookupError:
        lim = trio.CapacityLimiter(THREADS)
        _LIMITER.set(lim)
        return lim


def off_loop(records: memoryview | bytes | None) -> bool:
    """Whether this batch's validation or write leaves the loop for sure (see the module docstring)."""
    if records is None:
        return False
    n = len(records)
    return n >= STAGE_BYTES or (n >= THREAD_THRESHOLD_BYTES and n > 22 and bool(records[22] & 0x07))


async def validate(check: Callable[[], Rejection | None]) -> Rejection | None:
    return await trio.to_thread.run_sync(check, limiter=limiter())


async def validate_and_stage(check: Callable[[], Rejection | None], records: memoryview | bytes,
                             plog: PartitionLog, now: int) -> tuple[Rejection | None, StagedBatch | None]:
    """Validate, then (if it passes) stage the batch in one worker-thread job; raises what staging raises
    (kafkalite_storage errors: a bad CRC, a failing disk)."""
    lat = now if plog.config.log_append_time else None
    directory = plog.dir

    def job() -> tuple[Rejection | None, StagedBatch | None]:
        rejection = check()
        if rejection is not None:
            return rejection, None
        return None, stage(directory, records, log_append_time_ms=lat)

    return await trio.to_thread.run_sync(job, limiter=limiter())
