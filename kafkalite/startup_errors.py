"""What went wrong at start, in one line, and the exit code the CLI gives it.

Expected failures -- a bad setting, a data dir that is a file or not writable, a data dir another broker
holds, an address already in use -- are reported as one line naming the key, file or address and what to
do; the full traceback is logged only at DEBUG. Exit code 2 means a usage or configuration error (fix the
command line or the config), 1 a runtime failure (the environment: the port or the data dir is taken).
Anything else is a genuine bug: :func:`describe` returns None and the caller shows the traceback.
"""
from __future__ import annotations

from kafkalite.config.broker import ConfigError

USAGE = 2
RUNTIME = 1


class StartupError(Exception):
    """The broker could not start for a reason outside its control (exit code 1); one line."""


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out += _leaves(sub)
        return out
    return [exc]


def describe(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, one-line message) for an expected startup failure (unwrapping exception groups)."""
    from kafkalite_storage.errors import StorageError

    for leaf in _leaves(exc):
        if isinstance(leaf, ConfigError):
            return USAGE, str(leaf)
        if isinstance(leaf, StartupError):
            return RUNTIME, str(leaf)
        if isinstance(leaf, StorageError):
            return RUNTIME, f"storage: {leaf}"
        if isinstance(leaf, OSError):
            where = f"{leaf.filename}: " if leaf.filename else ""
            return RUNTIME, f"{where}{leaf.strerror or leaf}"
    return None
