"""The copy: each source partition's records into the same target partition, in offset order, exactly once.

**Writing.** An idempotent confluent-kafka producer (``acks=all``; at most 5 requests in flight, so retries never
reorder or duplicate) writes every data record with its key, value, headers and timestamp to the same
partition number. A run of *aborted* source records is written by a transactional producer inside a target
transaction that is then aborted: read_committed readers of the target never see it, read_uncommitted readers
see it as they saw it on the source. Before such a run the idempotent producer is flushed, and after it the
transactional one, so a partition's records reach the target in source order.

**The map.** Each delivery report carries the target offset; reports of one partition arrive in order, so the
source offset of a report is the first one still in flight for that partition. Those pairs build the offset map
(:mod:`kafkalite.migration.offsetmap`), journaled and fsynced about once a second together with, per
partition, the source offset below which everything is delivered.

**Resume.** After a kill the journal holds everything up to its last commit; the target may hold more (records
that were delivered, or still in flight, when the process died: a batch is on the target whole or not at all).
Before copying a partition again, the records the target has after the journaled ones are read back and
matched, in order, against the next source records (key, value, headers, timestamp); matches extend the map,
and the copy goes on after the last one. Nothing is written twice and nothing is skipped. A target record that
does not match means someone else wrote the partition: the migration stops and says where. An open transaction
of the killed run is aborted by the new run's ``init_transactions`` (it only ever held aborted records).

**Padding.** When a target partition is empty and the source's first record is at offset N > 0 (retention or
DeleteRecords moved its log start), N filler records are written and deleted with DeleteRecords (the target's
log start becomes N), so the partition keeps its offsets; only for topics whose cleanup policy includes
``delete`` (Kafka refuses DeleteRecords otherwise) and N up to ``max_padding``.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kafkalite.client.wire import error_name
from kafkalite.migration.offsetmap import Journal, PartitionMap
from kafkalite.migration.props import Side
from kafkalite.migration.source import RETRIABLE, RawRead, Rec, Source, SourceError

TP = tuple[str, int]
OFFSET_OUT_OF_RANGE = 1
CHECKPOINT_S = 1.0
MAX_IN_FLIGHT = 200_000        # records produced and not yet acknowledged, over all partitions


class CopyError(RuntimeError):
    """The copy cannot go on (the message says which partition and why)."""


@dataclass
class PartPlan:
    """One partition to copy: the source range and the target partition's offsets when the run started."""

    tp: TP
    start: int                 # the source's log start offset
    end: int                   # copy every source offset below (a stable offset: no open transaction below)
    target_end: int            # the target partition's end offset now
    target_start: int = 0      # the target partition's log start offset now
    can_pad: bool = False      # cleanup.policy includes delete (DeleteRecords allowed)


@dataclass
class _Part:
    plan: PartPlan
    map: PartitionMap
    fetch_at: int
    inflight: deque[int] = field(default_factory=deque)
    done: bool = False
    stalls: int = 0            # Fetch rounds in a row without progress


@dataclass
class CopyStats:
    records: int = 0           # records written this run
    matched: int = 0           # records found already on the target when resuming
    aborted: int = 0           # of them, written in aborted transactions
    padded: int = 0
    lost: list[str] = field(default_factory=list)   # ranges retention removed from the source before the copy


def same_record(src: Rec, key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]] | None,
                timestamp: int) -> bool:
    return (src.key == key and src.value == value and list(src.headers) == list(headers or [])
            and src.timestamp == timestamp)


