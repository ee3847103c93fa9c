"""A protocol fuzzer: every API key and version the broker advertises, valid requests mutated (mutate.py),
sent over real sockets with each outcome classified and the broker's health checked between batches
(runner.py). ``python -m kafkalite.tests.fuzz --help`` runs it against an in-process broker (``make fuzz``);
``kafkalite/tests/e2e/test_fuzz_protocol.py`` runs a bounded slice in ``make test``."""
from __future__ import annotations

import resource
from typing import Any

from kafkalite.tests.fuzz import mutate
from kafkalite.tests.fuzz.runner import Fuzzer, Stats

__all__ = ["Fuzzer", "Stats", "fuzz_embedded"]


def fuzz_embedded(*, frames: int | None = None, duration: float | None = None, seed: int = 1,
                  overrides: dict[str, str] | None = None, replay: int | None = None, **kw: Any) -> Stats:
    """Start an embedded broker, fuzz it with ``frames`` frames (or for ``duration`` seconds), stop it.
    ``replay``: send only that frame of the seed's sequence (prints it)."""
    from kafkalite.embedded import Broker
    from kafkalite.runtime import loopwatch
    from kafkalite_wire.spec import specs_dir

    if not specs_dir().is_dir():   # the generator is driven by Kafka's JSON message specs
        raise SystemExit(f"kafka message specs not found at {specs_dir()}: set KAFKALITE_REFERENCE")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:   # the fuzz creates topics; the broker holds descriptors per partition
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with Broker(overrides=overrides or {}) as broker:
        fuzzer = Fuzzer(broker.host, broker.port, seed=seed, watch=loopwatch.for_port(broker.port),
                        alive=lambda: broker._thread is not None and broker._thread.is_alive(),
                        max_frame=broker.config.max_frame_size, **kw)
        fuzzer.setup()
        if replay is not None:
            frame, outcome = fuzzer.replay(replay)
            print(f"frame #{replay} of seed {seed}: {outcome}")
            if frame is not None:
                print(f"  {frame.kind} {frame.api_key}/v{frame.version}: {frame.data.hex()}")
                print(f"  decodes as: {mutate.parse(frame)!r:.2000}")
            return fuzzer.stats
        return fuzzer.run(frames=frames, duration=duration)
