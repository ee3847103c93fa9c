"""A broker process under a low RLIMIT_NOFILE: partitions need no descriptor each, running out is an error
to the request (never a broken broker), and a restart always works."""
from __future__ import annotations

import os
import socket
from pathlib import Path

from kafkalite.tests.support.fdlimit import LimitedBroker, create_topics, fetch_all, metadata_all, produce_all
from kafkalite_wire.errors import ErrorCode

NOFILE = 128


def test_thousand_partitions_under_128_descriptors(tmp_path: Path) -> None:
    broker = LimitedBroker(tmp_path / "data", NOFILE, tmp_path / "broker.log")
    topics = {f"fd{i}": 100 for i in range(10)}   # 1,000 partitions: 3 files each held open would need 3,000
    broker.start()
    try:
        with broker.client() as c:
            res = create_topics(c, topics, per_request=5)
            assert {n: r.error_code for n, r in res.items()} == dict.fromkeys(topics, 0)
            assert sum(len(t.partitions) for t in metadata_all(c).topics) == 1000
            assert produce_all(c, topics, value=b"first") == {0: 1000}
            got = fetch_all(c, topics)
            assert len(got) == 1000 and set(got.values()) == {1}
            assert broker.open_fds() < NOFILE
    finally:
        assert broker.stop() == 0
    broker.start()   # a clean restart under the same limit
    try:
        with broker.client() as c:
            got = fetch_all(c, topics)
            assert len(got) == 1000 and set(got.values()) == {1}
            assert produce_all(c, topics, value=b"second") == {0: 1000}
            assert set(fetch_all(c, topics).values()) == {2}
    finally:
        assert broker.stop() == 0


def test_running_out_of_descriptors_is_an_error_to_the_request(tmp_path: Path) -> None:
    """Sockets take every descriptor; CreateTopics answers KAFKA_STORAGE_ERROR and leaves no directory behind;
    once the sockets are gone the broker accepts connections and creates topics again."""
    data = tmp_path / "data"
    broker = LimitedBroker(data, NOFILE, tmp_path / "broker.log", "--override", "log.cleaner.backoff.ms=100")
    broker.start()
    flood: list[socket.socket] = []
    try:
        with broker.client() as c:
            assert create_topics(c, {"before": 4})["before"].error_code == 0
            for _ in range(NOFILE + 20):   # more connections than the broker has descriptors
                flood.append(socket.create_connection((broker.host, broker.port), timeout=10))
            _wait_until(lambda: broker.open_fds() >= NOFILE - 1)
            res = create_topics(c, {"starved": 50})["starved"]
            assert res.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            # nothing half-made under the topic's name (a renamed `-delete` leftover may wait for descriptors)
            assert not [n for n in os.listdir(data) if n.startswith("starved") and not n.endswith("-delete")]
            for s in flood:
                s.close()
            flood.clear()
            _wait_until(lambda: broker.open_fds() < NOFILE // 2 + 20)
            _wait_until(lambda: not [n for n in os.listdir(data) if n.startswith("starved")])
            assert create_topics(c, {"starved": 50})["starved"].error_code == 0
            assert produce_all(c, {"starved": 50, "before": 4}) == {0: 54}
        with broker.client() as c2:   # new connections are accepted again
            assert sum(len(t.partitions) for t in metadata_all(c2).topics) == 54
    finally:
        for s in flood:
            s.close()
        assert broker.stop() == 0
    broker.start()
    try:
        with broker.client() as c:
            assert set(fetch_all(c, {"starved": 50, "before": 4}).values()) == {1}
    finally:
        assert broker.stop() == 0


def _wait_until(cond: object, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)
