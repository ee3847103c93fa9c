"""The source -> target offset map of each partition, its journal, and the translation of committed offsets.

A target partition's offsets are assigned by the target broker (Produce cannot choose them), one per record in
the order they arrive. The copy writes a partition's records in source offset order, so the map is monotonic
and is kept as *runs*: ``(src, tgt, length)`` says source offsets ``src .. src+length-1`` hold the records that
are at ``tgt .. tgt+length-1`` on the target. Where the source has no gap and the target partition started
empty, the whole partition is one run with ``src == tgt``: the offsets are kept. A gap in the source (records
removed by compaction, a transaction marker, which is not a record a producer can write, a log start offset
above 0) or records already on the target start a new run.

The map is built from the target's own answers (each record's delivery report carries the offset the target
gave it), never predicted. It is exact for every copied record; the offsets of the gaps have no record, and a
committed offset is translated to the target offset of the first copied record at or after it (what a consumer
positioned there would read next), or, past the last copied record, to just after it.

The journal (``offsets.journal`` in the state directory) is text, one fact a line, appended and fsynced in
groups; a group ends with a line ``k`` and only complete groups count when the journal is read again (a SIGKILL
mid-write leaves at most an incomplete group, which is ignored)::

    # kafkalite migrate offset journal v1
    s TOPIC PARTITION TARGET_START      the target partition's end offset before the migration wrote to it
    p TOPIC PARTITION OFFSET            filler records written and deleted: the target's log start is OFFSET
    r TOPIC PARTITION SRC TGT LENGTH    a run (adjacent runs are merged when read)
    t TOPIC PARTITION SRC_NEXT          every source offset below SRC_NEXT is copied (or is a gap)
    k                                   end of a group: the lines above are durable

Kafka topic names are ``[a-zA-Z0-9._-]+``, so a line splits on spaces. Tools of one's own can read the map
with :func:`load` and :meth:`PartitionMap.translate` (e.g. to translate offsets a consumer keeps outside Kafka).
"""
from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

HEADER = "# kafkalite migrate offset journal v1\n"
FILE_NAME = "offsets.journal"
TP = tuple[str, int]


@dataclass
class PartitionMap:
    """The map of one partition: runs sorted by source offset (and so by target offset)."""

    target_start: int = 0        # the target's end offset before the migration wrote to it (or after padding)
    padded_to: int = -1          # filler records deleted up to here (-1: none)
    src_next: int = -1           # every source offset below is copied (-1: nothing copied yet)
    srcs: list[int] = field(default_factory=list)
    tgts: list[int] = field(default_factory=list)
    lens: list[int] = field(default_factory=list)

    # -- building --------------------------------------------------------------------------------------------
    def add(self, src: int, tgt: int, length: int = 1) -> None:
        """Source offsets ``src..src+length-1`` are at ``tgt..``; extends the last run when contiguous."""
        if self.srcs:
            last = len(self.srcs) - 1
            end_src = self.srcs[last] + self.lens[last]
            end_tgt = self.tgts[last] + self.lens[last]
            if src < end_src or tgt < end_tgt:
                raise ValueError(f"offset map must grow: ({src}, {tgt}) after run ending at ({end_src}, {end_tgt})")
            if src == end_src and tgt == end_tgt:
                self.lens[last] += length
                return
        self.srcs.append(src)
        self.tgts.append(tgt)
        self.lens.append(length)

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def records(self) -> int:
        return sum(self.lens)

    @property
    def target_next(self) -> int:
        """The target offset just after the last copied record (where the next one will go, absent markers)."""
        if self.srcs:
            return self.tgts[-1] + self.lens[-1]
        return max(self.target_start, self.padded_to)

    @property
    def last_src(self) -> int:
        """The source offset of the last copied record, -1 if none."""
        return self.srcs[-1] + self.lens[-1] - 1 if self.srcs else -1

    def runs(self) -> list[tuple[int, int, int]]:
        return list(zip(self.srcs, self.tgts, self.lens, strict=True))

    @property
    def identity(self) -> bool:
        """True when every copied record kept its offset (one run with src == tgt, or nothing copied)."""
        return all(s == t for s, t in zip(self.srcs, self.tgts, strict=True))

    def target_of(self, src: int) -> int | None:
        """The target offset of the copied record at source offset ``src``; None for a gap or an uncopied one."""
        i = bisect.bisect_right(self.srcs, src) - 1
        if i >= 0 and src < self.srcs[i] + self.lens[i]:
            return self.tgts[i] + (src - self.srcs[i])
        return None

    def translate(self, offset: int) -> int | None:
        """A committed source offset as a target offset: the target offset of the first copied record at or
        after ``offset``; just after the last copied record when ``offset`` is past it but within what was
        copied; None when ``offset`` is beyond what has been copied (those records are not on the target)."""
        if offset < 0:
            return None
        i = bisect.bisect_right(self.srcs, offset) - 1
        if i >= 0 and offset < self.srcs[i] + self.lens[i]:
            return self.tgts[i] + (offset - self.srcs[i])
        if i + 1 < len(self.srcs):
            return self.tgts[i + 1]
        if offset <= self.src_next or (self.srcs and offset == self.last_src + 1):
            return self.target_next
        return None

    def source_of(self, tgt: int) -> int | None:
        """The source offset of the record at target offset ``tgt`` (None: not a copied record)."""
        i = bisect.bisect_right(self.tgts, tgt) - 1
        if i >= 0 and tgt < self.tgts[i] + self.lens[i]:
            return self.srcs[i] + (tgt - self.tgts[i])
        return None


