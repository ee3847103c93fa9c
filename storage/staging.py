"""Appends too large for the log's owner thread: a worker thread writes the batch first, the owner adopts it.

Theory of operation. Copying a 50 MB batch into the page cache costs ~60-100 ms of CPU, and checking its
CRC-32C a few ms more: too long for the thread that owns a partition's log (the broker's event loop, shared by
every client). `stage(directory, batch)` does both from any thread without touching the log: it checks the
batch as `PartitionLog.append` does (`validate_batch`: length, CRC-32C, record count), stamps LogAppendTime if
asked (MaxTimestamp and the timestamp-type bit, then the CRC over the body), and writes the batch to
`<directory>/<random hex>.log.tmp`. The owner thread then calls `PartitionLog.append_staged`, which makes every
check `append` makes against the log as it is then (size, timestamps, producer sequence and epoch) and adopts
the file as a new segment at the log end offset: BaseOffset and PartitionLeaderEpoch (outside the CRC) go in
with one 61-byte write and the file is renamed `<base>.log`. The body is not copied a second time, so the
owner thread's share is a few syscalls whatever the batch's size.

A staged batch therefore starts a segment of its own (Kafka rolls only when a batch does not fit the active
segment); the appends after it go into that segment as usual. Nothing of the log changes before the
adoption, so appends, reads, retention and deletion go on meanwhile, and batches are adopted in the order
the owner thread adopts them. A stage that is not adopted is unlinked (`StagedBatch.discard`); one a crash
leaves behind is a `.tmp` file, which the loader deletes at the next open: until its adoption a staged
batch is not part of the log, so nothing acknowledged can depend on it.
"""

from __future__ import annotations

import contextlib
import os
import struct
import uuid
from dataclasses import dataclass

from kafkalite_storage import fs
from kafkalite_storage.batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE,
    MAX_TIMESTAMP_OFFSET,
    TIMESTAMP_TYPE_FLAG,
    BatchHeader,
    crc32c,
    validate_batch,
)
from kafkalite_storage.errors import InvalidRecordError, KafkaStorageError
from kafkalite_storage.handles import FileHandle

_H = struct.Struct(">h")
_Q = struct.Struct(">q")
_UI = struct.Struct(">I")
CRC_OFFSET = 17


@dataclass(slots=True)
class StagedBatch:
    """A client batch written to a `.tmp` file of a partition directory, waiting to be adopted."""

    batch: memoryview            # the client's bytes (a fallback re-append needs them)
    header: BatchHeader
    head: bytes                  # the first 61 bytes as written (LogAppendTime stamped, if asked)
    log_append_time: int | None  # the LogAppendTime stamped, or None (CreateTime)
    file: FileHandle
    adopted: bool = False        # the file is a segment's `.log` now (discard leaves it alone)

    def discard(self) -> None:
        """Remove the file unless a log adopted it; errors are ignored (the loader deletes leftovers)."""
        if self.adopted:
            return
        self.file.close()
        with contextlib.suppress(OSError):
            fs.unlink(self.file.path)


def stamp_log_append_time(head: bytearray, now: int) -> None:
    """Set the timestamp-type bit and MaxTimestamp of a batch header (the CRC is the caller's)."""
    _H.pack_into(head, ATTRIBUTES_OFFSET, _H.unpack_from(head, ATTRIBUTES_OFFSET)[0] | TIMESTAMP_TYPE_FLAG)
    _Q.pack_into(head, MAX_TIMESTAMP_OFFSET, now)


def stage(directory: str, batch: bytes | bytearray | memoryview, *,
          log_append_time_ms: int | None = None) -> StagedBatch:
    """Check a client batch and write it to a new `.tmp` file in `directory` (any thread). Raises what
    `PartitionLog.append` raises for the batch itself (CorruptRecordError, InvalidRecordError), and
    KafkaStorageError when the file cannot be written (nothing is left behind)."""
    mv = memoryview(batch)
    hdr = validate_batch(mv, exact_count=True)
    if hdr.is_control:
        raise InvalidRecordError("clients may not send control batches")
    head = bytearray(mv[:HEADER_SIZE])
    if log_append_time_ms is not None:
        stamp_log_append_time(head, log_append_time_ms)
        _UI.pack_into(head, CRC_OFFSET, crc32c(mv[HEADER_SIZE:], crc32c(memoryview(head)[ATTRIBUTES_OFFSET:])))
    f = FileHandle(os.path.join(directory, f"{uuid.uuid4().hex}.log.tmp"), os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    staged = StagedBatch(mv, hdr, bytes(head), log_append_time_ms, f)
    try:
        chunks: list[bytes | bytearray | memoryview] = [head, mv[HEADER_SIZE:]]
        written = f.pwritev(chunks, 0)
        while written < hdr.size:  # short write: finish from the rest
            n = f.pwrite(mv[written:] if written >= HEADER_SIZE else bytes(head[written:]) + bytes(mv[HEADER_SIZE:]),
                         written)
            if n <= 0:
                raise OSError(28, "no progress writing a staged batch")
            written += n
    except OSError as exc:
        staged.discard()
        raise KafkaStorageError(f"staging a batch in {directory} failed: {exc}") from exc
    return staged
