"""SCRAM credentials kept in the data directory, as Kafka keeps them in its metadata log.

One small JSON file, ``kafkalite-scram-credentials.json`` in the log dir (Kafka's log manager loads only
directories there, so a Kafka broker pointed at the same dir ignores it)::

    {"version": 1, "users": {"alice": {"SCRAM-SHA-256": {"salt": b64, "stored_key": b64, "server_key": b64,
                                                          "iterations": 8192}}}}

Only salts and derived keys, never a password or a salted password. The file is rewritten whole through
``kafkalite_storage.checkpoints.write_atomic`` (tmp + fsync + rename + fsync of the directory) in a worker thread, one
writer at a time; memory changes only after the write succeeded, so a failed write (full disk) leaves both
the file and what the broker answers unchanged. An unreadable file is a startup error, not an empty store:
silently forgetting every user would lock clients out (or, with ACLs, let names be re-registered).
"""
from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkalite_storage.checkpoints import write_atomic

if TYPE_CHECKING:   # the SCRAM module is imported only when a stored credential is read
    from kafkalite.security.scram import ScramCredential


log = logging.getLogger(__name__)

FILE_NAME = "kafkalite-scram-credentials.json"


class ScramStoreError(Exception):
    """The credentials file exists but cannot be read."""


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


class ScramStore:
    def __init__(self, log_dir: Path | str) -> None:
        self.path = Path(log_dir) / FILE_NAME
        self.users: dict[str, dict[str, ScramCredential]] = self._load()
        self._lock: trio.Lock | None = None

    def _load(self) -> dict[str, dict[str, ScramCredential]]:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ScramStoreError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        # the SCRAM module: only once a stored credential is read
        from kafkalite.security.scram import MECHANISMS, ScramCredential

        try:
            doc = json.loads(raw)
            users: dict[str, dict[str, ScramCredential]] = {}
            for user, mechs in doc["users"].items():
                users[str(user)] = {
                    str(mech): ScramCredential(base64.b64decode(c["salt"]), base64.b64decode(c["stored_key"]),
                                               base64.b64decode(c["server_key"]), int(c["iterations"]))
                    for mech, c in mechs.items() if mech in MECHANISMS}
            return users
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ScramStoreError(f"{self.path} is damaged ({type(exc).__name__}); restore it from a backup "
                                  "or remove it (every SCRAM user is then gone)") from None

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    @staticmethod
    def _encode(users: dict[str, dict[str, ScramCredential]]) -> bytes:
        doc = {"version": 1, "users": {
            u: {m: {"salt": _b64(c.salt), "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key),
                    "iterations": c.iterations} for m, c in sorted(mechs.items())}
            for u, mechs in sorted(users.items()) if mechs}}
        return json.dumps(doc, indent=1).encode()

    def _write(self, data: bytes) -> None:
        write_atomic(str(self.path), data)

    async def apply(self, deletions: list[tuple[str, str]],
                    upsertions: list[tuple[str, str, ScramCredential]]) -> None:
        """Delete (user, mechanism) and set (user, mechanism, credential), durably, all or nothing.
        Raises OSError when the file could not be written (nothing changed then)."""
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            users = {u: dict(m) for u, m in self.users.items()}
            for user, mech in deletions:
                users.get(user, {}).pop(mech, None)
            for user, mech, cred in upsertions:
                users.setdefault(user, {})[mech] = cred
            users = {u: m for u, m in users.items() if m}
            await trio.to_thread.run_sync(self._write, self._encode(users))
            self.users = users
        log.info("SCRAM credentials changed: %d deleted, %d set", len(deletions), len(upsertions))
