"""Server-Sent Events: the console's live views pushed by the broker instead of polled by the page.

``GET /api/events?view=overview|topics|groups`` or ``?view=topic&id=NAME`` / ``?view=group&id=GID`` answers
``text/event-stream``: every ``INTERVAL_S`` one ``data:`` event holding exactly what the matching JSON
endpoint (``/api/topics``, ``/api/groups/GID``, ...) answers, so a page renders an event as it rendered a
polled answer; an error (e.g. the topic was deleted) is an ``event: error`` with ``{"error": ...}`` and the
stream goes on. Bounds: at most ``kafkalite.console.http.MAX_STREAMS`` streams at once (the next gets 503 and the page falls back
to polling), each stream ends after ``MAX_STREAM_S`` (the browser's EventSource reconnects by itself, after
the ``retry:`` delay sent first), and a client that stops reading is dropped after the server's send
timeout. A closed tab frees its slot at once (the server watches for the client's EOF). Each event is
computed by the same sliced walks as the JSON endpoints, so streams never hold the event loop.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from kafkalite.console import api
from kafkalite.httpd.server import HttpError, Request, Streaming

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

INTERVAL_S = 1.0
MAX_STREAM_S = 600.0
RETRY_MS = 2000
_VIEWS = {"overview": ["overview"], "topics": ["topics"], "groups": ["groups"]}
_ONE = {"topic": "topics", "group": "groups"}


def _view_request(req: Request) -> Request:
    view = req.query.get("view", "")
    if view in _VIEWS:
        parts = _VIEWS[view]
    elif view in _ONE and req.query.get("id"):
        parts = [_ONE[view], req.query["id"]]
    else:
        raise HttpError(400, "view must be overview, topics, groups, or topic/group with id")
    sub = Request("GET", "/api/" + "/".join(parts), {}, {}, b"")
    sub.parts = ["api", *parts]   # an id may hold '/': keep it one segment
    return sub


def stream(state: BrokerState, req: Request) -> Streaming:
    """The event stream of one view (a 400 for an unknown view is raised before anything is sent)."""
    sub = _view_request(req)

    async def write(send: Callable[[bytes], Awaitable[None]]) -> None:
        await send(f"retry: {RETRY_MS}\n\n".encode())
        deadline = trio.current_time() + MAX_STREAM_S
        while trio.current_time() < deadline:
            try:
                data = await api.dispatch(state, sub)
                await send(b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n")
            except HttpError as exc:
                await send(b"event: error\ndata: " + json.dumps({"error": exc.message}).encode() + b"\n\n")
            await trio.sleep(INTERVAL_S)

    return Streaming("text/event-stream; charset=utf-8", write)
