"""The record-batch headers of a partition's log files (Kafka's on-disk format, the same for both brokers), read
straight from the data dir: enough to tell where a duplicate in a log came from.

Each batch: base offset, last offset, producer id, producer epoch, base sequence, record count, partition leader
epoch. A retry the broker recognised leaves no trace; a record written twice by the same producer shows up as two
batches whose (producer id, epoch, sequence) differ: a new epoch or sequence means the client sent it again as new
records (an idempotent producer that reset its sequence, or a non-idempotent retry), the same triple twice would
mean the broker appended a retry it should have recognised.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

# baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32, attributes int16,
# lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16,
# baseSequence int32, recordCount int32
_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass(frozen=True)
class Batch:
    base_offset: int
    last_offset: int
    leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    def __str__(self) -> str:
        return (f"[{self.base_offset}..{self.last_offset}] pid {self.producer_id} epoch {self.producer_epoch} "
                f"seq {self.base_sequence} (+{self.count}) leader epoch {self.leader_epoch}")


def read_batches(partition_dir: Path) -> list[Batch]:
    """Every batch header of every ``*.log`` segment in ``partition_dir``, in offset order (a torn tail ends a
    segment's list)."""
    out: list[Batch] = []
    for seg in sorted(Path(partition_dir).glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + _HEADER.size <= len(data):
            (base, length, lepoch, magic, _crc, _attrs, last_delta, _t0, _t1, pid, pepoch, seq,
             count) = _HEADER.unpack_from(data, pos)
            if length <= 0 or magic != 2 or pos + 12 + length > len(data):
                break
            out.append(Batch(base, base + last_delta, lepoch, pid, pepoch, seq, count))
            pos += 12 + length
    return out


def describe_duplicates(partition_dir: Path, offsets_of_copies: list[list[int]], limit: int = 3) -> str:
    """For records seen at several offsets (``offsets_of_copies``: each record's offsets), the batches that hold
    each copy."""
    batches = read_batches(partition_dir)

    def holder(offset: int) -> str:
        b = next((b for b in batches if b.base_offset <= offset <= b.last_offset), None)
        return str(b) if b else "no batch"

    lines = []
    for offs in offsets_of_copies[:limit]:
        lines.append("; ".join(f"offset {o} in {holder(o)}" for o in offs))
    return "\n".join(lines)
