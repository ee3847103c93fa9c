"""Reading a partition's log for a share fetch: the batches from an offset as ``LogBatch`` descriptors
(offsets, control/transactional flags, producer id) with the file region to send, and the aborted
transactions a read_committed group must not see. Only the 61-byte batch headers are read (pread), never
the records: the client gets the batches' bytes verbatim, as with Fetch."""
from __future__ import annotations

import struct
from typing import Any

from kafkalite.coordinator.share.partition import LogBatch

_HEAD = struct.Struct(">qiibIhiqqqhii")   # the 61-byte record batch v2 header
_CONTROL, _TRANSACTIONAL = 0x20, 0x10


def read_batches(plog: Any, offset: int, end: int, max_bytes: int) -> list[LogBatch]:
    """Whole batches holding offsets in [offset, end), up to about ``max_bytes`` (at least one batch)."""
    if offset >= end:
        return []
    out: list[LogBatch] = []
    for handle, pos, length in plog.read(offset, max(max_bytes, 1), min_one=True):
        cur, stop = pos, pos + length
        while cur + _HEAD.size <= stop:
            head = handle.pread(_HEAD.size, cur) if not isinstance(handle, int) else _pread(handle, cur)
            if len(head) < _HEAD.size:
                return out
            (base, blen, _ple, magic, _crc, attrs, last_delta, _bt, _mt, pid, _pe, _seq,
             _n) = _HEAD.unpack(head)
            size = 12 + blen
            if base >= end:
                return out
            if magic == 2 and base + last_delta >= offset:
                out.append(LogBatch(base, base + last_delta, bool(attrs & _CONTROL), pid,
                                    bool(attrs & _TRANSACTIONAL), (handle, cur, size)))
            cur += size
    return out


def _pread(fd: int, pos: int) -> bytes:
    import os
    return os.pread(fd, _HEAD.size, pos)


def aborted_ranges(plog: Any, offset: int, end: int) -> list[tuple[int, int, int]]:
    """(producer id, first offset, marker offset) of transactions aborted within [offset, end)."""
    lister = getattr(plog, "aborted_transactions", None)
    if lister is None:
        return []
    return [(a.producer_id, a.first_offset, a.last_offset) for a in lister(offset, end)]
