"""The protocol fuzzer, a bounded slice: every API key and version the broker advertises, valid requests
mutated (kafkalite/tests/fuzz), each frame on its own connection to an in-process broker.

Passes when no frame ends BAD (a traceback, an unlogged close, a hang, a wrong or undue answer, a decoder
exception other than DecodeError) and every health check between batches passed: ApiVersions and Metadata
answered on a fresh connection, all acknowledged canary records still readable, RSS growth bounded.
Event-loop stalls are reported in the table (``stall ms``) but not asserted here (no timed assertions in
tests); ``make fuzz`` counts reproducible stalls as BAD.

``KAFKALITE_FUZZ_FRAMES`` (default 60000, one to two minutes here) scales the slice, ``KAFKALITE_FUZZ_SEED``
(default 1) picks the sequence; a finding prints its seed and frame index, and
``python -m kafkalite.tests.fuzz --seed S --replay N`` sends that one frame again.
"""
from __future__ import annotations

import os

import pytest

from kafkalite.tests.fuzz import fuzz_embedded
from kafkalite.tests.support.requires import require
from kafkalite_wire.spec import specs_dir


def test_protocol_fuzz_slice(capsys: pytest.CaptureFixture[str]) -> None:
    require("reference")
    assert specs_dir().is_dir(), f"the reference tree has no {specs_dir()}"
    frames = int(os.environ.get("KAFKALITE_FUZZ_FRAMES", "60000"))
    seed = int(os.environ.get("KAFKALITE_FUZZ_SEED", "1"))
    # hostile mutations stay under 1 MiB bodies here (tens of thousands of entries); make fuzz goes to 16 MiB
    stats = fuzz_embedded(frames=frames, seed=seed, stall_ms=None, max_body=1024 * 1024)
    table = stats.table()
    with capsys.disabled():
        print(f"\nprotocol fuzz, seed {seed}: {stats.frames} frames\n{table}")
    assert stats.frames >= frames * 0.95
    sent = sum(c["sent"] for c in stats.by_api.values())
    assert sent > 0 and all(c["sent"] for c in stats.by_api.values())
    assert stats.bad(timing=False) == 0, table


def test_fuzzer_tells_its_own_full_collections_from_the_brokers() -> None:
    """The embedded broker shares the fuzzer's GIL: a full collection in the fuzzer's thread is measured (and
    taken off the loop stall it blames on the broker); one in another thread, the broker's, is not."""
    import gc
    import threading

    from kafkalite.tests.fuzz.runner import Fuzzer

    fz = Fuzzer("127.0.0.1", 1)
    gc.callbacks.append(fz._own_gc)
    try:
        other = threading.Thread(target=gc.collect)
        other.start()
        other.join()
        assert fz.own_gc_ms == 0.0
        gc.collect()
        assert fz.own_gc_ms > 0.0
    finally:
        gc.callbacks.remove(fz._own_gc)
