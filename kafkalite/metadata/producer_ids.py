"""Producer-id allocation: ids come from kafkalite's own persisted blocks, never from ids seen in batches.

Kafka's controller hands producer ids out in blocks of 1,000 (``ProducerIdControlManager``): a
``ProducerIdsRecord`` in the metadata log says where the next block starts, and nothing a client writes into
a record batch ever moves it. A producer id that the broker never handed out but that appears in a batch is
just another producer to the partition's producer-state rules (sequence and epoch checks); it is never an
input to allocation. This module keeps the same separation:

- ``kafkalite-producer-ids`` holds the first id of the next unreserved block (ASCII decimal, written through
  tmp + fsync + rename before any id of the block is handed out). A copy, ``kafkalite-producer-ids.copy``,
  is written right after it, so one lost or damaged file is restored from the other: both are records of
  what kafkalite itself reserved.
- When both are missing or damaged, the next block starts one past the highest id kafkalite's own
  transaction coordinator knows (those ids were handed out here: no client can write ``__transaction_state``).
  Producer ids seen in partitions' producer state are *only* avoided: the block is moved past any of them
  that fall inside it, so the id of a producer whose batches are in a log is never handed to another one
  (its batches would be taken for duplicates or out-of-order sequences). A client-chosen id, however large,
  can therefore only make the allocator skip ahead inside the range, never push it out of it.
- Ids stay within Kafka's range, 0 .. 2^63-1: a file naming a start outside the range is damaged, and once
  the next block would end past 2^63-1 allocation fails with :class:`ProducerIdsExhausted` (Kafka's controller
  throws UnknownServerException for the same condition), which the handlers answer as an error; nothing
  out of range is ever handed out, persisted, or put into a response.

Writes are blocking but tiny (once per 1,000 ids); they run on the trio thread, like the room's other files.
An ``OSError`` while persisting a block (a full disk) hands out nothing; the callers answer a retriable error.
"""
from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from kafkalite_storage.checkpoints import write_atomic

log = logging.getLogger(__name__)

PRODUCER_IDS_FILE = "kafkalite-producer-ids"
PRODUCER_IDS_COPY = PRODUCER_IDS_FILE + ".copy"
PRODUCER_ID_BLOCK = 1000
#: Kafka's producer ids are int64 >= 0 (-1 means "none")
MAX_PRODUCER_ID = 2**63 - 1
#: the highest first id of a block (Kafka: exhausted once first > Long.MAX_VALUE - block size)
LAST_BLOCK_START = MAX_PRODUCER_ID - PRODUCER_ID_BLOCK


class ProducerIdsExhausted(Exception):
    """The next block would leave Kafka's producer-id range."""


def in_range(pid: int) -> bool:
    return 0 <= pid <= MAX_PRODUCER_ID


def read_block_start(path: Path) -> int | None:
    """The first id of the next unreserved block from one file; None when missing or damaged."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    if not text.isdigit() or len(text) > 19:
        return None
    value = int(text)
    return value if value <= LAST_BLOCK_START + PRODUCER_ID_BLOCK else None


def skip_in_use(start: int, in_use: Iterable[int]) -> int:
    """The first block start >= ``start`` whose block holds none of ``in_use`` (ids out of range ignored)."""
    ids = sorted({i for i in in_use if start <= i <= MAX_PRODUCER_ID})
    k = bisect.bisect_left(ids, start)
    while k < len(ids) and ids[k] < start + PRODUCER_ID_BLOCK:
        start = ids[k] + 1     # ids are sorted: everything before k is below the new start
        k += 1
    return start


class ProducerIdAllocator:
    """Hands out producer ids from blocks persisted in ``directory`` (see the module docstring).

    ``handed_out()`` yields ids kafkalite itself handed out that it can still see (the transaction
    coordinators' producer ids); ``in_use()`` yields ids some partition's producer state holds. Both are
    called only when neither file can be read."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self._next = 0
        self._limit = 0

    @property
    def path(self) -> Path:
        return self.dir / PRODUCER_IDS_FILE

    def allocate(self, handed_out: Callable[[], Iterable[int]], in_use: Callable[[], Iterable[int]]) -> int:
        if self._next >= self._limit:
            self._reserve(handed_out, in_use)
        pid = self._next
        self._next += 1
        return pid

    def _reserve(self, handed_out: Callable[[], Iterable[int]], in_use: Callable[[], Iterable[int]]) -> None:
        start = self._saved_start()
        if start is None:
            own = [i for i in handed_out() if in_range(i)]
            used = [i for i in in_use() if in_range(i)]
            start = skip_in_use(max(own, default=-1) + 1, used)
            fresh = not own and not used and not any(
                (self.dir / name).exists() for name in (PRODUCER_IDS_FILE, PRODUCER_IDS_COPY))
            if fresh:   # a new data directory: nothing was ever handed out, nothing to warn about
                log.debug("first producer-id block starts at %d (%s)", start, self.path)
            else:
                log.warning("%s and its copy are missing or damaged; producer ids continue at %d (after the ids "
                            "kafkalite handed out that it can still see, clear of the ids in use in the logs)",
                            self.path, start)
        start = max(start, self._limit)
        if start > LAST_BLOCK_START:
            raise ProducerIdsExhausted(f"no producer-id block left: the next would start at {start}, past "
                                       f"{LAST_BLOCK_START} (producer ids are int64)")
        limit = start + PRODUCER_ID_BLOCK
        data = f"{limit}\n".encode()
        write_atomic(str(self.path), data)            # the authority: written before any id is handed out
        try:
            write_atomic(str(self.dir / PRODUCER_IDS_COPY), data)
        except OSError as exc:   # the main file holds the block; a stale copy only ever lags behind it
            log.warning("cannot write %s: %s", PRODUCER_IDS_COPY, exc)
        self._next, self._limit = start, limit

    def _saved_start(self) -> int | None:
        main = read_block_start(self.path)
        copy = read_block_start(self.dir / PRODUCER_IDS_COPY)
        if main is None and copy is not None:
            log.warning("%s is missing or damaged; restored from %s (%d)", self.path, PRODUCER_IDS_COPY, copy)
        if main is None or copy is None:
            return main if copy is None else copy
        return max(main, copy)
