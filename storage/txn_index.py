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

from kafkalite_storage import fs
from kafkalite_storage.errors import RollbackFailedError

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
        """Append one entry; a failed write is cut back off the file (RollbackFailedError if that fails
        too) and the OSError re-raised, with the in-memory entries unchanged."""
        entries = self.entries
        fd = fs.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            blob = _ENTRY.pack(0, txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset)
            try:
                if fs.write(fd, blob) != len(blob):
                    raise OSError(28, "short write to the transaction index")
            except OSError as exc:
                try:
                    fs.ftruncate(fd, len(entries) * _ENTRY.size)
                except OSError as exc2:
                    raise RollbackFailedError(f"{self.path}: cannot undo a failed write: {exc2}") from exc
                raise
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

    def truncate_to_entries(self, n: int) -> None:
        """Keep only the first `n` entries (undo of an append)."""
        if self._entries is not None and len(self._entries) > n:
            self._entries = self._entries[:n]
            self._rewrite()

    def reset(self) -> None:
        self._entries = []
        self._rewrite()

    def _rewrite(self) -> None:
        entries = self._entries or []
        if not entries:
            with contextlib.suppress(FileNotFoundError):
                fs.unlink(self.path)
            return
        data = b"".join(
            _ENTRY.pack(0, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries
        )
        fd = fs.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[fs.write(fd, view):]
        finally:
            os.close(fd)

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
                fs.fsync(fd)
            finally:
                os.close(fd)
