"""Idempotent / transactional producer state (Kafka's ProducerStateManager and ProducerAppendInfo, 3.9).

Theory of operation. Per producer id the broker keeps the current epoch, the metadata of the last five data
batches (last sequence, last offset, offset delta, max timestamp), the coordinator epoch of the last
transaction marker and the first offset of the open transaction, if any.

Client appends are checked before anything is written:
- a batch equal (same epoch, same first and last sequence) to one of the cached five is a duplicate: the
  broker answers with the original offsets and writes nothing;
- an epoch lower than the current one is fenced (InvalidProducerEpochError);
- with a new (higher) epoch the first sequence must be 0, unless the producer was unknown;
- with the same epoch the first sequence must follow the last one (int32 wraps to 0), otherwise
  OutOfOrderSequenceError. A producer the broker has no state for may start at any sequence (Kafka 3.x no
  longer answers UNKNOWN_PRODUCER_ID on append).
Coordinator-origin appends (validate_producer=False) and replays after a restart skip the sequence check.

Snapshots `<offset>.snapshot` (offset = the log end offset they describe): version int16 = 1, CRC-32C uint32
over everything after byte 6, then int32 count and 46-byte entries: producerId int64, epoch int16,
lastSequence int32, lastOffset int64, offsetDelta int32, timestamp int64, coordinatorEpoch int32,
currentTxnFirstOffset int64 (-1 when no transaction is open). Written at roll and on clean close (tmp +
fsync + rename); on load the newest readable snapshot <= the log end offset is taken and the log is
replayed from there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
import threading
from collections import deque
from dataclasses import dataclass, field

from kafkalite_storage import fs
from kafkalite_storage.batch import (
    INT32_MAX,
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    BatchHeader,
    crc32c,
    increment_sequence,
)
from kafkalite_storage.checkpoints import write_atomic
from kafkalite_storage.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
SNAPSHOT_VERSION = 1
_ENTRY = struct.Struct(">qhiqiqiq")
_SNAP_HEAD = struct.Struct(">hIi")
_SNAPSHOT_RE = re.compile(r"^(\d{20})\.snapshot$")


def decrement_sequence(seq: int, delta: int) -> int:
    if seq < delta:
        return INT32_MAX - (delta - seq) + 1
    return seq - delta


@dataclass(slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, hdr: BatchHeader) -> BatchMetadata | None:
        if hdr.producer_epoch != self.epoch:
            return None
        first, last = hdr.base_sequence, hdr.last_sequence
        for m in self.batches:
            if m.first_seq == first and m.last_seq == last:
                return m
        return None

    def _set_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Producer entries for one partition plus the snapshot files in its directory."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        # Expiry runs in the housekeeping worker thread while appends update entries on the event loop:
        # both take this lock so an expiring scan never drops an entry an append is just refreshing.
        self._lock = threading.Lock()

    # ---- checks (client path) --------------------------------------------------------------------
    def check(self, hdr: BatchHeader, *, client: bool) -> BatchMetadata | None:
        """Validate a data batch before it is written; return cached metadata when it is a duplicate."""
        entry = self.producers.get(hdr.producer_id)
        if entry is None:
            return None
        if client:
            dup = entry.find_duplicate(hdr)
            if dup is not None:
                return dup
        if hdr.producer_epoch < entry.epoch:
            if client:
                raise InvalidProducerEpochError(
                    f"epoch {hdr.producer_epoch} of producer {hdr.producer_id} is older than {entry.epoch}"
                )
            return None
        if not client:
            return None
        if hdr.producer_epoch != entry.epoch:
            if hdr.base_sequence != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence {hdr.base_sequence} for new epoch {hdr.producer_epoch} of producer "
                    f"{hdr.producer_id}: expected 0"
                )
        elif not _in_sequence(entry.last_seq, hdr.base_sequence):
            raise OutOfOrderSequenceError(
                f"out of order sequence for producer {hdr.producer_id}: {hdr.base_sequence} "
                f"(epoch {hdr.producer_epoch}) after {entry.last_seq}"
            )
        if hdr.is_transactional is False and entry.current_txn_first_offset >= 0 and not hdr.is_control:
            raise InvalidTxnStateError(
                f"non-transactional batch from producer {hdr.producer_id} during an open transaction"
            )
        return None

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"marker epoch {producer_epoch} of producer {producer_id} is older than {entry.epoch}"
            )
        if entry.coordinator_epoch > coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}"
            )

    # ---- updates ---------------------------------------------------------------------------------
    def update(self, hdr: BatchHeader, base_offset: int, max_timestamp: int) -> None:
        """Record a written data batch (header fields other than offsets are the stored ones)."""
        with self._lock:
            self._update(hdr, base_offset, max_timestamp)

    def _update(self, hdr: BatchHeader, base_offset: int, max_timestamp: int) -> None:
        pid = hdr.producer_id
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid)
        entry._set_epoch(hdr.producer_epoch)
        last_offset = base_offset + hdr.last_offset_delta
        if hdr.base_sequence != NO_SEQUENCE:
            entry.batches.append(
                BatchMetadata(
                    increment_sequence(hdr.base_sequence, hdr.last_offset_delta),
                    last_offset,
                    hdr.last_offset_delta,
                    max_timestamp,
                )
            )
        entry.last_timestamp = max_timestamp
        if hdr.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = base_offset
            self.ongoing[pid] = base_offset

    def complete_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, offset: int, timestamp: int,
        aborted: bool,
    ) -> CompletedTxn | None:
        """Record a written COMMIT/ABORT marker; returns the completed transaction if it had data."""
        with self._lock:
            return self._complete_marker(producer_id, producer_epoch, coordinator_epoch, offset, timestamp,
                                         aborted)

    def _complete_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, offset: int, timestamp: int,
        aborted: bool,
    ) -> CompletedTxn | None:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        done = None
        if entry.current_txn_first_offset >= 0:
            done = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, aborted)
        entry._set_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = -1
        entry.last_timestamp = timestamp
        self.ongoing.pop(producer_id, None)
        return done

    def peek_completed(self, producer_id: int, offset: int) -> CompletedTxn | None:
        """The aborted transaction an ABORT marker at `offset` will complete, without changing anything (the
        log writes its `.txnindex` entry before it commits the marker with `complete_marker`)."""
        entry = self.producers.get(producer_id)
        if entry is None or entry.current_txn_first_offset < 0:
            return None
        return CompletedTxn(producer_id, entry.current_txn_first_offset, offset, True)

    def first_unstable_offset(self) -> int | None:
        return min(self.ongoing.values()) if self.ongoing else None

    def last_stable_offset_after(self, txn: CompletedTxn) -> int:
        """LSO recorded with an aborted transaction (Kafka: next incomplete txn's first offset)."""
        others = [off for pid, off in self.ongoing.items() if pid != txn.producer_id]
        return min(others) if others else txn.last_offset + 1

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for producer.id.expiration.ms (by their last batch timestamp) with no open
        transaction, as Kafka's removeExpiredProducers does; returns how many were removed."""
        with self._lock:
            gone = [pid for pid, e in list(self.producers.items())
                    if e.current_txn_first_offset < 0 and now_ms - e.last_timestamp >= expiration_ms]
            for pid in gone:
                del self.producers[pid]
        return len(gone)

    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()

    def truncate_to(self, end_offset: int) -> None:
        """Drop knowledge of batches at or above `end_offset` (caller replays the log afterwards)."""
        self.clear()

    # ---- snapshots -------------------------------------------------------------------------------
    def snapshot_offsets(self) -> list[int]:
        out = []
        for name in os.listdir(self.dir):
            m = _SNAPSHOT_RE.match(name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.dir, f"{offset:020d}.snapshot")

    def encode_snapshot(self) -> bytes:
        body = bytearray(struct.pack(">i", len(self.producers)))
        for pid, e in self.producers.items():
            if e.batches:
                m = e.batches[-1]
                last_seq, last_off, delta = m.last_seq, m.last_offset, m.offset_delta
            else:
                last_seq, last_off, delta = NO_SEQUENCE, -1, 0
            body += _ENTRY.pack(pid, e.epoch, last_seq, last_off, delta, e.last_timestamp, e.coordinator_epoch,
                                e.current_txn_first_offset)
        return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + bytes(body)

    def take_snapshot(self, offset: int, keep: int = 3, sync: bool = True) -> str:
        """Write `<offset>.snapshot` atomically (tmp + rename; fsynced unless `sync=False`, then the caller
        syncs it later); keep only the newest `keep` snapshot files. A torn snapshot fails its CRC and is
        ignored at load, so deferring the fsync costs only a longer replay."""
        path = self.snapshot_path(offset)
        write_atomic(path, self.encode_snapshot(), sync=sync)   # on failure older snapshots stay, no tmp left
        for old in self.snapshot_offsets()[:-keep]:
            with contextlib.suppress(OSError):  # an old snapshot left behind costs nothing but space
                self.delete_snapshot(old)
        return path

    def delete_snapshot(self, offset: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            fs.unlink(self.snapshot_path(offset))

    def delete_snapshots_after(self, offset: int) -> None:
        for off in self.snapshot_offsets():
            if off > offset:
                self.delete_snapshot(off)

    @staticmethod
    def decode_snapshot(data: bytes) -> list[ProducerEntry]:
        """Parse a snapshot file; raises ValueError when it is corrupt."""
        if len(data) < 10:
            raise ValueError("snapshot too short")
        version, crc, count = _SNAP_HEAD.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise ValueError(f"unknown snapshot version {version}")
        if crc32c(memoryview(data)[6:]) != crc:
            raise ValueError("snapshot CRC mismatch")
        if count < 0 or len(data) != 10 + count * _ENTRY.size:
            raise ValueError("snapshot size does not match its entry count")
        out = []
        for i in range(count):
            pid, epoch, last_seq, last_off, delta, ts, coord, txn_first = _ENTRY.unpack_from(
                data, 10 + i * _ENTRY.size
            )
            e = ProducerEntry(pid, epoch, coordinator_epoch=coord, last_timestamp=ts,
                              current_txn_first_offset=txn_first)
            if last_off >= 0:
                e.batches.append(BatchMetadata(last_seq, last_off, delta, ts))
            out.append(e)
        return out

    def load_latest_snapshot(self, max_offset: int) -> int | None:
        """Load the newest valid snapshot at or below `max_offset`; return its offset (None: start empty)."""
        self.clear()
        for off in reversed(self.snapshot_offsets()):
            if off > max_offset:
                continue
            try:
                with open(self.snapshot_path(off), "rb") as f:
                    entries = self.decode_snapshot(f.read())
            except (OSError, ValueError) as exc:
                log.warning("%s: ignoring producer snapshot %d: %s", self.dir, off, exc)
                self.delete_snapshot(off)
                continue
            for e in entries:
                self.producers[e.producer_id] = e
                if e.current_txn_first_offset >= 0:
                    self.ongoing[e.producer_id] = e.current_txn_first_offset
            return off
        return None
