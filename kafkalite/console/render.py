"""How the console shows record bytes: text when they are UTF-8, pretty-printed when that text is JSON,
hex otherwise; each shown value is cut at ``MAX_SHOWN`` bytes (the page says so and gives the full size).

What is returned is data for the page's ``textContent``: never markup, so a key such as
``<img src=x onerror=...>`` is shown as those characters.
"""
from __future__ import annotations

import json
from typing import Any

MAX_SHOWN = 16 * 1024


def show(data: bytes | None, limit: int = MAX_SHOWN) -> dict[str, Any] | None:
    """``{"format": "text"|"json"|"hex", "text": ..., "size": n, "truncated": bool}`` or None for null."""
    if data is None:
        return None
    size = len(data)
    cut = data[:limit]
    truncated = size > limit
    try:
        text = cut.decode("utf-8")
    except UnicodeDecodeError as exc:
        if truncated and exc.start >= len(cut) - 3 and exc.reason == "unexpected end of data":
            text = cut[:exc.start].decode("utf-8", "replace")   # a character cut in two by the limit
        else:
            return {"format": "hex", "text": cut.hex(" "), "size": size, "truncated": truncated}
    if not truncated and text[:1] in ("{", "[") and size:
        try:
            return {"format": "json", "text": json.dumps(json.loads(text), indent=2, ensure_ascii=False),
                    "size": size, "truncated": False}
        except (ValueError, RecursionError):
            pass
    if any(ord(c) < 32 and c not in "\t\n\r" for c in text):
        return {"format": "hex", "text": cut.hex(" "), "size": size, "truncated": truncated}
    return {"format": "text", "text": text, "size": size, "truncated": truncated}


def matches(data: bytes | None, needle: bytes) -> bool:
    return data is not None and needle in data
