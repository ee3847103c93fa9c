"""Produce validation keeps the event loop free: uncompressed and small compressed batches are checked
inline, a large compressed batch, or a small one that inflates past INLINE_INFLATE_BYTES, in a worker thread."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import trio

from kafkalite import validation
from kafkalite.handlers import produce
from kafkalite.tests.support.validation_corpus import NOW, valid
from kafkalite_storage.config import LogConfig
from kafkalite_storage.testing import Rec, encode_batch


def _ctx() -> Any:
    return SimpleNamespace(version=9, broker=SimpleNamespace(config=SimpleNamespace(get_str=lambda _k: "")))


async def _run(batch: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[object, int]:
    calls = []
    real = trio.to_thread.run_sync

    async def counting(fn: Any, *args: Any, **kw: Any) -> Any:
        calls.append(fn)
        return await real(fn, *args, **kw)

    monkeypatch.setattr(trio.to_thread, "run_sync", counting)
    req = SimpleNamespace(transactional_id=None)
    plog = SimpleNamespace(config=LogConfig())
    verdict = await produce._validate(_ctx(), req, memoryview(batch), plog, "t-0", NOW)  # type: ignore[arg-type]
    return verdict, len(calls)


async def test_small_batches_are_checked_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _run(valid(100), monkeypatch) == (None, 0)
    assert await _run(valid(100, compression=3), monkeypatch) == (None, 0)


async def test_large_compressed_batch_goes_to_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    big = encode_batch([Rec(os.urandom(100), timestamp=NOW) for _ in range(3000)], base_timestamp=NOW,
                       compression=4)
    assert len(big) >= validation.THREAD_THRESHOLD_BYTES
    assert await _run(big, monkeypatch) == (None, 1)


async def test_small_batch_that_inflates_a_lot_goes_to_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    dense = encode_batch([Rec(bytes(100_000), timestamp=NOW) for _ in range(40)], base_timestamp=NOW,
                         compression=4)
    assert len(dense) < validation.THREAD_THRESHOLD_BYTES     # 4 MB of zeros in a few KB
    assert await _run(dense, monkeypatch) == (None, 1)