class Journal:
    """The append-only offset journal of one state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / FILE_NAME
        self.maps, committed = _load(self.path)
        if self.path.exists() and self.path.stat().st_size > committed:
            # a crash left an incomplete group (or a cut line): drop it, so new lines start on a line of their own
            with open(self.path, "r+b") as f:
                f.truncate(committed)
                os.fsync(f.fileno())
        self._lines: list[str] = []
        # per partition: (runs, length of the last run) already in the journal
        self._marks: dict[TP, tuple[int, int]] = {
            tp: (len(m.srcs), m.lens[-1] if m.lens else 0) for tp, m in self.maps.items()}

    def get(self, tp: TP) -> PartitionMap:
        m = self.maps.get(tp)
        if m is None:
            m = self.maps[tp] = PartitionMap()
            self._marks[tp] = (0, 0)
        return m

    def known(self, tp: TP) -> bool:
        return tp in self.maps

    def start(self, tp: TP, target_start: int) -> None:
        m = self.get(tp)
        m.target_start = target_start
        self._lines.append(f"s {tp[0]} {tp[1]} {target_start}\n")

    def padded(self, tp: TP, offset: int) -> None:
        self.get(tp).padded_to = offset
        self._lines.append(f"p {tp[0]} {tp[1]} {offset}\n")

    def copied_through(self, tp: TP, src_next: int) -> None:
        """Every source offset below ``src_next`` is copied: journals the runs added since the last commit."""
        m = self.get(tp)
        n_runs, last_len = self._marks.get(tp, (0, 0))
        if (len(m.srcs), m.lens[-1] if m.lens else 0) == (n_runs, last_len) and src_next <= m.src_next:
            return   # nothing new
        for i in range(max(n_runs - 1, 0), len(m.srcs)):
            done = last_len if i == n_runs - 1 else 0
            if m.lens[i] > done:
                self._lines.append(f"r {tp[0]} {tp[1]} {m.srcs[i] + done} {m.tgts[i] + done} {m.lens[i] - done}\n")
        self._marks[tp] = (len(m.srcs), m.lens[-1] if m.lens else 0)
        if src_next > m.src_next:
            m.src_next = src_next
        self._lines.append(f"t {tp[0]} {tp[1]} {m.src_next}\n")

    def commit(self) -> None:
        """Write the pending lines and ``k``, then fsync: from here they survive a SIGKILL."""
        if not self._lines:
            return
        new = not self.path.exists()
        data = (HEADER if new else "") + "".join(self._lines) + "k\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        if new:
            _fsync_dir(self.path.parent)
        self._lines.clear()

    def discard_uncommitted(self, tp: TP) -> None:
        """Forget what was added to ``tp`` since its last commit (the resume path re-derives it)."""
        m = self.maps.get(tp)
        if m is None:
            return
        n_runs, last_len = self._marks.get(tp, (0, 0))
        del m.srcs[n_runs:], m.tgts[n_runs:], m.lens[n_runs:]
        if n_runs:
            m.lens[-1] = last_len


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load(path: Path | str) -> dict[TP, PartitionMap]:
    """The maps of a journal file (missing: empty); lines after the last ``k`` are ignored."""
    return _load(path)[0]


def _load(path: Path | str) -> tuple[dict[TP, PartitionMap], int]:
    """The maps, and the length in bytes of the file up to its last complete group."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {}, 0
    maps: dict[TP, PartitionMap] = {}
    pending: list[list[str]] = []
    pos = committed = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        if end < 0:
            break   # a line cut by a crash
        parts = data[pos:end].decode().split()
        pos = end + 1
        if not parts or parts[0].startswith("#"):
            if not pending:
                committed = pos
            continue
        if parts[0] == "k":
            _apply(maps, pending)
            pending = []
            committed = pos
        else:
            pending.append(parts)
    return maps, committed


def _apply(maps: dict[TP, PartitionMap], lines: Iterable[list[str]]) -> None:
    for parts in lines:
        kind, topic, part = parts[0], parts[1], int(parts[2])
        m = maps.setdefault((topic, part), PartitionMap())
        nums = [int(x) for x in parts[3:]]
        if kind == "s":
            m.target_start = nums[0]
        elif kind == "p":
            m.padded_to = nums[0]
        elif kind == "r":
            m.add(nums[0], nums[1], nums[2])
        elif kind == "t":
            m.src_next = max(m.src_next, nums[0])
        else:
            raise ValueError(f"offset journal: unknown line {' '.join(parts)!r}")
