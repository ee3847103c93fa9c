"""A KRaft snapshot file: how Kafka persists its whole metadata image in ``__cluster_metadata-0``.

Name: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` (Kafka's ``Snapshots``); the snapshot stands for
the metadata log up to offset ``end offset - 1`` written in leader epoch ``epoch``. A file being written is
``...checkpoint.part`` and renamed when complete (Kafka deletes ``.part`` files at start).

Layout (Kafka's ``RecordsSnapshotWriter``), record batches v2 with offsets counted from 0 inside the file and the
snapshot's epoch as every batch's partition leader epoch:

1. a control batch with one SnapshotHeaderRecord (plus KRaftVersionRecord and VotersRecord when ``kraft.version``
   is 1: a static quorum, ``controller.quorum.voters``, has kraft.version 0 and writes neither);
2. data batches whose records have a null key and a metadata record as value (:mod:`kafkalite.eject.records`);
3. a control batch with one SnapshotFooterRecord.

When Kafka opens ``__cluster_metadata-0`` and finds a snapshot past the end of its (empty) log, it truncates the log
to start at the snapshot's end offset (``KafkaRaftLog.truncateToLatestSnapshot``) and hands the snapshot to the
controller and the broker as their starting image: exactly what happens when a Kafka node restarts.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from kafkalite.eject import records
from kafkalite_storage.checkpoints import fsync_dir
from kafkalite_storage.testing import Rec, encode_batch

#: bytes of record values per data batch (Kafka's raft batches are at most 8 MiB; its snapshots use far less)
BATCH_BYTES = 512 * 1024


def file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def _chunks(values: Iterable[bytes], limit: int) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    size = 0
    for v in values:
        if chunk and size + len(v) > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append(v)
        size += len(v)
    if chunk:
        yield chunk


def encode(values: Sequence[bytes], epoch: int, now_ms: int) -> bytes:
    """The bytes of a snapshot file holding ``values`` (framed metadata records), header and footer around them."""
    out = bytearray()
    offset = 0
    key, value = records.snapshot_header(now_ms)
    out += encode_batch([Rec(value=value, key=key)], base_offset=offset, base_timestamp=now_ms,
                        partition_leader_epoch=epoch, control=True)
    offset += 1
    for chunk in _chunks(values, BATCH_BYTES):
        out += encode_batch([Rec(value=v, key=None) for v in chunk], base_offset=offset, base_timestamp=now_ms,
                            partition_leader_epoch=epoch)
        offset += len(chunk)
    key, value = records.snapshot_footer()
    out += encode_batch([Rec(value=value, key=key)], base_offset=offset, base_timestamp=now_ms,
                        partition_leader_epoch=epoch, control=True)
    return bytes(out)


def write(directory: str, values: Sequence[bytes], end_offset: int, epoch: int, now_ms: int) -> str:
    """Write the snapshot ``end_offset``-``epoch`` into ``directory`` (``.part`` + fsync + rename, read-only as
    Kafka leaves a frozen snapshot); returns its path."""
    path = os.path.join(directory, file_name(end_offset, epoch))
    part = path + ".part"
    data = encode(values, epoch, now_ms)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(part, 0o400)
    os.replace(part, path)
    fsync_dir(directory)
    return path
