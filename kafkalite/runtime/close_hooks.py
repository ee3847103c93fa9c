"""What to call when a connection closes: a process-wide registry keyed by connection id.

Kafka's ``ConnectionDisconnectListener``: a feature that keeps per-connection state (share sessions do) registers
a hook; the server runs a connection's hooks once, however it closes. Empty unless something registered, so a
closing connection pays one truthiness test.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

#: connection id -> what to call when that connection closes (``on_close``); empty unless a feature registered
#: something (share sessions do), so a closing connection pays one truthiness test and requests nothing
_close_hooks: dict[int, list[Callable[[], None]]] = {}


def on_close(conn_id: int, fn: Callable[[], None]) -> None:
    """Call ``fn()`` (on the event loop, synchronously) when connection ``conn_id`` closes, however it closes
    (peer gone, idle reaper, protocol error, broker shutdown). Kafka's ``ConnectionDisconnectListener``: the
    share session cache ends the sessions a connection opened. Connection ids are unique in the process."""
    _close_hooks.setdefault(conn_id, []).append(fn)


def run(conn_id: int, what: object) -> None:
    """Run and forget connection ``conn_id``'s hooks (``what`` names the connection in the log)."""
    for fn in _close_hooks.pop(conn_id, ()):
        try:
            fn()
        except Exception:   # one failing hook must not keep the others (or the socket close) from running
            log.exception("%r: a close hook failed", what)


def pending() -> bool:
    return bool(_close_hooks)
