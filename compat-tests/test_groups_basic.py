"""Consumer groups with every client: read all, commit, close, resume exactly; survive restarts.

(1) A group member reads everything, commits and closes; a new member of the same group resumes
    exactly at the committed offsets (and reads nothing twice).
(3) Committed offsets and the group listing survive a broker restart, clean (SIGTERM) and crash
    (SIGKILL).
(5) The time from creating a consumer to its first record, for a new single-member group at the
    client's default settings, is recorded in ``$KAFKALITE_GROUPS_CACHE/startup-times.json``
    (figures, not assertions).
"""
from __future__ import annotations

import json
import signal
import time
import uuid

import pytest
from harness.clients import clients_with
from harness.topics import create_topic
from test_groups_support import (
    ALL_CLIENTS,
    CACHE,
    NEW_GROUP_CLIENTS,
    admin,
    committed,
    group_consume,
    line_driver_group_consume,
    produce,
)

PARTITIONS = 3


def _values(prefix: str, start: int, n: int) -> list[tuple[int, bytes]]:
    return [(i % PARTITIONS, f"{prefix}-{i}".encode()) for i in range(start, start + n)]


def _record_startup(client: str, seconds: float | None, kind: str) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "startup-times.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data.setdefault(client, {})[kind] = seconds
    path.write_text(json.dumps(data, indent=1, sort_keys=True))


def _warm(bootstrap: str, topic: str) -> None:
    """Make the broker create __consumer_offsets (a FindCoordinator for a group) before anything is timed.
    ``committed`` asks until the coordinator answers: Apache Kafka says NOT_COORDINATOR while it creates and
    loads the topic."""
    committed(bootstrap, "warm-up", topic, 1)


@pytest.mark.parametrize("client_name", [*ALL_CLIENTS, "kcat", *NEW_GROUP_CLIENTS])
def test_group_reads_commits_and_resumes(client_name: str, broker, topic: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    produce(bs, topic, _values("a", 0, 30))
    _warm(bs, topic)
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = group_consume(client_name, bs, topic, group, 30)
    assert sorted(first.values) == sorted(v for _, v in _values("a", 0, 30))
    _record_startup(client_name, first.first_s, "new_group_first_record_s")
    assert committed(bs, group, topic, PARTITIONS) == dict.fromkeys(range(PARTITIONS), 10)

    produce(bs, topic, _values("a", 30, 6))
    again = group_consume(client_name, bs, topic, group, 6)
    assert sorted(again.values) == sorted(v for _, v in _values("a", 30, 6))  # nothing read twice
    assert sorted((p, o) for p, o, _ in again.records) == [(p, o) for p in range(PARTITIONS) for o in (10, 11)]
    _record_startup(client_name, again.first_s, "existing_group_first_record_s")
    assert committed(bs, group, topic, PARTITIONS) == dict.fromkeys(range(PARTITIONS), 12)


@pytest.mark.parametrize("client_name", clients_with("group_consume", "kip848"))
def test_consumer_protocol_group_reads_commits_and_resumes(client_name: str, broker, topic: str) -> None:
    """The same with group.protocol=consumer (KIP-848: ConsumerGroupHeartbeat, the broker assigns): a member reads
    everything and commits, a second member of the group resumes exactly at the committed offsets; the group is a
    consumer-protocol group in ListGroups."""
    bs = broker.bootstrap
    create_topic(bs, topic, PARTITIONS)
    produce(bs, topic, _values("k", 0, 30))
    _warm(bs, topic)
    group = f"k-{uuid.uuid4().hex[:8]}"
    cfg = {"group.protocol": "consumer"}
    first = line_driver_group_consume(client_name, bs, topic, group, 30, 60.0, cfg)
    assert sorted(first.values) == sorted(v for _, v in _values("k", 0, 30))
    assert committed(bs, group, topic, PARTITIONS) == dict.fromkeys(range(PARTITIONS), 10)
    adm = admin(bs)   # kept referenced: a collected AdminClient never completes its futures
    listed = {g.group_id: g.type.name for g in adm.list_consumer_groups(request_timeout=30).result(30).valid}
    assert listed.get(group) == "CONSUMER", listed

    produce(bs, topic, _values("k", 30, 6))
    again = line_driver_group_consume(client_name, bs, topic, group, 6, 60.0, cfg)
    assert sorted((p, o) for p, o, _ in again.records) == [(p, o) for p in range(PARTITIONS) for o in (10, 11)]
    assert committed(bs, group, topic, PARTITIONS) == dict.fromkeys(range(PARTITIONS), 12)


@pytest.mark.parametrize("client_name", [*ALL_CLIENTS, *NEW_GROUP_CLIENTS])
def test_offsets_and_groups_survive_restarts(client_name: str, broker_factory, topic: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean restart (SIGTERM), then a crash (SIGKILL): each time the group is still listed, its
    committed offsets are intact and a new member resumes exactly there."""
    # storage recovers all 50 __consumer_offsets partitions after a crash, which can take longer
    # than the harness's default 30 s readiness wait on a loaded machine
    import harness.broker
    from test_groups_support import admin

    monkeypatch.setattr(harness.broker, "READY_TIMEOUT_S", max(harness.broker.READY_TIMEOUT_S, 180.0))
    b = broker_factory()
    create_topic(b.bootstrap, topic, PARTITIONS)
    produce(b.bootstrap, topic, _values("r", 0, 12))
    group = f"r-{uuid.uuid4().hex[:8]}"
    got = group_consume(client_name, b.bootstrap, topic, group, 12)
    assert len(got.records) == 12
    total = 12
    for sig in (signal.SIGTERM, signal.SIGKILL):
        b.restart(sig)
        adm = admin(b.bootstrap)
        deadline = time.monotonic() + 30  # ListGroups says COORDINATOR_LOAD_IN_PROGRESS while loading
        while group not in {g.group_id for g in adm.list_consumer_groups().result(30).valid}:
            assert time.monotonic() < deadline, f"group not listed after {sig!r}"
            time.sleep(0.1)
        assert committed(b.bootstrap, group, topic, PARTITIONS) == dict.fromkeys(range(PARTITIONS), total // 3)
        produce(b.bootstrap, topic, _values("r", total, 3))
        again = group_consume(client_name, b.bootstrap, topic, group, 3)
        assert sorted(again.values) == sorted(v for _, v in _values("r", total, 3))
        total += 3
