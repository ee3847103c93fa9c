"""Aborted-transaction index `.txnindex` (Kafka's TransactionIndex / AbortedTxn).

One 34-byte entry per aborted transaction that had data in the partition: version int16 (0), producerId
int64, firstOffset int64, lastOffset int64 (offset of the ABORT marker), lastStableOffset int64 (LSO when
the marker was written). The entry is kept in the segment that holds the ABORT marker. READ_COMMITTED
fetches collect entries with lastOffset >= fetch offset and firstOffset < upper bound.
"""

from __future__ import annotations

import contextlib
import os
import struct
from dataclasses import dataclass

_ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndex:
    """Entries live in memory; the file is created on the first append and appended with pwrite."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[AbortedTxn] | None = None

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = []
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            for i in range(len(data) // _ENTRY.size):
                _v, pid, first, last, lso = _ENTRY.unpack_from(data, i * _ENTRY.size)
                self._entries.append(AbortedTxn(pid, first, last, lso))
        return self._entries

    def append(self, txn: AbortedTxn) -> None:
        entries = self.entries
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, _ENTRY.pack(0, txn.producer_id, txn.first_offset, txn.last_offset,
                                     txn.last_stable_offset))
        finally:
            os.close(fd)
        entries.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose lastOffset >= offset."""
        entries = self.entries
        keep = [e for e in entries if e.last_offset < offset]
        if len(keep) != len(entries):
            self._entries = keep
            self._rewrite()

    def reset(self) -> None:
        self._entries = []
        self._rewrite()

    def _rewrite(self) -> None:
        entries = self._entries or []
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
            return
        data = b"".join(
            _ENTRY.pack(0, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries
        )
        with open(self.path, "wb") as f:
            f.write(data)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound); True when the search is complete."""
        out = []
        for e in self.entries:
            if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
                out.append(e)
                if e.last_stable_offset >= upper_bound:
                    return out, True
        return out, False

    def flush(self) -> None:
        if os.path.exists(self.path):
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
