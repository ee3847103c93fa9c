"""kafkalite.bulk: no full garbage collection while a request of many entries is in flight; thresholds restored
after the last one, also when requests overlap or fail."""
from __future__ import annotations

import gc
from typing import Any

import pytest

from kafkalite import bulk


def _full_collections_while(fn: Any) -> int:
    seen: list[int] = []

    def cb(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(cb)
    try:
        fn()
    finally:
        gc.callbacks.remove(cb)
    return len(seen)


def _allocate() -> list[Any]:
    # two million tracked objects that survive: each quarter of growth of the oldest generation would trigger a
    # full collection
    return [[i] for i in range(2_000_000)]


def test_no_full_collection_while_paused() -> None:
    gc.collect()
    before = gc.get_threshold()
    with bulk.paused():
        assert _full_collections_while(_allocate) == 0
    assert gc.get_threshold() == before
    gc.collect()
    assert _full_collections_while(_allocate) > 0    # the same allocation does trigger them otherwise


def test_overlapping_pauses_restore_once_and_on_error() -> None:
    before = gc.get_threshold()
    bulk.pause()
    with pytest.raises(RuntimeError), bulk.paused():
        assert bulk.active() == 2
        raise RuntimeError("handler failed")
    assert bulk.active() == 1 and gc.get_threshold()[2] == bulk.PAUSED_THRESHOLD
    bulk.resume()
    assert bulk.active() == 0 and gc.get_threshold() == before
