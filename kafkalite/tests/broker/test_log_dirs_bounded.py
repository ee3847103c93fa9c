"""DescribeLogDirs after a clean start: the partition logs not loaded yet load in a worker thread, not on the
event loop (loading them one by one in the handler's walk held the loop 100-300 ms at 2,000 partitions).

The broker restarts on its data dir with the background loader held back, so every log is still unloaded when
the request comes; storage's loader is held on its first log until another connection has had an ApiVersions
round trip answered. Were the log loaded on the loop, that round trip could not be answered while the loader
is held (it is let go after a long timeout, and the test then fails instead of hanging)."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.server import serve as server
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.manager import LogManager
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import ApiVersionsRequest, CreateTopicsRequest, DescribeLogDirsRequest

PARTITIONS = 64
HOLD_S = 30.0    # only to end a test that would otherwise hang; the passing path never waits that long


def _sizes(resp: Any) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.partition_size for t in resp.results[0].topics for p in t.partitions}


def test_describe_log_dirs_loads_unloaded_logs_off_the_event_loop(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name="dirs", num_partitions=PARTITIONS, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=30_000), 5)
        for p in (0, 7, PARTITIONS - 1):
            assert c.request(produce_req("dirs", encode_batch([b"v" * (10 + p)]), partition=p),
                             9).responses[0].partition_responses[0].error_code == 0
        before = _sizes(c.request(DescribeLogDirsRequest(topics=None), 4))
    assert len(before) == PARTITIONS and before[("dirs", 7)] > 0

    async def no_background_load(state: Any) -> None:
        return None

    monkeypatch.setattr(server, "_load_pending", no_background_load)
    entered, answered = threading.Event(), threading.Event()
    loop_threads: list[str] = []
    held_too_long: list[bool] = []
    materialize = LogManager._materialize

    def held_materialize(self: LogManager, key: tuple[str, int]) -> Any:
        if threading.current_thread().name.startswith("kafkalite-broker-"):
            loop_threads.append(threading.current_thread().name)
        if not entered.is_set():
            entered.set()
            if not answered.wait(HOLD_S):
                held_too_long.append(True)
        return materialize(self, key)

    monkeypatch.setattr(LogManager, "_materialize", held_materialize)
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port, timeout=2 * HOLD_S) as big, \
            RawClient(b.host, b.port, timeout=2 * HOLD_S) as small:
        cid = big.send(DescribeLogDirsRequest(topics=None), 4)
        assert entered.wait(HOLD_S), "no log was loaded for DescribeLogDirs"
        small.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        answered.set()
        got_cid, resp = big.recv(DescribeLogDirsRequest.API_KEY, 4)
    assert got_cid == cid and resp.error_code == 0
    assert not held_too_long, "ApiVersions was not answered while a log was loading for DescribeLogDirs"
    assert loop_threads == []
    assert _sizes(resp) == before
