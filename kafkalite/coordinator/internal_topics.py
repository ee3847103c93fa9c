"""Creating an internal topic (``__consumer_offsets``, ``__transaction_state``) from a coordinator."""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import trio


async def create_internal_topic(state: Any, name: str, partitions: int, overrides: Mapping[str, str]) -> None:
    """Create the partition logs in a worker thread (one fsync'd directory each), then register the topic.
    Raises whatever storage or the topic registry raises; the caller logs it and answers a retriable error."""
    topic_id = uuid.uuid4()
    log_config = state.log_config_for(overrides)

    def create_logs() -> None:
        for p in range(partitions):
            state.logs.create_log(name, p, topic_id, log_config)

    await trio.to_thread.run_sync(create_logs)
    if name not in state.topics:
        state.create_topic(name, partitions, overrides, topic_id=topic_id)
