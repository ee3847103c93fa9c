"""Producer-id expiry runs in a housekeeping thread while appends refresh entries on the event loop."""
from __future__ import annotations

import threading

from kafkalite_storage.producer_state import ProducerStateManager


class _Hdr:
    """The BatchHeader fields ProducerStateManager.update reads."""

    def __init__(self, pid: int, seq: int) -> None:
        self.producer_id = pid
        self.producer_epoch = 0
        self.base_sequence = seq
        self.last_offset_delta = 0
        self.is_transactional = False


def test_expiry_thread_never_breaks_or_loses_a_refreshed_producer(tmp_path) -> None:
    psm = ProducerStateManager(str(tmp_path))
    stop = threading.Event()
    errors: list[BaseException] = []

    def expire() -> None:
        try:
            while not stop.is_set():
                psm.remove_expired(now_ms=10**12, expiration_ms=10**12 - 1)   # everything stale expires
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    t = threading.Thread(target=expire)
    t.start()
    try:
        for i in range(20_000):
            pid = i % 500
            psm.update(_Hdr(pid, i), base_offset=i, max_timestamp=0)        # stale: may expire any time
            psm.update(_Hdr(pid, i), base_offset=i, max_timestamp=10**12)   # refreshed: must stay
            assert pid in psm.producers, f"producer {pid} expired right after it was refreshed"
    finally:
        stop.set()
        t.join()
    assert errors == []