class Copier:
    def __init__(self, source: Source, target: Side, journal: Journal, *, txn_id: str,
                 on_txn_use: Callable[[], None], compression: str = "lz4", max_message_bytes: int = 1 << 20,
                 timeout: float = 30.0, max_padding: int = 10_000_000,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.source = source
        self.target = target
        self.journal = journal
        self.txn_id = txn_id
        self.on_txn_use = on_txn_use
        self.timeout = timeout
        self.max_padding = max_padding
        self.progress = progress or (lambda done, records: None)
        self.stats = CopyStats()
        self._error: str | None = None
        self._parts: dict[TP, _Part] = {}
        # confluent-kafka: a dependency of the tools (the CLI checks it is there)
        from confluent_kafka import Producer

        base = {"enable.idempotence": True, "acks": "all", "linger.ms": 20, "compression.type": compression,
                "queue.buffering.max.messages": MAX_IN_FLIGHT + 10_000, "queue.buffering.max.kbytes": 512 * 1024,
                "message.max.bytes": max(max_message_bytes + 1024, 1_000_000),
                # a record the target has not acknowledged in 5 minutes stops the run (a re-run resumes)
                "message.timeout.ms": 300_000, "on_delivery": self._delivered}
        self.producer = Producer(target.client_config(**base))
        self._txn_conf = dict(base, **{"transactional.id": txn_id, "transaction.timeout.ms": 60_000,
                                       "message.timeout.ms": 60_000})
        self._txn: Any = None

    # -- delivery reports ------------------------------------------------------------------------------------
    def _delivered(self, err: Any, msg: Any) -> None:
        part = self._parts.get((msg.topic(), msg.partition()))
        if part is None or not part.inflight:   # not ours, or a filler record (padding): not a copied record
            return
        src = part.inflight.popleft()
        if err is not None:
            if self._error is None:
                self._error = (f"{msg.topic()}-{msg.partition()}: the target refused the record at source offset "
                               f"{src}: {err.str()}")
            return
        m = part.map
        tgt = msg.offset()
        if m.lens and src == m.srcs[-1] + m.lens[-1] and tgt == m.tgts[-1] + m.lens[-1]:
            m.lens[-1] += 1   # the common case, inline: the record continues the last run
        else:
            m.add(src, tgt)
        self.stats.records += 1

    def _check(self) -> None:
        if self._error:
            raise CopyError(self._error)

    # -- transactional producer (aborted runs) ---------------------------------------------------------------
    def txn_producer(self) -> Any:
        if self._txn is None:
            from confluent_kafka import Producer  # as above

            self.on_txn_use()
            self._txn = Producer(self.target.client_config(**self._txn_conf))
            self._txn.init_transactions(self.timeout)
        return self._txn

    def _write_aborted(self, part: _Part, recs: list[Rec]) -> None:
        self._flush(self.producer)
        txn = self.txn_producer()
        txn.begin_transaction()
        t, p = part.plan.tp
        for r in recs:
            part.inflight.append(r.offset)
            self._produce(txn, t, p, r)
        self._flush(txn)
        self._check()
        txn.abort_transaction(self.timeout)
        self.stats.aborted += len(recs)

    # -- producing -------------------------------------------------------------------------------------------
    @staticmethod
    def _produce(producer: Any, topic: str, partition: int, r: Rec) -> None:
        while True:
            try:
                producer.produce(topic, r.value, r.key, partition=partition, timestamp=max(r.timestamp, 0),
                                 headers=list(r.headers) if r.headers else None)
                return
            except BufferError:
                producer.poll(0.1)

    def _flush(self, producer: Any) -> None:
        while producer.flush(1.0) > 0:
            self._check()
        self._check()

    def _inflight(self) -> int:
        return sum(len(p.inflight) for p in self._parts.values())

    # -- the copy --------------------------------------------------------------------------------------------
    def prepare(self, plans: list[PartPlan]) -> None:
        """Journal state per partition: start it (padding it if it can keep its offsets that way), or resume
        it (finish an interrupted padding, or match what the target holds past the journal)."""
        for plan in plans:
            tp = plan.tp
            known = self.journal.known(tp)
            m = self.journal.get(tp)
            part = _Part(plan, m, max(plan.start, m.src_next))
            self._parts[tp] = part
            if m.src_next >= 0 and m.src_next < plan.start and m.src_next < plan.end:
                self.stats.lost.append(f"{tp[0]}-{tp[1]}: source offsets {m.src_next}..{plan.start - 1} were "
                                       "deleted on the source (retention) before they were copied")
            if not known:
                self.journal.start(tp, plan.target_end)
                pad = plan.target_end == 0 and plan.can_pad and 0 < plan.start < plan.end \
                    and plan.start <= self.max_padding
                if pad:
                    self.journal.padded(tp, plan.start)   # intent first: a resume finishes it
                self.journal.commit()
                if pad:
                    self._write_fillers(part, 0)
            elif m.padded_to > 0 and not m.srcs and plan.target_start < m.padded_to:
                if plan.target_end > m.padded_to:
                    raise CopyError(f"{tp[0]}-{tp[1]}: the target holds {plan.target_end} records where the "
                                    f"migration was padding to {m.padded_to}: written by someone else")
                self._write_fillers(part, plan.target_end)
            elif plan.target_end > m.target_next:
                self._reconcile(part)

    def _reconcile(self, part: _Part) -> None:
        """Resume: the target's records after the journaled ones are the next source records, in order."""
        from confluent_kafka import Consumer, TopicPartition  # as above

        tp, m = part.plan.tp, part.map
        start_tgt = m.target_next
        end_tgt = part.plan.target_end
        c = Consumer(self.target.client_config(**{"group.id": "kafkalite-migrate-resume", "enable.auto.commit": False,
                                                  "isolation.level": "read_uncommitted",
                                                  "enable.partition.eof": True}))
        try:
            c.assign([TopicPartition(tp[0], tp[1], start_tgt)])
            src_iter = self.source.iter_partition(tp, part.fetch_at, part.plan.end)
            last_src = -1
            deadline = time.monotonic() + self.timeout * 4
            while True:
                msg = c.poll(1.0)
                if msg is None:
                    if time.monotonic() > deadline:
                        raise CopyError(f"{tp[0]}-{tp[1]}: could not read the target back from offset {start_tgt}")
                    continue
                if msg.error():
                    if msg.error().code() == -191:   # _PARTITION_EOF
                        break
                    raise CopyError(f"{tp[0]}-{tp[1]}: reading the target back: {msg.error().str()}")
                if msg.offset() >= end_tgt:
                    break
                src = next(src_iter, None)
                ts = msg.timestamp()[1]
                if src is None or not same_record(src, msg.key(), msg.value(), msg.headers(), ts):
                    raise CopyError(f"{tp[0]}-{tp[1]}: the target's record at offset {msg.offset()} is not the "
                                    f"next source record ({'none left' if src is None else f'offset {src.offset}'}"
                                    "): the target partition was written by someone else since the last run")
                m.add(src.offset, msg.offset())
                last_src = src.offset
                self.stats.matched += 1
                if msg.offset() >= end_tgt - 1:
                    break
        finally:
            c.close()
        if last_src >= 0:
            part.fetch_at = last_src + 1
            self.journal.copied_through(tp, last_src + 1)
            self.journal.commit()

    def _write_fillers(self, part: _Part, have: int) -> None:
        """Filler records from target offset ``have`` up to the planned padding, then DeleteRecords below it."""
        from confluent_kafka import TopicPartition  # as above
        from confluent_kafka.admin import AdminClient  # as above

        t, p = part.plan.tp
        n = part.map.padded_to
        for _ in range(n - have):
            while True:
                try:   # a tombstone with an empty key: valid on compact,delete topics too; never read
                    self.producer.produce(t, None, b"", partition=p, timestamp=1)
                    break
                except BufferError:
                    self.producer.poll(0.1)
        self._flush(self.producer)
        admin = AdminClient(self.target.client_config())
        for f in admin.delete_records([TopicPartition(t, p, n)]).values():
            f.result(timeout=self.timeout)
        self.stats.padded += n - have

    def run(self) -> CopyStats:
        """Copy every planned partition from where it stands to its end."""
        active = {tp: part for tp, part in self._parts.items() if part.fetch_at < part.plan.end}
        for tp, part in self._parts.items():
            if tp not in active and part.map.src_next < part.plan.end:
                self.journal.copied_through(tp, part.plan.end)
        self.checkpoint()   # the starting point of the progress
        last_ckpt = time.monotonic()
        with ThreadPoolExecutor(1, thread_name_prefix="migrate-fetch") as pool:
            ahead: Future[dict[TP, RawRead]] | None = None
            while active:
                if self._inflight() > MAX_IN_FLIGHT:
                    self.producer.poll(0.05)
                    self._check()
                else:
                    if ahead is None:
                        ahead = pool.submit(self.source.fetch_raw, {tp: p.fetch_at for tp, p in active.items()})
                    try:
                        raws = ahead.result()
                    except SourceError as exc:
                        raise CopyError(str(exc)) from None
                    ahead = None
                    # the next Fetch goes out while this answer is decoded and produced (only when no partition
                    # needs the source for something else this round: one connection, one request at a time)
                    if all(r.error == 0 for r in raws.values()) and self._inflight() < MAX_IN_FLIGHT // 2:
                        nxt = {tp: min(r.next_offset, active[tp].plan.end) for tp, r in raws.items()}
                        nxt = {tp: o for tp, o in nxt.items() if o < active[tp].plan.end}
                        if nxt:
                            ahead = pool.submit(self.source.fetch_raw, nxt)
                    self._process(active, raws)
                self.producer.poll(0)
                self._check()
                now = time.monotonic()
                if now - last_ckpt >= CHECKPOINT_S:
                    self.checkpoint()
                    last_ckpt = now
            if ahead is not None:
                ahead.cancel()
        self._flush(self.producer)
        for part in self._parts.values():
            part.done = True
        self.checkpoint()
        return self.stats

    def _process(self, active: dict[TP, _Part], raws: dict[TP, RawRead]) -> None:
        for tp, raw in raws.items():
            part = active.get(tp)
            if part is None or raw.fetch_offset != part.fetch_at:
                continue   # a partition finished, or moved (an error) since the Fetch was sent
            try:
                r = raw.decode(tp)
            except SourceError as exc:
                raise CopyError(str(exc)) from None
            wants_at = raw.fetch_offset
            if r.error == OFFSET_OUT_OF_RANGE:
                start = self._log_start(tp)
                if start <= part.fetch_at:
                    raise CopyError(f"{tp[0]}-{tp[1]}: offset {part.fetch_at} is out of range on the source "
                                    f"(its log starts at {start})")
                self.stats.lost.append(f"{tp[0]}-{tp[1]}: source offsets {part.fetch_at}..{start - 1} were "
                                       "deleted on the source (retention) during the copy")
                part.fetch_at = start
                if part.fetch_at >= part.plan.end:
                    del active[tp]
                continue
            if r.error in RETRIABLE:
                part.stalls += 1   # a moved leader: the next round asks the new one
                if part.stalls > 300:
                    raise CopyError(f"{tp[0]}-{tp[1]}: the source keeps answering {error_name(r.error)}")
                continue
            if r.error:
                raise CopyError(f"{tp[0]}-{tp[1]}: the source refused the Fetch at offset {part.fetch_at}: "
                                f"{error_name(r.error)}")
            aborted_run: list[Rec] = []
            for rec in r.records:
                if rec.offset >= part.plan.end:
                    break
                if rec.aborted:
                    aborted_run.append(rec)
                    continue
                if aborted_run:
                    self._write_aborted(part, aborted_run)
                    aborted_run = []
                part.inflight.append(rec.offset)
                self._produce(self.producer, tp[0], tp[1], rec)
            if aborted_run:
                self._write_aborted(part, aborted_run)
            part.fetch_at = max(part.fetch_at, min(r.next_offset, part.plan.end))
            if r.next_offset <= wants_at:
                part.stalls += 1
                if part.stalls > 50:
                    raise CopyError(f"{tp[0]}-{tp[1]}: no progress at source offset {part.fetch_at} (its high "
                                    f"watermark is {r.high_watermark}, the planned end {part.plan.end})")
            else:
                part.stalls = 0
            if part.fetch_at >= part.plan.end:
                del active[tp]

    def _log_start(self, tp: TP) -> int:
        try:
            return self.source.list_offset(tp, -2)
        except SourceError as exc:
            raise CopyError(str(exc)) from None

    def checkpoint(self) -> None:
        """Journal each partition's map and the source offset below which everything is delivered."""
        done = 0
        for tp, part in self._parts.items():
            safe = part.inflight[0] if part.inflight else (part.plan.end if part.done else part.fetch_at)
            if safe > part.map.src_next or part.map.srcs:
                self.journal.copied_through(tp, safe)
            done += min(safe, part.plan.end) - min(part.plan.start, part.plan.end)
        self.journal.commit()
        self.progress(done, self.stats.records)

    def close(self) -> None:
        if self._txn is not None:
            self._txn.flush(5)
        self.producer.flush(5)
