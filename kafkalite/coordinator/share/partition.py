"""One share-partition's delivery state (KIP-932): which records of a topic-partition a share group has
handed out, to whom, how often, and what became of them. Pure: no I/O, time comes in as ``now`` (ms).

Theory of operation, as Kafka's ``SharePartition``:

- The window ``[start, end)``: ``start`` is the share-partition start offset (SPSO), the first record whose
  delivery is not complete; ``end`` is the first offset never yet fetched for the group (Kafka's SPEO + 1).
  Every offset in the window has a state — AVAILABLE (0), ACQUIRED (1), ACKNOWLEDGED (2), ARCHIVED (4),
  Kafka's ``RecordState`` ids — and a delivery count. Records at or past ``end`` are implicitly available
  with count 0; records below ``start`` are complete.
- ``acquire`` hands AVAILABLE records (from the log batches the caller read at ``fetch_offset()``) to a member
  under a lock of ``group.share.record.lock.duration.ms``, adding one to their delivery count. The window may
  span at most ``group.share.partition.max.record.locks`` offsets (Kafka counts SPEO - SPSO + 1, whatever
  the states inside), so a slow or stuck record at the start stops new records from being acquired.
- Acknowledgements (from the member holding the lock): ACCEPT(1) -> ACKNOWLEDGED, RELEASE(2) -> AVAILABLE,
  REJECT(3) and GAP(0, an offset the client found no record at) -> ARCHIVED, RENEW(4, KIP-1222) extends the
  lock. A release and an expired lock make a record AVAILABLE again — unless its delivery count has
  reached ``group.share.delivery.count.limit``, then it is ARCHIVED (never delivered again). A share
  session that ends (connection closed, final epoch, member gone) releases its records the same way, the
  delivery counted (``release_member``, Kafka 4.2+). Acknowledgements of one request are validated as a whole first: any offset not ACQUIRED by that
  member fails the partition with INVALID_RECORD_STATE and nothing changes.
- The start moves past the contiguous prefix of ACKNOWLEDGED/ARCHIVED records.
- With a dead-letter queue (``dlq``: share.version 2 and the group's ``errors.deadletterqueue.topic.name``,
  KIP-1191) a REJECT and a release at the delivery count limit make the record ARCHIVING (3) instead: not
  delivered again, not complete either, so the start stays before it. The runs are queued in ``dlq_out``
  (first, last, count, cause) for the caller to write to the DLQ topic once the ARCHIVING state is persisted;
  ``complete_archiving`` then makes them ARCHIVED (Kafka 4.4's ``SharePartition.initiateDLQAndArchive``).
  GAP stays ARCHIVED at once. A persisted ARCHIVING run is loaded as such (``archiving`` lists it: its DLQ
  write is resumed, as Kafka's ``maybeResumeDlqArchiving``).
- Control batches (transaction markers) and, for ``read_committed``, batches of aborted transactions are
  never handed out: their offsets become ARCHIVED when first met, as Kafka's
  ``filterAbortedTransactionalAcquiredRecords`` archives them. Offsets the log no longer holds (compaction,
  gaps) are archived the same way.

Every transition that must survive a restart is returned as ``StateBatch`` runs (first, last, state, count)
for the caller to persist as a ShareUpdate (see ``records.py``); acquisition itself is not persisted, as in
Kafka: after a crash an acquired but unacknowledged record is available again with its last persisted count.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVING, ARCHIVED = 0, 1, 2, 3, 4
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
_TERMINAL = (ACKNOWLEDGED, ARCHIVED)
#: why a record goes to the DLQ (Kafka's ShareGroupDLQManager.CLIENT_REJECT / DELIVERY_COUNT_EXCEEDED)
CAUSE_REJECT, CAUSE_LIMIT = "reject", "limit"
_INC = bytes(min(i + 1, 255) for i in range(256))      # delivery count + 1, as a bytes.translate table

NONE = 0
INVALID_REQUEST = 42
INVALID_RECORD_STATE = 121


@dataclass(frozen=True, slots=True)
class Limits:
    lock_ms: int = 30_000          # group.share.record.lock.duration.ms
    delivery_limit: int = 5        # group.share.delivery.count.limit
    max_locks: int = 2000          # group.share.partition.max.record.locks


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets with one persisted state (ShareSnapshot/ShareUpdate ``StateBatches``)."""
    first: int
    last: int
    state: int
    count: int


