"""Protobuf schemas (placeholder until the .proto parser lands): the text is kept as sent."""
from __future__ import annotations

from typing import Any


def parse(text: str) -> Any:
    if not text.strip():
        raise ValueError("Invalid schema: empty")
    return text


def canonical(text: str) -> str:
    return text


def can_read(reader: Any, writer: Any) -> list[str]:
    return []
