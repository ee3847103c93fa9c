"""Kafka's small text files: offset checkpoints, leader-epoch checkpoint, partition.metadata, meta.properties.

Every write goes to `<file>.tmp`, is fsynced, atomically renamed over the target and the directory fsynced
(Kafka's CheckpointFile). Offset checkpoints are `0` (version) / entry count / `topic partition offset`
lines; the leader-epoch checkpoint is `0` / count / `epoch startOffset` lines; `partition.metadata` is
`version: 0` / `topic_id: <22-char URL-safe base64 UUID>`; `meta.properties` is java.util.Properties.store
output (`#` and `#<date>` comment lines, then key=value).

A failed write (ENOSPC, EIO at any step) leaves the previous file intact: the error is raised after the
`.tmp` is removed. Readers never raise on damaged content: offset checkpoints raise ValueError (the caller
logs it and starts from nothing, as Kafka's LogManager does), the leader-epoch checkpoint and
`partition.metadata` read as None when damaged (the log rebuilds or ignores them).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import time
import uuid
from collections.abc import Iterable, Mapping

from kafkalite_storage import fs


def fsync_dir(path: str) -> None:
    """fsync a directory (its entries: renames, creations); a file system that cannot is not an error."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fs.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes, sync: bool = True) -> None:
    """tmp + fsync + rename + fsync(dir); with `sync=False` only tmp + rename (the caller fsyncs later with
    `sync_file`, as Kafka 3.7+ does for the leader-epoch checkpoint on the append path)."""
    tmp = path + ".tmp"
    try:
        fd = fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = fs.write(fd, view)
                view = view[n:]
            if sync:
                fs.fsync(fd)
        finally:
            os.close(fd)
        fs.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # the old file stays as it was; the partial tmp goes
            fs.unlink(tmp)
        raise
    if sync:
        fsync_dir(os.path.dirname(path) or ".")


def sync_file(path: str) -> None:
    """fsync a file written with `sync=False`, then its directory."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fs.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(os.path.dirname(path) or ".")


def uuid_to_base64(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def uuid_from_base64(s: str) -> uuid.UUID:
    s = s.strip()
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))


# ---- offset checkpoints ------------------------------------------------------------------------------
def write_offset_checkpoint(path: str, entries: Mapping[tuple[str, int], int]) -> None:
    lines = ["0", str(len(entries))]
    lines += [f"{t} {p} {o}" for (t, p), o in entries.items()]
    write_atomic(path, ("\n".join(lines) + "\n").encode())


def read_offset_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """Parse an offset checkpoint; a missing or empty file is an empty mapping; any damage (garbage bytes,
    a truncated file, a wrong version or count, malformed lines) raises ValueError, as Kafka's CheckpointFile
    refuses a malformed file."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return {}
    if not lines:
        return {}
    if lines[0].strip() != "0":
        raise ValueError(f"{path}: unknown checkpoint version {lines[0]!r}")
    if len(lines) < 2:
        raise ValueError(f"{path}: no entry count")
    count = int(lines[1])
    out: dict[tuple[str, int], int] = {}
    for line in lines[2 : 2 + count]:
        fields = line.split(" ")
        if len(fields) != 3:
            raise ValueError(f"{path}: malformed line {line!r}")
        out[(fields[0], int(fields[1]))] = int(fields[2])
    if len(out) != count or len(lines) > 2 + count:
        raise ValueError(f"{path}: expected {count} entries, found {len(lines) - 2}")
    return out


# ---- leader epochs -----------------------------------------------------------------------------------
def write_leader_epochs(path: str, epochs: Iterable[tuple[int, int]], sync: bool = True) -> None:
    items = list(epochs)
    lines = ["0", str(len(items))] + [f"{e} {o}" for e, o in items]
    write_atomic(path, ("\n".join(lines) + "\n").encode(), sync)


def read_leader_epochs(path: str) -> list[tuple[int, int]] | None:
    """The (epoch, start offset) entries; [] when the file is missing, None when it is damaged (garbage,
    torn by a crash before its deferred fsync, wrong version or count, negative values)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return None
    out = []
    try:
        if lines[0].strip() != "0":
            return None
        count = int(lines[1])
        for line in lines[2 : 2 + count]:
            e, o = line.split()
            out.append((int(e), int(o)))
    except (IndexError, ValueError):
        return None
    if len(out) != count or len(lines) > 2 + count or any(e < 0 or o < 0 or e > 2**31 - 1 for e, o in out):
        return None
    return out


# ---- partition.metadata --------------------------------------------------------------------------------
def write_partition_metadata(path: str, topic_id: uuid.UUID, sync: bool = True) -> None:
    write_atomic(path, f"version: 0\ntopic_id: {uuid_to_base64(topic_id)}".encode(), sync)


def read_partition_metadata(path: str) -> uuid.UUID | None:
    """The topic id, or None when the file is missing or damaged (the caller rewrites it)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    fields = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    if "topic_id" not in fields:
        return None
    try:
        return uuid_from_base64(fields["topic_id"])
    except ValueError:
        return None


# ---- meta.properties -------------------------------------------------------------------------------------
def write_properties(path: str, props: Mapping[str, str]) -> None:
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    lines = ["#", f"#{stamp}"] + [f"{k}={v}" for k, v in props.items()]
    write_atomic(path, ("\n".join(lines) + "\n").encode())


def read_properties(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line[0] in "#!":
                    continue
                sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
                if sep < 0:
                    out[line] = ""
                else:
                    out[line[:sep].strip()] = line[sep + 1 :].strip()
    except FileNotFoundError:
        pass
    return out
