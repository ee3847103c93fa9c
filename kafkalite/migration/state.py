"""The state directory of a migration: what survives a kill, so that a second run resumes the first.

``--state-dir`` (default ``kafkalite-migrate/<source cluster id>-to-<target cluster id>`` in the working
directory) holds:

- ``migration.json``: the two cluster ids (a state directory is refused for other clusters), and per topic
  whether the migration created it on the target, the target's own config values it changed for the copy (to
  put back on a topic it did not create), and whether its copy and final configs are done; rewritten whole
  through a temporary file, fsync and rename;
- ``offsets.journal``: the offset map of every partition (:mod:`kafkalite.migration.offsetmap`);
- ``lock``: an ``flock`` held while a run works, so two runs never write the same state.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path
from typing import Any

from kafkalite.migration.offsetmap import Journal

STATE_FILE = "migration.json"


class StateError(RuntimeError):
    """The state directory belongs to other clusters, is held by another run, or cannot be written."""


def default_dir(source_cluster: str, target_cluster: str) -> Path:
    def safe(s: str) -> str:
        return re.sub(r"[^A-Za-z0-9_-]", "_", s or "unknown")

    return Path("kafkalite-migrate") / f"{safe(source_cluster)}-to-{safe(target_cluster)}"


class State:
    def __init__(self, path: Path, source_cluster: str, target_cluster: str, *, create: bool = True) -> None:
        self.path = Path(path)
        if create:
            self.path.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = None
        self.doc: dict[str, Any] = self._load()
        if self.doc:
            want = (self.doc.get("source_cluster"), self.doc.get("target_cluster"))
            if want != (source_cluster, target_cluster):
                raise StateError(f"{self.path} is the state of a migration from cluster {want[0]} to {want[1]}, "
                                 f"not from {source_cluster} to {target_cluster} (give another --state-dir)")
        else:
            self.doc = {"version": 1, "source_cluster": source_cluster, "target_cluster": target_cluster,
                        "topics": {}, "txn_producer_used": False}
        self.journal = Journal(self.path)

    def _load(self) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = json.loads((self.path / STATE_FILE).read_text())
            return doc
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StateError(f"{self.path / STATE_FILE} cannot be read: {exc}") from None

    def lock(self) -> None:
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StateError(f"another kafkalite migrate is working on {self.path}") from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def topic(self, name: str) -> dict[str, Any]:
        topics: dict[str, dict[str, Any]] = self.doc["topics"]
        return topics.setdefault(name, {})

    def save(self) -> None:
        tmp = self.path / (STATE_FILE + ".tmp")
        data = json.dumps(self.doc, indent=1, sort_keys=True).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path / STATE_FILE)
        dfd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
