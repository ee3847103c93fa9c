"""Kafka Streams 4.4 with ``group.protocol=streams`` (KIP-1071: the broker assigns the tasks through
StreamsGroupHeartbeat) against kafkalite, and against Apache Kafka 4.4 with KAFKALITE_COMPAT_BROKER=kafka.

- one instance of the word count: the broker creates the repartition and changelog topics the topology asks
  for (2 partitions each, from the 2-partition input), the instance runs all four tasks, counts are exact;
- a second instance joins: the tasks are split between the two (each runs some, none twice); the first leaves
  (closed cleanly: it leaves the group with epoch -1): the second runs all four; counts stay exact.

Expectations are computed here from what was produced.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

from test_kafka_streams import (  # the Streams harness (fixtures included) of the classic-protocol tests
    StreamsApp,
    _line,
    apps,
    create_topics,
    produce,
    running,
    stop_cleanly,
    streams_ready,
    tasks_of,
    wait_until,
    word_counts,
)

__all__ = ["apps", "streams_ready"]   # fixtures used by name
ALL = {"0_0", "0_1", "1_0", "1_1"}
PROTOCOL = "group.protocol=streams"


def _want(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for line in lines for w in line.lower().replace(",", " ").replace("!", " ").split()))


def test_streams_protocol_one_instance_then_two(broker: Any, streams_ready: None, tmp_path: Path,
                                                 apps: list[StreamsApp]) -> None:
    bs, app_id = broker.bootstrap, "eco-kip1071"
    create_topics(bs, {"k1071-in": 2, "k1071-out": 2})
    props = ("eco.in=k1071-in", "eco.out=k1071-out", PROTOCOL)
    lines = [_line(i) for i in range(900)]
    produce(bs, "k1071-in", [(f"l{i}", lines[i]) for i in range(300)])
    apps.append(StreamsApp("wordcount", bs, app_id, tmp_path / "state1", tmp_path / "streams1.log", *props))
    one = apps[0]
    wait_until(lambda: running(one) and (tasks_of(one) or (set(), set()))[0] == ALL, "one instance, all tasks",
               one)
    wait_until(lambda: word_counts(bs, "k1071-out") == _want(lines[:300]), "exact counts (one instance)", one)
    from confluent_kafka.admin import AdminClient
    topics = AdminClient({"bootstrap.servers": bs}).list_topics(timeout=30).topics
    assert {t: len(topics[t].partitions) for t in topics if t.startswith(app_id)} == {
        f"{app_id}-words-repartition": 2, f"{app_id}-counts-changelog": 2}

    apps.append(StreamsApp("wordcount", bs, app_id, tmp_path / "state2", tmp_path / "streams2.log", *props))
    two = apps[1]

    def split() -> bool:
        t1, t2 = tasks_of(one), tasks_of(two)
        if t1 is None or t2 is None or not (running(one) and running(two)):
            return False
        return t1[0] | t2[0] == ALL and not t1[0] & t2[0] and bool(t1[0]) and bool(t2[0])

    wait_until(split, "the tasks split between two instances", two)
    produce(bs, "k1071-in", [(f"l{i}", lines[i]) for i in range(300, 600)])
    wait_until(lambda: word_counts(bs, "k1071-out") == _want(lines[:600]), "exact counts (two instances)", two)

    stop_cleanly(one)
    wait_until(lambda: running(two) and (tasks_of(two) or (set(), set()))[0] == ALL,
               "the remaining instance runs every task", two)
    produce(bs, "k1071-in", [(f"l{i}", lines[i]) for i in range(600, 900)])
    wait_until(lambda: word_counts(bs, "k1071-out") == _want(lines), "exact final counts", two)
    assert two.kill(signal.SIGTERM) == 143