@dataclass(frozen=True, slots=True)
class Acquired:
    """One ``AcquiredRecords`` entry of a ShareFetch response."""
    first: int
    last: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class LogBatch:
    """What the caller read from the log: one record batch's offsets and kind; ``ref`` is opaque (the bytes
    or file region the caller sends if the batch holds an acquired record)."""
    base: int
    last: int
    control: bool = False
    producer_id: int = -1
    transactional: bool = False
    ref: Any = None


def runs(items: Iterable[tuple[int, int, int]]) -> list[StateBatch]:
    """Coalesce (offset, state, count) triples, in offset order, into runs of equal state and count."""
    out: list[StateBatch] = []
    cur: list[int] | None = None
    for off, st, cnt in items:
        if cur is not None and off == cur[1] + 1 and st == cur[2] and cnt == cur[3]:
            cur[1] = off
            continue
        if cur is not None:
            out.append(StateBatch(*cur))
        cur = [off, off, st, cnt]
    if cur is not None:
        out.append(StateBatch(*cur))
    return out


class SharePartition:
    __slots__ = ("_cnt", "_dl", "_heap", "_owner", "_st", "dlq", "dlq_out", "limits", "start")

    def __init__(self, start: int, batches: Sequence[StateBatch] = (), limits: Limits | None = None,
                 dlq: bool = False) -> None:
        self.limits = limits or Limits()
        self.start = start
        self.dlq = dlq                    # rejected / exhausted records go ARCHIVING (then to the DLQ)
        self.dlq_out: list[tuple[int, int, int, str]] = []   # (first, last, count, cause) not yet handed out
        self._st = bytearray()            # state per offset in the window, index = offset - start
        self._cnt = bytearray()           # delivery count (Kafka's int16; the limit is at most 25)
        self._owner: list[str | None] = []
        self._dl: list[int] = []          # lock deadline while ACQUIRED
        self._heap: list[tuple[int, int, int]] = []   # (deadline, first, last), lazily invalidated
        for b in sorted(batches, key=lambda b: b.first):
            if b.last < start:
                continue
            first = max(b.first, start)
            self._grow(b.last + 1)         # gaps before it: unknown, i.e. new (AVAILABLE, count 0)
            state = b.state if b.state in (ARCHIVED, ACKNOWLEDGED, ARCHIVING) else AVAILABLE
            for off in range(first, b.last + 1):
                i = off - start
                self._st[i] = state
                self._cnt[i] = min(max(b.count, 0), 255)
        self._advance()

    # -- views ---------------------------------------------------------------------------------
    @property
    def end(self) -> int:
        """The first offset never fetched for the group (Kafka's share-partition end offset + 1)."""
        return self.start + len(self._st)

    def fetch_offset(self) -> int:
        """Where the next log read should begin: the first AVAILABLE record in the window, else ``end``."""
        i = self._st.find(AVAILABLE)
        return self.start + i if i >= 0 else self.end

    def has_available(self, log_end: int) -> bool:
        """True if a fetch could acquire something now (records below ``log_end``, room in the window)."""
        if self._st.find(AVAILABLE) >= 0:
            return True
        return self.end < log_end and len(self._st) < self.limits.max_locks

    def state_of(self, offset: int) -> tuple[int, int]:
        """(state, delivery count) of one offset (tests, DescribeShareGroupOffsets)."""
        if offset < self.start:
            return ARCHIVED if offset < 0 else ACKNOWLEDGED, 0
        if offset >= self.end:
            return AVAILABLE, 0
        i = offset - self.start
        return self._st[i], self._cnt[i]

    def in_flight(self) -> int:
        return len(self._st)

    def delivery_complete_count(self) -> int:
        """Offsets at or past the start whose delivery is complete (ShareSnapshot ``DeliveryCompleteCount``)."""
        return self._st.count(ACKNOWLEDGED) + self._st.count(ARCHIVED)

    def archiving(self) -> list[StateBatch]:
        """The runs waiting for their DLQ write (ARCHIVING)."""
        return [b for b in runs((self.start + i, st, self._cnt[i]) for i, st in enumerate(self._st))
                if b.state == ARCHIVING]

    def complete_archiving(self, first: int, last: int) -> list[StateBatch]:
        """The DLQ write of ``first..last`` is done (or gave up): ARCHIVING -> ARCHIVED; the runs to persist."""
        changed = []
        for off in range(max(first, self.start), min(last + 1, self.end)):
            i = off - self.start
            if self._st[i] == ARCHIVING:
                self._st[i] = ARCHIVED
                changed.append((off, ARCHIVED, self._cnt[i]))
        self._advance()
        return runs(changed)

    def _to_dlq(self, off: int, count: int, cause: str) -> None:
        out = self.dlq_out
        if out and out[-1][1] + 1 == off and out[-1][2] == count and out[-1][3] == cause:
            out[-1] = (out[-1][0], off, count, cause)
        else:
            out.append((off, off, count, cause))

    def acquired_by(self, member: str) -> int:
        return sum(1 for i, o in enumerate(self._owner) if o == member and self._st[i] == ACQUIRED)

    def persisted_batches(self) -> list[StateBatch]:
        """The window as it must be persisted in a snapshot: acquisitions are not persisted (an acquired
        record is AVAILABLE with the count it had before it was acquired), never-delivered offsets are left
        out (they are new again after a restart)."""
        def items() -> Iterable[tuple[int, int, int]]:
            for i, st in enumerate(self._st):
                cnt = self._cnt[i]
                if st == ACQUIRED:
                    st, cnt = AVAILABLE, cnt - 1
                if st == AVAILABLE and cnt <= 0:
                    continue
                yield self.start + i, st, cnt
        return runs(items())

    # -- transitions ---------------------------------------------------------------------------
    def acquire(self, member: str, batches: Sequence[LogBatch], max_records: int, now: int, *,
                aborted: Sequence[tuple[int, int, int]] = (),
                record_limit: bool = False) -> tuple[list[Acquired], list[LogBatch], list[StateBatch]]:
        """Hand AVAILABLE records of ``batches`` (whole log batches read from ``fetch_offset()`` on, in order)
        to ``member``. ``max_records`` is a soft limit checked between log batches (Kafka's batch-optimized
        acquire mode) or, with ``record_limit`` (ShareAcquireMode 1, KIP-1206), an exact one. ``aborted``
        lists (producer id, first offset, last offset) of aborted transactions for a read_committed group.
        Returns (acquired ranges, the log batches holding them, archived runs)."""
        if max_records <= 0 or not batches:
            return [], [], []
        lim = self.limits
        deadline = now + lim.lock_ms
        acquired: list[Acquired] = []
        archived: list[tuple[int, int, int]] = []
        used: list[LogBatch] = []
        cursor = self.fetch_offset()
        taken = 0
        full = False
        # Kafka 4.3's throttling of redeliveries: from half the delivery limit on, a batch of records that keep
        # coming back is handed out in ever smaller pieces, and a record on its last attempt alone, so one bad
        # record does not use up the attempts of the records around it
        throttle = max(2, -(-lim.delivery_limit // 2))
        last_try = lim.delivery_limit - 1 if lim.delivery_limit > 2 else None
        cap: int | None = None
        for b in batches:
            if taken >= max_records or full:
                break
            # offsets the log does not hold between the previous batch and this one: complete
            for off in range(max(cursor, self.start), min(b.base, self.end + lim.max_locks)):
                if not self._ensure(off):
                    break
                i = off - self.start
                if self._st[i] == AVAILABLE:
                    self._st[i] = ARCHIVED
                    archived.append((off, ARCHIVED, self._cnt[i]))
            cursor = max(cursor, b.last + 1)
            skip = b.control or (b.transactional and _is_aborted(b, aborted))
            if not skip and not (record_limit and b.last - max(b.base, self.start) + 1 > max_records - taken):
                n = self._acquire_whole(member, b, deadline, acquired, throttle)
                if n:
                    taken += n
                    used.append(b)
                    continue
            took = False
            for off in range(max(b.base, self.start), b.last + 1):
                if not self._ensure(off):
                    full = True
                    break
                i = off - self.start
                if self._st[i] != AVAILABLE:
                    continue
                if skip:
                    self._st[i] = ARCHIVED
                    archived.append((off, ARCHIVED, self._cnt[i]))
                    continue
                prior = self._cnt[i]
                if last_try is not None and prior == last_try and taken > 0:
                    full = True                 # a record on its last delivery goes alone, in the next fetch
                    break
                if prior >= throttle and cap is None:
                    cap = max(1, (b.last - b.base + 1) >> (prior - throttle + 1))
                cnt = min(prior + 1, 255)
                self._cnt[i] = cnt
                self._st[i] = ACQUIRED
                self._owner[i] = member
                self._dl[i] = deadline
                _add_range(acquired, off, off, cnt)
                took = True
                taken += 1
                if (last_try is not None and prior == last_try) or (cap is not None and taken >= cap) \
                        or (record_limit and taken >= max_records):
                    full = True
                    break
            if took:
                used.append(b)
        for r in acquired:
            heapq.heappush(self._heap, (deadline, r.first, r.last))
        self._advance()
        return acquired, used, runs(archived)

    def _acquire_whole(self, member: str, b: LogBatch, deadline: int, acquired: list[Acquired], throttle: int) -> int:
        """The common case in one step: every offset of the batch (from the start on) available, with one
        delivery count below the throttling threshold, and inside the window. Returns the records acquired
        (0: use the per-offset path)."""
        lo, hi = max(b.base, self.start), b.last
        if hi < lo or hi - self.start + 1 > self.limits.max_locks:
            return 0
        self._grow(hi + 1)
        i0, i1 = lo - self.start, hi - self.start + 1
        n = i1 - i0
        if self._st.count(AVAILABLE, i0, i1) != n:
            return 0
        cnts = self._cnt[i0:i1].translate(_INC)
        if cnts.count(cnts[0]) != n or cnts[0] > throttle:
            return 0
        self._cnt[i0:i1] = cnts
        self._st[i0:i1] = bytes([ACQUIRED]) * n
        self._owner[i0:i1] = [member] * n
        self._dl[i0:i1] = [deadline] * n
        _add_range(acquired, lo, hi, cnts[0])
        return n

    def acknowledge(self, member: str, batches: Sequence[tuple[int, int, Sequence[int]]], now: int, *,
                    allow_renew: bool = False) -> tuple[int, list[StateBatch]]:
        """Apply one request's acknowledgement batches (first, last, types) for ``member``: all or nothing.
        Batches must be in offset order without overlap. Returns (error code, changed runs to persist)."""
        lim = self.limits
        top = RENEW if allow_renew else REJECT
        prev = None
        for first, last, types in batches:
            if first > last or not types or (len(types) != 1 and len(types) != last - first + 1) \
                    or (prev is not None and first <= prev):
                return INVALID_REQUEST, []
            prev = last
            if any(not 0 <= t <= top for t in types):
                return INVALID_REQUEST, []
        for first, last, _types in batches:
            if first < self.start or last >= self.end:
                return INVALID_RECORD_STATE, []
            i0, i1 = first - self.start, last - self.start + 1
            if self._st.count(ACQUIRED, i0, i1) != i1 - i0 or self._owner[i0:i1].count(member) != i1 - i0:
                return INVALID_RECORD_STATE, []
        changed: list[StateBatch] = []
        renew_deadline = now + lim.lock_ms
        for first, last, types in batches:
            i0, i1 = first - self.start, last - self.start + 1
            n = i1 - i0
            if len(types) == 1 or types.count(types[0]) == len(types):
                t = types[0]
                if t == RENEW:
                    self._dl[i0:i1] = [renew_deadline] * n
                    heapq.heappush(self._heap, (renew_deadline, first, last))
                    continue
                cnts = self._cnt[i0:i1]
                if t == ACCEPT:
                    states: bytes | bytearray = bytes([ACKNOWLEDGED]) * n
                elif t == RELEASE:
                    states = cnts.translate(self._release_table())
                elif t == REJECT and self.dlq:
                    states = bytes([ARCHIVING]) * n
                else:                       # REJECT, GAP
                    states = bytes([ARCHIVED]) * n
                self._st[i0:i1] = states
                if self.dlq and ARCHIVING in states:
                    for k in range(n):
                        if states[k] == ARCHIVING:
                            self._to_dlq(first + k, cnts[k], CAUSE_REJECT if t == REJECT else CAUSE_LIMIT)
                self._owner[i0:i1] = [None] * n
                if states.count(states[0]) == n and cnts.count(cnts[0]) == n:
                    changed.append(StateBatch(first, last, states[0], cnts[0]))
                else:
                    changed.extend(runs((first + k, states[k], cnts[k]) for k in range(n)))
                continue
            items: list[tuple[int, int, int]] = []
            for k, t in enumerate(types):
                i = i0 + k
                if t == RENEW:
                    self._dl[i] = renew_deadline
                    heapq.heappush(self._heap, (renew_deadline, first + k, first + k))
                    continue
                if t == ACCEPT:
                    st = ACKNOWLEDGED
                elif t == RELEASE:
                    st = self._release(i)
                elif t == REJECT and self.dlq:
                    st = ARCHIVING
                    self._to_dlq(first + k, self._cnt[i], CAUSE_REJECT)
                else:
                    st = ARCHIVED
                self._st[i] = st
                self._owner[i] = None
                items.append((first + k, st, self._cnt[i]))
            changed.extend(runs(items))
        self._advance()
        return NONE, _merge(changed)

    def _release_table(self) -> bytes:
        lim = self.limits.delivery_limit
        done = ARCHIVING if self.dlq else ARCHIVED
        return bytes(done if c >= lim else AVAILABLE for c in range(256))

    def release_member(self, member: str) -> list[StateBatch]:
        """A member's share session ended (its connection closed, it sent the final epoch, it was replaced
        by a new session, or the member left): its acquired records are released at once, the delivery
        counted, as an expired lock or a RELEASE acknowledgement: AVAILABLE, or ARCHIVED at the delivery limit.
        This is Kafka 4.2+'s ``SharePartition.releaseAcquiredRecords`` (``DeliveryCountOps.NO_OP``,
        KAFKA-19972: a consumer crashing on a record must not get it forever; checked against Kafka 4.4, whose
        next consumer saw delivery count 2). Kafka before took the count back by one (``DECREASE``)."""
        changed: list[tuple[int, int, int]] = []
        for i, owner in enumerate(self._owner):
            if owner == member and self._st[i] == ACQUIRED:
                changed.append((self.start + i, self._release(i), self._cnt[i]))
        self._advance()
        return runs(changed)

    def next_deadline(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def poll(self, now: int) -> list[StateBatch]:
        """Expire acquisition locks due by ``now``: the records are released as by a RELEASE."""
        changed: list[tuple[int, int, int]] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, first, last = heapq.heappop(heap)
            for off in range(max(first, self.start), min(last + 1, self.end)):
                i = off - self.start
                if self._st[i] == ACQUIRED and self._dl[i] == deadline:
                    changed.append((off, self._release(i), self._cnt[i]))
        if changed:
            changed.sort()
            self._advance()
        return runs(changed)

    def move_start(self, offset: int) -> bool:
        """The log start moved past the share-partition start (retention, DeleteRecords): records below it are
        gone and their delivery is complete. True if the start changed."""
        if offset <= self.start:
            return False
        n = min(offset - self.start, len(self._st))
        self._drop(n)
        self.start = offset
        return True

    def reset(self, offset: int) -> None:
        """AlterShareGroupOffsets / a new state epoch: forget everything, start at ``offset``."""
        self._drop(len(self._st))
        self._heap.clear()
        self.start = offset

    # -- internals -----------------------------------------------------------------------------
    def _release(self, i: int) -> int:
        st = AVAILABLE
        if self._cnt[i] >= self.limits.delivery_limit:
            st = ARCHIVING if self.dlq else ARCHIVED
            if self.dlq:
                self._to_dlq(self.start + i, self._cnt[i], CAUSE_LIMIT)
        self._st[i] = st
        self._owner[i] = None
        return st

    def _ensure(self, off: int) -> bool:
        """Track ``off`` (growing the window with new offsets), unless the window would pass max_locks."""
        if off < self.end:
            return True
        if off - self.start + 1 > self.limits.max_locks:
            return False
        self._grow(off + 1)
        return True

    def _grow(self, new_end: int) -> None:
        n = new_end - self.end
        if n > 0:
            self._st.extend(bytes(n))
            self._cnt.extend(bytes(n))
            self._owner.extend([None] * n)
            self._dl.extend([0] * n)

    def _drop(self, n: int) -> None:
        if n > 0:
            del self._st[:n], self._cnt[:n], self._owner[:n], self._dl[:n]
            self.start += n

    def _advance(self) -> None:
        st = self._st
        ends = [i for i in (st.find(AVAILABLE), st.find(ACQUIRED), st.find(ARCHIVING)) if i >= 0]
        self._drop(min(ends) if ends else len(st))


def _add_range(out: list[Acquired], first: int, last: int, count: int) -> None:
    if out and out[-1].last + 1 == first and out[-1].delivery_count == count:
        out[-1] = Acquired(out[-1].first, last, count)
    else:
        out.append(Acquired(first, last, count))


def split_acquired(acquired: list[Acquired], used: Sequence[LogBatch], batch_size: int) -> list[Acquired]:
    """ShareFetch ``BatchSize``: newly acquired records (delivery count 1) are answered as AcquiredRecords ranges
    of about ``batch_size`` records, cut at log batch boundaries — a new range starts at the first log batch
    at least ``batch_size`` offsets past the current range's first offset (Kafka's ``createBatches`` in
    batch-optimized mode). Redelivered records keep their ranges."""
    bases = sorted(b.base for b in used)
    out: list[Acquired] = []
    for a in acquired:
        if a.delivery_count != 1 or a.last - a.first + 1 <= batch_size:
            out.append(a)
            continue
        first = a.first
        for base in bases:
            if base <= first or base > a.last:
                continue
            if base - first >= batch_size:
                out.append(Acquired(first, base - 1, 1))
                first = base
        out.append(Acquired(first, a.last, 1))
    return out


def _merge(batches: list[StateBatch]) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        p = out[-1] if out else None
        if p is not None and p.last + 1 == b.first and p.state == b.state and p.count == b.count:
            out[-1] = StateBatch(p.first, b.last, p.state, p.count)
        else:
            out.append(b)
    return out


def _is_aborted(b: LogBatch, aborted: Sequence[tuple[int, int, int]]) -> bool:
    return any(pid == b.producer_id and first <= b.base <= last for pid, first, last in aborted)
